/**
 * The drain's vocabulary: records, positions, rows and dead letters (the ports are in ports.ts).
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

export interface PartitionRef {
  readonly topic: string;
  readonly partition: number;
}

/** A partition's name: `topic~partition`, as its Firestore document and the logs name it. */
export function partitionId(ref: PartitionRef): string {
  return `${ref.topic}~${ref.partition}`;
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
 * A row made straight from its record's bytes (insert-all, merge, load): the JSON text of its object as
 * UTF-8, the metadata columns in it (see encoders/row-text.ts `compileRowText`). Bytes, never a string: a
 * row's text is copied from the record and into the request, not decoded and encoded again.
 */
export interface TextRow {
  readonly rowKey: string;
  readonly record: KafkaRecord;
  readonly json: Buffer;
}

/** A row to insert as JSON: an object, or its text. */
export type RowToInsert = RowToWrite | TextRow;

export type RowResult = { readonly ok: true } | { readonly ok: false; readonly reason: string };

export type DeadLetterKind = 'decode' | 'schema' | 'rule' | 'transform' | 'rejected' | 'oversize';

export interface DeadLetter {
  readonly record: KafkaRecord;
  readonly kind: DeadLetterKind;
  readonly message: string;
  /** UNKNOWN_FIELDS=evolve: the record's fields the table lacks (a `schema` letter unless columns are added). */
  readonly newFields?: Readonly<Record<string, JsonValue>>;
}
