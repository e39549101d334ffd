/**
 * The drain's vocabulary and its ports.
 *
 * Glossary
 * - partition: one Kafka topic partition, named `topic~partition` in Firestore.
 * - checkpoint: the partition's `nextOffset`, the first offset not yet durable. Everything below it is in
 *   the target table or acknowledged by the dead-letter topic. Only ever moves forward (G6).
 * - lease: the right of one run (the lease owner) to drain a partition until `leaseExpiresAt`.
 * - epoch: a counter bumped each time a lease is acquired. Every checkpoint commit names the epoch it was
 *   granted under; a commit from an older epoch is refused (a fencing token, G3).
 * - batch: consecutive records of one partition, read, written and committed together.
 * - dead letter: a record that cannot become a row (bad JSON, rejected by BigQuery, ...), published with
 *   its reason and its origin to the dead-letter topic instead of the table.
 * - episode: the time an alert condition holds, from `open` to `resolved`; one alert each way.
 * - run: one bounded drain by one Cloud Run task (or one CLI invocation).
 * - flush: the batches of several partitions written to BigQuery together (one MERGE, one stream commit).
 * - stream: a Storage Write API PENDING stream; its rows become visible all at once, when it is committed,
 *   and a stream commits at most once.
 * - intent: a partition's share of a flush whose streams are finalized but maybe not committed, recorded
 *   in the partition document before the commit, so that whoever holds the lease next can finish it.
 */

import type { RowShape } from '../records/records.js';
import type { Alert, LivenessState } from './episodes.js';

export interface PartitionRef {
  readonly topic: string;
  readonly partition: number;
}

/** Offsets are carried as bigint-safe decimal strings by Kafka; we use numbers (safe up to 2^53). */
export interface KafkaRecord extends PartitionRef {
  readonly offset: number;
  /** Milliseconds since the epoch, as Kafka stamped the record. */
  readonly timestamp: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: Readonly<Record<string, string>>;
  /** The headers as Kafka carries them: in order, repeated keys kept, values as bytes (the headers column). */
  readonly rawHeaders?: readonly { readonly key: string; readonly value: Buffer | null }[];
}

/** What one fetch from the source returns: records of one partition and where reading goes on from. */
export interface FetchedBatch extends PartitionRef {
  /** The offset this fetch was made from: where the reader stood for the partition. */
  readonly fromOffset: number;
  readonly records: readonly KafkaRecord[];
  /**
   * The offset after this batch. It can be past the last record's offset + 1 when Kafka skips offsets
   * (compaction, transaction markers).
   */
  readonly nextOffset: number;
}

export interface Watermarks extends PartitionRef {
  /** The earliest offset still in the log. */
  readonly logStart: number;
  /** The offset the next produced record will get (the high watermark). */
  readonly end: number;
}

export interface Position extends PartitionRef {
  readonly offset: number;
}

/** The source port: Kafka. */
export interface Source {
  watermarks(topics: readonly string[]): Promise<Watermarks[]>;
  /** Per partition, the first offset whose timestamp is at or after `timestamp` (none: the partition's end). */
  offsetsAt(topic: string, timestamp: number): Promise<Map<number, number>>;
  /** Starts reading exactly these partitions from exactly these offsets. */
  open(positions: readonly Position[]): Promise<SourceReader>;
}

export interface SourceReader {
  /** The next batch of any open partition; undefined once `signal` aborts or the reader is closed. */
  next(signal: AbortSignal): Promise<FetchedBatch | undefined>;
  /** This partition needs no more records in this run. */
  finish(partition: PartitionRef): void;
  close(): Promise<void>;
}

/** Which optional `_kafka_*` metadata columns a route's table has. */
export interface MetadataColumns {
  /** `_kafka_headers`: every header, in order, repeated keys too, its value as bytes. */
  readonly headers: boolean;
  /** `_kafka_key_text`: the key decoded as UTF-8 where it is valid UTF-8, else NULL. */
  readonly keyText: boolean;
}

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A row for the target table: user columns plus the `_kafka_*` metadata columns. */
export type Row = Record<string, JsonValue>;

export interface RowToWrite {
  /** `topic:partition:offset`: the insertId and the key a MERGE matches on. */
  readonly rowKey: string;
  readonly record: KafkaRecord;
  readonly row: Row;
}

/**
 * A row made straight from its record's JSON text (insert-all, merge): the JSON text of its object, the
 * metadata columns in it (see sinks/json-transcoder.ts `compileRowText`).
 */
export interface TextRow {
  readonly rowKey: string;
  readonly record: KafkaRecord;
  readonly text: string;
}

/** A row to insert as JSON: an object, or its text. */
export type RowToInsert = RowToWrite | TextRow;

/**
 * A row in the form a stream appends (for BigQuery, its protocol buffer bytes), with the record it came
 * from (a row BigQuery refuses becomes that record's dead letter).
 */
export interface EncodedRow {
  readonly record: KafkaRecord;
  readonly bytes: Uint8Array;
}

/**
 * One batch's rows encoded as they are classified, into one buffer (each row's bytes a view of it): a
 * row's objects die as soon as it is encoded, young, where the garbage collector's work is cheap, and a
 * batch waiting for its flush holds bytes.
 */
export interface BatchEncoding {
  add(row: RowToWrite): void;
  /**
   * Where the encoding was started with a shape: writes a record's row straight from its JSON text when
   * the record is of the common kind, and says true; false (nothing written) sends the record the general
   * way (decoded, validated, `add`ed or made a dead letter), whose fate it would have had all the same.
   */
  readonly addRecord?: (record: KafkaRecord, ingestedAt: Date) => boolean;
  /** The rows added, in order. */
  finish(): EncodedRow[];
}

export type RowResult = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** The sink port: BigQuery. Writes are idempotent by rowKey; the result has one entry per row, in order. */
export interface Sink {
  write(rows: readonly RowToInsert[], signal?: AbortSignal): Promise<RowResult[]>;
}

export type StreamState = 'committed' | 'pending' | 'gone';

/** A flush's streams, finalized and not yet committed, and the rows BigQuery refused (as dead letters). */
export interface Prepared {
  readonly streams: string[];
  readonly rejected: DeadLetter[];
}

/**
 * The sink of `storage-write` mode: rows become visible only when their streams commit, all at once, and
 * a stream commits at most once. The drain records its intent between `prepare` and `commit`.
 */
export interface StreamSink {
  /**
   * Appends the rows to a new stream of the target table and the dead letters to one of the error table,
   * and finalizes them: nothing is visible yet. A row BigQuery refuses is not appended: it becomes a
   * `rejected` dead letter with BigQuery's message, appended to the error table's stream with the others.
   * Returns the streams (none when there is nothing to write) and the rows refused.
   */
  prepare(rows: readonly EncodedRow[], letters: readonly DeadLetter[], ingestedAt: Date): Promise<Prepared>;
  /**
   * Encodes a batch's rows in the form `prepare` appends; with the route's shape, its JSON records can be
   * written straight from their text (`addRecord`). It needs the target's schema: a target not ready yet
   * fails here (transiently).
   */
  startEncoding(shape?: RowShape): Promise<BatchEncoding>;
  /** Commits the streams; a stream already committed (by whoever found it first) counts as committed. */
  commit(streams: readonly string[]): Promise<void>;
  /** Where a recorded stream stands: committed, finalized and still committable, or gone (expired). */
  streamState(stream: string): Promise<StreamState>;
  /** How many offsets of [from, to) of the partition the target and error tables hold (recovery of a gone stream). */
  heldInRange(
    partition: PartitionRef,
    from: number,
    to: number,
  ): Promise<{ rows: number; deadLetters: number }>;
  /** Which offsets of [from, to) of the partition the target and error tables hold (a replayed range). */
  heldOffsets(partition: PartitionRef, from: number, to: number): Promise<HeldOffsets>;
}

/**
 * A replayed range's offsets the tables hold, each with the Kafka timestamp of what is held there: a
 * record is the one held only if its timestamp matches too (a topic deleted and recreated reuses offsets).
 */
export interface HeldOffsets {
  readonly rows: ReadonlyMap<number, number>;
  readonly deadLetters: ReadonlyMap<number, number>;
}

export type DeadLetterKind = 'decode' | 'schema' | 'rule' | 'rejected' | 'oversize';

export interface DeadLetter {
  readonly record: KafkaRecord;
  readonly kind: DeadLetterKind;
  readonly message: string;
}

/**
 * merge mode: the error table, written by the drain before the checkpoint moves, idempotent by origin (a
 * letter written again is not there twice). Resolves when every letter is durable in it.
 */
export interface ErrorTable {
  write(letters: readonly DeadLetter[], ingestedAt: Date, signal?: AbortSignal): Promise<void>;
}

/** The dead-letter port: resolves only when every letter is acknowledged by Pub/Sub. */
export interface DeadLetters {
  publish(letters: readonly DeadLetter[]): Promise<void>;
}

/** A lease held on one partition, with the epoch that fences its commits. */
export interface Lease extends PartitionRef {
  readonly owner: string;
  readonly epoch: number;
  /** The checkpoint at the moment the lease was granted; null when the partition has none yet. */
  readonly nextOffset: number | null;
  readonly expiresAt: number;
  /** An operator paused the partition: runs leave it alone. */
  readonly paused?: boolean;
  /** Alert episodes and what was last seen of the partition, as the previous run left them. */
  readonly liveness?: LivenessState;
  /** When the checkpoint last moved. */
  readonly lastProgressAt?: number | null;
  /** A flush recorded but maybe not committed (storage-write mode): finish it before anything else. */
  readonly intent?: CommitIntent | null;
  /**
   * An operator moved the checkpoint back (seek) from here: offsets below it were written before, and in
   * storage-write mode those the tables still hold are not written again.
   */
  readonly replayUntil?: number | null;
}

/** A partition's share of a flush, recorded before its streams are committed (storage-write mode). */
export interface CommitIntent {
  /** Every stream of the flush (the target table's, the error table's): all commit, or none. */
  readonly streams: readonly string[];
  readonly fromOffset: number;
  readonly nextOffset: number;
  readonly records: number;
  readonly rows: number;
  readonly deadLetters: number;
  readonly tombstones: number;
  readonly lastRecordTimestamp: number | null;
  /** A replayed range's offsets the tables already held, counted in `rows`/`deadLetters` but not written. */
  readonly alreadyHeld?: { readonly rows: number; readonly deadLetters: number };
}

/** One partition's batch, ready to write: its records and the range its commit moves the checkpoint over. */
export interface BatchToWrite {
  readonly lease: Lease;
  readonly fromOffset: number;
  readonly nextOffset: number;
  readonly records: readonly KafkaRecord[];
}

/** What a writer made durable of a batch: the drain commits the checkpoint with these counts. */
export interface WrittenBatch {
  readonly rows: number;
  readonly deadLetters: number;
  /** Tombstones skipped (TOMBSTONES=skip): nothing to write, counted so that every offset is accounted for. */
  readonly tombstones: number;
  /** storage-write mode: the lease as the recorded intent left it, and the streams that made it durable. */
  readonly lease?: Lease;
  readonly streams?: readonly string[];
  /** storage-write mode, a replayed range: of `rows`/`deadLetters`, those the tables already held. */
  readonly alreadyHeld?: { readonly rows: number; readonly deadLetters: number };
}

/** What an earlier run left of a partition, finished: a range to commit, or where to start reading again. */
export interface Recovery {
  readonly commit?: CommitIntent;
  readonly startAt?: number;
}

/**
 * The writer port: one per route, one implementation per write mode (writers/), each owning its order of
 * rows, error table, dead letters, intents and commits of streams. The drain hands it batches in offset
 * order per partition and moves the checkpoint only once `write` has resolved.
 */
export interface Writer {
  /** A partition just leased, before anything is read: finishes what an earlier run left (an intent). */
  recover(lease: Lease): Promise<Recovery>;
  /** The partition is about to be read from `from` up to `end` (a replayed range is looked up here). */
  begin(lease: Lease, from: number, end: number): Promise<void>;
  /** Resolves once the batch's rows and dead letters are durable; throws, and nothing is committed, if not. */
  write(batch: BatchToWrite, signal: AbortSignal): Promise<WrittenBatch>;
}

/** Who moved a checkpoint or paused a partition on purpose, and why (kept under `audit/`). */
export interface OperatorAction {
  readonly actor: string;
  readonly reason: string;
  readonly forced?: boolean;
}

export interface CheckpointCommit {
  readonly lease: Lease;
  /** Where the checkpoint was before this batch. */
  readonly fromOffset: number;
  readonly nextOffset: number;
  /** Records in [fromOffset, nextOffset); the rest of the range are offsets Kafka skipped (compaction, markers). */
  readonly records: number;
  readonly rows: number;
  readonly deadLetters: number;
  /** Records with a null value skipped by TOMBSTONES=skip (counted among `records`). */
  readonly tombstones?: number;
  readonly lastRecordTimestamp: number | null;
  /** The range was lost to retention before it was read (RETENTION_GAP_POLICY=skip), not skipped by Kafka. */
  readonly lost?: boolean;
  /** The Storage Write API streams that made the range durable (storage-write mode), for the ledger. */
  readonly streams?: readonly string[];
}

/** A partition's checkpoint and lease as stored, read without taking it (sharing work between tasks). */
export interface PartitionState extends PartitionRef {
  readonly nextOffset: number | null;
  readonly leaseOwner: string | null;
  /** Epoch milliseconds; 0 when never leased. */
  readonly leaseExpiresAt: number;
  readonly paused: boolean;
  /** Changes with every write to the partition (a commit, a renewal): a live holder moves it. */
  readonly version: number;
}

/** The checkpoints port: Firestore. */
export interface Checkpoints {
  /** The partitions' stored states, read in a few round trips; a partition never seen has none. */
  peek(partitions: readonly PartitionRef[]): Promise<PartitionState[]>;
  /** Undefined when another owner holds an unexpired lease. */
  acquire(partition: PartitionRef, owner: string, ttlMs: number): Promise<Lease | undefined>;
  /** Extends the lease; throws a FencedError when it was lost. */
  renew(lease: Lease, ttlMs: number): Promise<Lease>;
  /** Advances the checkpoint (and extends the lease); throws a FencedError when the lease was lost. */
  commit(commit: CheckpointCommit, ttlMs: number): Promise<Lease>;
  /**
   * Records a flush's intent in every affected partition document in one atomic, fenced write (all or
   * none); each must still be held and stand at its intent's `fromOffset`. Returns the leases, in order.
   */
  recordIntents(intents: readonly { lease: Lease; intent: CommitIntent }[], ttlMs: number): Promise<Lease[]>;
  /** Gives the lease up, keeping the partition's liveness state for the next run when given. */
  release(lease: Lease, liveness?: LivenessState): Promise<void>;
  recordRun(summary: RunSummary): Promise<void>;
}

/** The alerts port: Pub/Sub. Resolves when the alert is acknowledged. */
export interface Alerts {
  publish(alert: Alert): Promise<void>;
}

/** What operators do to checkpoints on purpose (the CLI's seek, pause, resume); not the drain's business. */
export interface CheckpointControls {
  /** Moves the checkpoint on purpose, in either direction, under the lease, with an audit record. */
  reset(lease: Lease, toOffset: number, action: OperatorAction): Promise<void>;
  /** Pauses or resumes a partition, with an audit record. */
  setPaused(partition: PartitionRef, paused: boolean, action: OperatorAction): Promise<void>;
}

/**
 * Why a run ended: it caught up; its budget ran out; a signal; `stalled`: it got through all it could but
 * left partitions that could not move (a recorded flush it could not finish), each saying why in its
 * `waiting`; or an error (exit 1).
 */
export type StopReason = 'caught_up' | 'budget' | 'stalled' | 'signal' | 'error';

export interface PartitionSummary extends PartitionRef {
  from: number | null;
  to: number | null;
  /** Records left between `to` and the end offset seen at start (or the latest seen). */
  lag: number | null;
  read: number;
  rowsWritten: number;
  deadLettered: number;
  /** Tombstones skipped (TOMBSTONES=skip); absent when none. */
  tombstonesSkipped?: number;
  /** Why this partition was not (fully) drained, if it was not. */
  skipped?: 'leased_elsewhere' | 'fenced' | 'error' | 'paused';
  /** Why the partition cannot move until something changes (its `stalled` alert opens on schedule). */
  waiting?: string;
  /** Another task's partition, taken after this task's own share because its records waited. */
  shared?: true;
  /** The table it is routed to (`dataset.table`), in the summary of a pipeline with several routes. */
  table?: string;
}

/** One table's part of a run (a pipeline with several routes). */
export interface TableSummary {
  table: string;
  stopReason: StopReason;
  recordsRead: number;
  rowsWritten: number;
  deadLettered: number;
  lag: number;
  partitionCount: number;
  error?: string;
}

export interface RunSummary {
  event: 'run_summary';
  pipeline: string;
  runId: string;
  execution: string;
  taskIndex: number;
  taskCount: number;
  stopReason: StopReason;
  recordsRead: number;
  rowsWritten: number;
  deadLettered: number;
  /** Records with a null value skipped under TOMBSTONES=skip: read, accounted in the ledger, not written. */
  tombstonesSkipped: number;
  alerts: number;
  commits: number;
  durationMs: number;
  /** Records left undrained across this run's partitions (a log-based metric reads this). */
  lag: number;
  /** Partitions this run looked at (leased or tried to). */
  partitionCount: number;
  /**
   * In the logged line, the partitions worth a look (all of them up to 50; see run-summary.ts); in the
   * run's Firestore document, all of them.
   */
  partitions: PartitionSummary[];
  /** Partitions left out of the logged line (nothing to see: caught up, no error). */
  partitionsOmitted?: number;
  /** Per table, with several routes. */
  tables?: TableSummary[];
  error?: string;
}
