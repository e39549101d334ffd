import type { Alert, LivenessState } from './liveness.js';
import type {
  DeadLetter,
  FetchedBatch,
  KafkaRecord,
  PartitionRef,
  Position,
  RowResult,
  RowToInsert,
  Watermarks,
} from './records.js';
import type { RunSummary } from './summary.js';
import type { UndrainedRange } from './undrained.js';

/** The drain's ports: what it reads from, writes to and keeps its state in. Adapters implement them. */

/** The source port: Kafka. */
export interface Source {
  watermarks(topics: readonly string[]): Promise<Watermarks[]>;
  /** Per partition, the first offset whose timestamp is at or after `timestamp` (none: the partition's end). */
  offsetsAt(topic: string, timestamp: number): Promise<Map<number, number>>;
  /** Starts reading exactly these partitions from exactly these offsets. */
  open(positions: readonly Position[]): Promise<SourceReader>;
  /**
   * Per partition (`topic~partition`), the Kafka timestamp of the first record at or after its position:
   * null when none waits there, absent when it could not be read (freshness: the age of what waits).
   */
  headTimestamps(positions: readonly Position[]): Promise<Map<string, number | null>>;
}

export interface SourceReader {
  /** The next batch of any open partition; undefined once `signal` aborts or the reader is closed. */
  next(signal: AbortSignal): Promise<FetchedBatch | undefined>;
  /** This partition needs no more records in this run. */
  finish(partition: PartitionRef): void;
  close(): Promise<void>;
}

/** The sink port: BigQuery. Writes are idempotent by rowKey; the result has one entry per row, in order. */
export interface Sink {
  write(rows: readonly RowToInsert[], signal?: AbortSignal): Promise<RowResult[]>;
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
  /** Ranges an operator's forward seek passed over (kernel/undrained.ts): no replay when drained later. */
  readonly undrained?: readonly UndrainedRange[];
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
  /** Records the route's transform dropped (absent when none). */
  readonly filtered?: number;
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
  /** Records the route's transform dropped: nothing to write, counted like tombstones (absent when none). */
  readonly filtered?: number;
  /** storage-write mode: the lease as the recorded intent left it, and the streams that made it durable. */
  readonly lease?: Lease;
  readonly streams?: readonly string[];
  /** storage-write mode, a replayed range: of `rows`/`deadLetters`, those the tables already held. */
  readonly alreadyHeld?: { readonly rows: number; readonly deadLetters: number };
  /**
   * The batch is taken but not yet durable (a load that spans the run: issue #67): the partition reads on,
   * and its checkpoint moves only when the writer's `settle` says the batches it took are durable.
   */
  readonly deferred?: true;
}

/** What an earlier run left of a partition, finished: a range to commit, or where to start reading again. */
export interface Recovery {
  readonly commit?: CommitIntent;
  readonly startAt?: number;
  /**
   * The tables hold records of the partition up to here that the checkpoint has not passed (a load half
   * done: some tables' jobs done, others never made). The lease phase commits it into the partition's
   * `replayUntil` with the intent cleared, so every later run reads the range as a replay: what the tables
   * hold is counted, not written again, however often its recovery is cut short.
   */
  readonly heldUntil?: number;
}

/**
 * The writer port: one per route, one implementation per write mode (writers/), each owning its order of
 * rows, error table, dead letters, intents and commits of streams. The drain hands it batches in offset
 * order per partition and moves the checkpoint only once `write` has resolved.
 */
export interface Writer {
  /**
   * A partition just leased, before anything is read: finishes what an earlier run left (an intent).
   * `signal`, the run's stop: a wait for what the earlier run left running ends there (the partition waits).
   */
  recover(lease: Lease, signal?: AbortSignal): Promise<Recovery>;
  /** The partition is about to be read from `from` up to `end` (a replayed range is looked up here). */
  begin(lease: Lease, from: number, end: number): Promise<void>;
  /** Resolves once the batch's rows and dead letters are durable; throws, and nothing is committed, if not. */
  write(batch: BatchToWrite, signal: AbortSignal): Promise<WrittenBatch>;
  /**
   * A writer that defers (`WrittenBatch.deferred`): makes durable what it took, once the run has read what
   * it will; `hard`: the run's hard stop (nothing may be left half sent), `budget`: its budget (a wait for
   * durability ends there, what is not durable yet left to the next run's `recover`). Resolves with, per partition (`partitionId`), the lease to commit its taken batches under; a
   * partition left out is not durable, and its batches are read again by the next run.
   */
  settle?(hard: AbortSignal, budget: AbortSignal): Promise<ReadonlyMap<string, Lease>>;
}

/** Who moved a checkpoint or paused a partition on purpose, and why (kept under `audit/`). */
export interface OperatorAction {
  readonly actor: string;
  readonly reason: string;
  readonly forced?: boolean;
}

export interface CheckpointCommit {
  readonly lease: Lease;
  /** The tables hold records up to here (Recovery.heldUntil): the partition's `replayUntil` is raised to it. */
  readonly heldUntil?: number;
  /** Where the checkpoint was before this batch. */
  readonly fromOffset: number;
  readonly nextOffset: number;
  /** Records in [fromOffset, nextOffset); the rest of the range are offsets Kafka skipped (compaction, markers). */
  readonly records: number;
  readonly rows: number;
  readonly deadLetters: number;
  /** Records with a null value skipped by TOMBSTONES=skip (counted among `records`). */
  readonly tombstones?: number;
  /** Records the route's transform dropped (counted among `records`). */
  readonly filtered?: number;
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
