import type { RunSummary } from '../../functions/kernel/summary.js';

/** A run summary with nothing in it but `over`: for unit tests of what is made from summaries. */
export function aRunSummary(over: Partial<RunSummary> = {}): RunSummary {
  return {
    event: 'run_summary',
    pipeline: 'p',
    runId: 'r',
    execution: 'e',
    taskIndex: 0,
    taskCount: 1,
    stopReason: 'caught_up',
    recordsRead: 0,
    rowsWritten: 0,
    deadLettered: 0,
    tombstonesSkipped: 0,
    alerts: 0,
    commits: 0,
    durationMs: 1,
    lag: 0,
    partitionCount: 1,
    freshnessSeconds: 0,
    latencyMs: { count: 0, p50: null, p99: null, max: null },
    partitions: [],
    ...over,
  };
}
