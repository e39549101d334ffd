/**
 * Splits items, in order, into chunks of at most `maxCount` items and about `maxBytes` (an item larger
 * than `maxBytes` gets a chunk of its own). Batches of records and insertAll requests are both cut so.
 */
export function chunksOf<T>(
  items: readonly T[],
  maxCount: number,
  maxBytes: number,
  sizeOf: (item: T) => number,
): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = sizeOf(item);
    if (current.length > 0 && (current.length >= maxCount || bytes + size > maxBytes)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
