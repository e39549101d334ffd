/**
 * Runs `work` for every item with at most `limit` in flight: leasing, releasing and alert evaluation of
 * a thousand partitions must not be a thousand round trips one after another, nor a thousand at once.
 * Every item is attempted; the first failure is thrown once all have settled.
 */
export async function forEachLimited<T>(
  items: Iterable<T>,
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  const queue = [...items];
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    for (let item = queue.shift(); item !== undefined || queue.length > 0; item = queue.shift()) {
      try {
        await work(item as T);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, queue.length)) }, worker));
  if (failure !== undefined) throw failure.error;
}
