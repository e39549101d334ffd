/**
 * What a run's summary line carries: totals always, and per partition only what needs a look, so that the
 * line stays far below Cloud Logging's 256 KB per entry at any partition count. The full per-partition
 * detail goes to the run's document in Firestore (`pipelines/{id}/runs/{runId}`).
 */
import { LatencySketch, worstFreshness } from '../kernel/freshness.js';
import type { PartitionSummary, RunSummary, StopReason } from '../kernel/summary.js';

/** Up to this many partitions a summary lists them all (a few KB); beyond, the ones worth a look. */
export const partitionsListed = 50;

/** Errors and fencing first, then the stalest (freshness, then lag), then anything skipped; at most `max`. */
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
    .sort(
      (a, b) =>
        rank(a) - rank(b) ||
        (b.freshnessSeconds ?? 0) - (a.freshnessSeconds ?? 0) ||
        (b.lag ?? 0) - (a.lag ?? 0),
    )
    .filter((p) => rank(p) < 3)
    .slice(0, max);
  return { listed, omitted: partitions.length - listed.length };
}

/** The line as logged: the same totals as the full summary, with the partitions trimmed as above. */
export function summaryLine(summary: RunSummary): RunSummary {
  const { listed, omitted } = partitionsWorthALook(summary.partitions);
  return { ...summary, partitions: listed, ...(omitted > 0 ? { partitionsOmitted: omitted } : {}) };
}

/** How many stale partitions a run names in lines of their own, the stalest first. */
export const stalePartitionsLogged = 20;

/**
 * The lines a run logs before its summary for the console's per-table and per-partition freshness (a
 * log-based metric reads one field of one line; the summary's lists cannot be charted): one per table,
 * and one per stale partition (freshness above 0), the stalest `stalePartitionsLogged` only, so that the
 * per-partition series stay few at any partition count. `table`: the only route's, in a run of one.
 */
export function freshnessLines(summary: RunSummary, table?: string): Record<string, unknown>[] {
  const tables =
    summary.tables ??
    (table === undefined
      ? []
      : [{ table, freshnessSeconds: summary.freshnessSeconds, latencyMs: summary.latencyMs }]);
  const stale = summary.partitions
    .filter((p) => (p.freshnessSeconds ?? 0) > 0)
    .sort((a, b) => b.freshnessSeconds! - a.freshnessSeconds!)
    .slice(0, stalePartitionsLogged);
  return [
    ...tables.map((t) => ({
      event: 'table_freshness',
      table: t.table,
      freshnessSeconds: t.freshnessSeconds,
      latencyMs: t.latencyMs,
    })),
    ...stale.map((p) => ({
      event: 'partition_freshness',
      topic: p.topic,
      partition: p.partition,
      table: p.table ?? table,
      freshnessSeconds: p.freshnessSeconds,
      lag: p.lag,
      ...(p.skipped === undefined ? {} : { skipped: p.skipped }),
    })),
  ];
}

const stopRank: Record<StopReason, number> = { error: 4, signal: 3, stalled: 2, budget: 1, caught_up: 0 };

/**
 * The run's summary from its routes' drains (one per table): totals summed, partitions together, each
 * marked with its table, a line per table, the gravest stop reason (an error in one table is the run's:
 * exit 1, the others' partitions drained all the same), the stalest table's freshness, and the latency
 * of all their records (from each drain's sketch: percentiles do not add up).
 */
export function mergeRunSummaries(
  parts: readonly { table: string; summary: RunSummary; latency: LatencySketch }[],
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
  const latency = new LatencySketch();
  for (const p of parts) latency.merge(p.latency);
  const unknown = sum((s) => s.freshnessUnknown ?? 0);
  return {
    event: 'run_summary',
    ...head,
    stopReason,
    recordsRead: sum((s) => s.recordsRead),
    rowsWritten: sum((s) => s.rowsWritten),
    deadLettered: sum((s) => s.deadLettered),
    tombstonesSkipped: sum((s) => s.tombstonesSkipped),
    ...(sum((s) => s.filtered ?? 0) > 0 ? { filtered: sum((s) => s.filtered ?? 0) } : {}),
    ...(sum((s) => s.recordsRecovered ?? 0) > 0
      ? { recordsRecovered: sum((s) => s.recordsRecovered ?? 0) }
      : {}),
    alerts: sum((s) => s.alerts),
    commits: sum((s) => s.commits),
    lag: sum((s) => s.lag),
    partitionCount: sum((s) => s.partitionCount),
    freshnessSeconds: worstFreshness(parts.map((p) => p.summary.freshnessSeconds)),
    ...(unknown > 0 ? { freshnessUnknown: unknown } : {}),
    latencyMs: latency.figures(),
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
      freshnessSeconds: s.freshnessSeconds,
      latencyMs: s.latencyMs,
      ...(s.error === undefined ? {} : { error: s.error }),
    })),
    ...(errors.length === 0 ? {} : { error: errors.join('; ') }),
  };
}
