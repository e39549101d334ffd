/**
 * What a run's summary line carries: totals always, and per partition only what needs a look, so that the
 * line stays far below Cloud Logging's 256 KB per entry at any partition count. The full per-partition
 * detail goes to the run's document in Firestore (`pipelines/{id}/runs/{runId}`).
 */
import type { PartitionSummary, RunSummary, StopReason } from '../kernel/summary.js';

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

const stopRank: Record<StopReason, number> = { error: 4, signal: 3, stalled: 2, budget: 1, caught_up: 0 };

/**
 * The run's summary from its routes' drains (one per table): totals summed, partitions together, each
 * marked with its table, a line per table, and the gravest stop reason (an error in one table is the
 * run's: exit 1, the others' partitions drained all the same).
 */
export function mergeRunSummaries(
  parts: readonly { table: string; summary: RunSummary }[],
  head: Pick<RunSummary, 'pipeline' | 'runId' | 'execution' | 'taskIndex' | 'taskCount' | 'durationMs'>,
): RunSummary {
  const sum = (pick: (s: RunSummary) => number) => parts.reduce((total, p) => total + pick(p.summary), 0);
  const errors = parts.flatMap((p) =>
    p.summary.error === undefined ? [] : [`${p.table}: ${p.summary.error}`],
  );
  const stopReason = parts.reduce<StopReason>(
    (worst, p) => (stopRank[p.summary.stopReason] > stopRank[worst] ? p.summary.stopReason : worst),
    'caught_up',
  );
  return {
    event: 'run_summary',
    ...head,
    stopReason,
    recordsRead: sum((s) => s.recordsRead),
    rowsWritten: sum((s) => s.rowsWritten),
    deadLettered: sum((s) => s.deadLettered),
    tombstonesSkipped: sum((s) => s.tombstonesSkipped),
    alerts: sum((s) => s.alerts),
    commits: sum((s) => s.commits),
    lag: sum((s) => s.lag),
    partitionCount: sum((s) => s.partitionCount),
    partitions: parts
      .flatMap((p) => p.summary.partitions.map((partition) => ({ ...partition, table: p.table })))
      .sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition),
    tables: parts.map(({ table, summary: s }) => ({
      table,
      stopReason: s.stopReason,
      recordsRead: s.recordsRead,
      rowsWritten: s.rowsWritten,
      deadLettered: s.deadLettered,
      lag: s.lag,
      partitionCount: s.partitionCount,
      ...(s.error === undefined ? {} : { error: s.error }),
    })),
    ...(errors.length === 0 ? {} : { error: errors.join('; ') }),
  };
}
