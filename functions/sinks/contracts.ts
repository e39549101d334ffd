import type { ValueFormat } from '../formats/value-format.js';
/** The writers' contracts with their BigQuery sinks: encoded rows, Storage Write streams, the error table. */
import type { DeadLetter, KafkaRecord, PartitionRef, RowToWrite } from '../kernel/records.js';
import type { RowShape } from '../records/records.js';

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
   * written straight from their text (`addRecord`), and with a value format that has a compiled path
   * (`directRows`), its records straight from their bytes. It needs the target's schema: a target not ready yet
   * fails here (transiently).
   */
  startEncoding(shape?: RowShape, format?: ValueFormat): Promise<BatchEncoding>;
  /**
   * A leased partition has records to read: what the first flush needs is made and connected now (the
   * client, its protos, its channel), not in a run that finds nothing. Best effort: never fails.
   */
  warmUp(): Promise<void>;
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

/**
 * merge mode: the error table, written by the drain before the checkpoint moves, idempotent by origin (a
 * letter written again is not there twice). Resolves when every letter is durable in it.
 */
export interface ErrorTable {
  write(letters: readonly DeadLetter[], ingestedAt: Date, signal?: AbortSignal): Promise<void>;
}
