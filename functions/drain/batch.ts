import type { KafkaRecord } from '../kernel/records.js';

/**
 * What a batch of a partition (fetches joined up to the batch limits: batch-fill.ts) becomes: the records
 * between the checkpoint (`position`) and the end seen at start, with the offset their commit moves the
 * checkpoint to (past the offsets after the last record that hold none: transaction markers, compaction);
 * or, when it held no such record, only how far the checkpoint may move past the empty offsets.
 */
export function planFetched(
  fetched: { readonly records: readonly KafkaRecord[]; readonly nextOffset: number },
  position: number,
  end: number,
): { batch?: { records: KafkaRecord[]; nextOffset: number }; skipTo?: number } {
  const records = fetched.records.filter((r) => r.offset >= position && r.offset < end);
  const endOfFetch = Math.min(fetched.nextOffset, end);
  const last = records[records.length - 1];
  if (last === undefined) return endOfFetch > position ? { skipTo: endOfFetch } : {};
  return { batch: { records, nextOffset: Math.max(last.offset + 1, endOfFetch) } };
}
