/**
 * What a run's summary line carries: totals always, and per partition only what needs a look, so that the
 * line stays far below Cloud Logging's 256 KB per entry at any partition count. The full per-partition
 * detail goes to the run's document in Firestore (`pipelines/{id}/runs/{runId}`).
 */
import type { PartitionSummary, RunSummary } from './types.js';

/** Up to this many partitions a summary lists them all (a few KB); beyond, the ones worth a look. */
export const partitionsListed = 50;

/** Errors and fencing first, then the largest lags, then anything skipped; at most `max`. */
export function partitionsWorthALook(partitions: readonly PartitionSummary[], max = partitionsListed) {
  if (partitions.length <= max) return { listed: [...partitions], omitted: 0 };
  const rank = (p: PartitionSummary): number =>
    p.skipped === 'error' || p.skipped === 'fenced'
      ? 0
      : (p.lag ?? 0) > 0
        ? 1
        : p.skipped !== undefined
          ? 2
          : 3;
  const listed = [...partitions]
    .sort((a, b) => rank(a) - rank(b) || (b.lag ?? 0) - (a.lag ?? 0))
    .filter((p) => rank(p) < 3)
    .slice(0, max);
  return { listed, omitted: partitions.length - listed.length };
}

/** The line as logged: the same totals as the full summary, with the partitions trimmed as above. */
export function summaryLine(summary: RunSummary): RunSummary {
  const { listed, omitted } = partitionsWorthALook(summary.partitions);
  return { ...summary, partitions: listed, ...(omitted > 0 ? { partitionsOmitted: omitted } : {}) };
}
