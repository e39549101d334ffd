import { chunksOf } from './chunks.js';
import { isDeadLetter, type RowShape, recordSize, toRow, userColumns } from './records.js';
import type { Rules } from './rules.js';
import type { DeadLetter, DeadLetters, ErrorTable, KafkaRecord, Lease, RowToWrite, Sink } from './types.js';

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

export interface BatchPolicy {
  readonly ingestedAt: Date;
  readonly signal?: AbortSignal;
  /** Validation against the table schema; without it rows go to BigQuery as they are. */
  readonly shape?: RowShape;
  /** A record with a null value: compacted topics carry them by design (skip), elsewhere a bug (dead-letter). */
  readonly tombstones: 'skip' | 'dead-letter';
}

/**
 * One batch's way to durability: decode every record, write the rows, dead-letter what could not be
 * decoded or was rejected (into the error table first, in merge mode), and resolve only when all of it is
 * durable. Throws (and so leaves the checkpoint where it was) when the sink, the error table or the
 * dead-letter topic fails.
 */
export async function writeBatch(
  records: readonly KafkaRecord[],
  ports: {
    sink: Sink;
    deadLetters: DeadLetters;
    errorTable?: ErrorTable;
    rules?: Rules;
    fault?: (point: string) => void;
  },
  policy: BatchPolicy,
): Promise<WrittenBatch> {
  const { rows, letters, tombstones } = await classifyRecords(records, ports, policy);
  let written = 0;
  if (rows.length > 0) {
    const results = await ports.sink.write(rows, policy.signal);
    results.forEach((result, i) => {
      if (result.ok) written++;
      else letters.push({ record: rows[i]!.record, kind: 'rejected', message: result.reason });
    });
  }
  ports.fault?.('after-write');
  if (ports.errorTable !== undefined && letters.length > 0) {
    await ports.errorTable.write(letters, policy.ingestedAt, policy.signal);
    ports.fault?.('after-error-table');
  }
  await publishDeadLetters(letters, ports.deadLetters);
  ports.fault?.('after-dead-letter-before-commit');
  return { rows: written, deadLetters: letters.length, tombstones };
}

/** Each record's fate: a row, a dead letter with its reason, or (TOMBSTONES=skip) a skipped tombstone. */
export async function classifyRecords(
  records: readonly KafkaRecord[],
  ports: { rules?: Rules },
  policy: BatchPolicy,
): Promise<{ rows: RowToWrite[]; letters: DeadLetter[]; tombstones: number }> {
  const rows: RowToWrite[] = [];
  const letters: DeadLetter[] = [];
  let tombstones = 0;
  for (const record of records) {
    if (record.value === null && policy.tombstones === 'skip') {
      tombstones++;
      continue;
    }
    const result = toRow(record, policy.ingestedAt, policy.shape);
    if (isDeadLetter(result)) {
      letters.push(result);
      continue;
    }
    const broken =
      ports.rules === undefined ? undefined : await ports.rules.check(userColumns(result.row), record);
    if (broken === undefined) rows.push(result);
    else letters.push({ record, kind: 'rule', message: broken });
  }
  return { rows, letters, tombstones };
}

/** Publishes dead letters in offset order (as a reader of the topic saw them in Kafka); resolves when acknowledged. */
export async function publishDeadLetters(letters: DeadLetter[], deadLetters: DeadLetters): Promise<void> {
  if (letters.length === 0) return;
  letters.sort((a, b) => a.record.offset - b.record.offset);
  await deadLetters.publish(letters);
}

/**
 * What one fetch of a partition becomes: the records between the checkpoint (`position`) and the end seen
 * at start, in batches, each with the offset its commit moves the checkpoint to (the last batch also
 * covers offsets after its last record that hold none: transaction markers, compaction); or, when the
 * fetch held no such record, only how far the checkpoint may move past the empty offsets.
 */
export function planFetched(
  fetched: { readonly records: readonly KafkaRecord[]; readonly nextOffset: number },
  position: number,
  end: number,
  limits: { readonly maxRecords: number; readonly maxBytes: number },
): { batches: { records: KafkaRecord[]; nextOffset: number }[]; skipTo?: number } {
  const records = fetched.records.filter((r) => r.offset >= position && r.offset < end);
  const split = splitBatches(records, limits.maxRecords, limits.maxBytes);
  const endOfFetch = Math.min(fetched.nextOffset, end);
  if (split.length === 0) return { batches: [], ...(endOfFetch > position ? { skipTo: endOfFetch } : {}) };
  return {
    batches: split.map((batch, i) => {
      const last = batch[batch.length - 1]!.offset + 1;
      return { records: batch, nextOffset: i === split.length - 1 ? Math.max(last, endOfFetch) : last };
    }),
  };
}

/** Splits a partition's records into batches of at most `maxRecords` records and about `maxBytes`. */
export function splitBatches(
  records: readonly KafkaRecord[],
  maxRecords: number,
  maxBytes: number,
): KafkaRecord[][] {
  return chunksOf(records, maxRecords, maxBytes, recordSize);
}
