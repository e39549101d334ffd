import { chunksOf } from '../kernel/chunks.js';
import type { KafkaRecord } from '../kernel/records.js';
import { recordSize } from '../records/records.js';

/**
 * What a fetch of a partition (or consecutive fetches joined: read-phase.ts) becomes: the records between
 * the checkpoint (`position`) and the end seen at start, in batches, each with the offset its commit moves
 * the checkpoint to (the last batch also covers offsets after its last record that hold none: transaction
 * markers, compaction); or, when the fetch held no such record, only how far the checkpoint may move past
 * the empty offsets.
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
