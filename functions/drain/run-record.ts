import type { WrittenBatch } from '../kernel/ports.js';
import { partitionId } from '../kernel/records.js';
import type { PartitionSummary, RunSummary, StopReason } from '../kernel/summary.js';
import type { PartitionLease } from './partition-lease.js';

export interface RunTotals {
  recordsRead: number;
  rowsWritten: number;
  deadLettered: number;
  tombstonesSkipped: number;
  commits: number;
  alerts: number;
}

/** Who the run is, as its summary names it. */
export interface RunHead {
  readonly pipelineId: string;
  readonly runId: string;
  readonly execution: string;
  readonly taskIndex: number;
  readonly taskCount: number;
}

/**
 * What one run records as it goes: the partitions it leased, every partition it looked at, its totals.
 * The phases read it freely and change it only through its methods.
 */
export class RunRecord {
  readonly #partitions = new Map<string, PartitionLease>();
  readonly #summaries: PartitionSummary[] = [];
  readonly #totals: RunTotals = {
    recordsRead: 0,
    rowsWritten: 0,
    deadLettered: 0,
    tombstonesSkipped: 0,
    commits: 0,
    alerts: 0,
  };

  /** The partitions this run leased, by `topic~partition`. */
  get partitions(): ReadonlyMap<string, PartitionLease> {
    return this.#partitions;
  }

  get totals(): Readonly<RunTotals> {
    return this.#totals;
  }

  /** A partition the run looked at (leased or tried to): it has a line in the summary. */
  lookedAt(summary: PartitionSummary): void {
    this.#summaries.push(summary);
  }

  leased(entry: PartitionLease): void {
    this.#partitions.set(partitionId(entry.mark), entry);
  }

  /** A checkpoint commit landed. */
  committed(): void {
    this.#totals.commits++;
  }

  /** A committed batch, counted in the run's totals and its partition's line. */
  counted(entry: PartitionLease, records: number, written: WrittenBatch): void {
    // What this run wrote: a replay's offsets the tables already held are in the ledger, not here.
    const rowsWritten = written.rows - (written.alreadyHeld?.rows ?? 0);
    const deadLettered = written.deadLetters - (written.alreadyHeld?.deadLetters ?? 0);
    this.#totals.recordsRead += records;
    this.#totals.rowsWritten += rowsWritten;
    this.#totals.deadLettered += deadLettered;
    this.#totals.tombstonesSkipped += written.tombstones;
    entry.counted(records, rowsWritten, deadLettered, written.tombstones);
  }

  alerted(count: number): void {
    this.#totals.alerts += count;
  }

  /** The run's summary line; a run that got through its work but left a partition unable to move stalled. */
  summary(
    head: RunHead,
    outcome: { stopReason: StopReason; durationMs: number; failure?: Error },
  ): RunSummary {
    const summaries = this.#summaries;
    const { failure } = outcome;
    const waiting = summaries.some((p) => p.waiting !== undefined);
    return {
      event: 'run_summary',
      pipeline: head.pipelineId,
      runId: head.runId,
      execution: head.execution,
      taskIndex: head.taskIndex,
      taskCount: head.taskCount,
      stopReason: outcome.stopReason === 'caught_up' && waiting ? 'stalled' : outcome.stopReason,
      ...this.#totals,
      durationMs: outcome.durationMs,
      lag: summaries.reduce((total, p) => total + (p.lag ?? 0), 0),
      partitionCount: summaries.length,
      partitions: summaries.sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition),
      ...(failure ? { error: failure.message } : {}),
    };
  }
}
