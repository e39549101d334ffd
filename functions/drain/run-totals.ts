import type { WrittenBatch } from '../kernel/ports.js';
import type { PartitionSummary, RunSummary, StopReason } from '../kernel/summary.js';
import type { DrainOptions } from './run-state.js';

export interface RunTotals {
  recordsRead: number;
  rowsWritten: number;
  deadLettered: number;
  tombstonesSkipped: number;
  commits: number;
  alerts: number;
}

export function emptyTotals(): RunTotals {
  return { recordsRead: 0, rowsWritten: 0, deadLettered: 0, tombstonesSkipped: 0, commits: 0, alerts: 0 };
}

/** A committed batch, counted in the run's totals and its partition's line. */
export function countBatch(
  totals: RunTotals,
  summary: PartitionSummary,
  records: number,
  written: WrittenBatch,
): void {
  // What this run wrote: a replay's offsets the tables already held are in the ledger, not here.
  const rowsWritten = written.rows - (written.alreadyHeld?.rows ?? 0);
  const deadLettered = written.deadLetters - (written.alreadyHeld?.deadLetters ?? 0);
  totals.recordsRead += records;
  totals.rowsWritten += rowsWritten;
  totals.deadLettered += deadLettered;
  totals.tombstonesSkipped += written.tombstones;
  summary.read += records;
  summary.rowsWritten += rowsWritten;
  summary.deadLettered += deadLettered;
  if (written.tombstones > 0)
    summary.tombstonesSkipped = (summary.tombstonesSkipped ?? 0) + written.tombstones;
}

/** The run's summary line; a run that got through its work but left a partition unable to move stalled. */
export function runSummary(
  options: DrainOptions,
  outcome: {
    stopReason: StopReason;
    totals: RunTotals;
    summaries: PartitionSummary[];
    durationMs: number;
    failure?: Error;
  },
): RunSummary {
  const { summaries, failure } = outcome;
  const waiting = summaries.some((p) => p.waiting !== undefined);
  return {
    event: 'run_summary',
    pipeline: options.pipelineId,
    runId: options.runId,
    execution: options.execution,
    taskIndex: options.taskIndex,
    taskCount: options.taskCount,
    stopReason: outcome.stopReason === 'caught_up' && waiting ? 'stalled' : outcome.stopReason,
    ...outcome.totals,
    durationMs: outcome.durationMs,
    lag: summaries.reduce((total, p) => total + (p.lag ?? 0), 0),
    partitionCount: summaries.length,
    partitions: summaries.sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition),
    ...(failure ? { error: failure.message } : {}),
  };
}
