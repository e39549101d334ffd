import { LatencySketch, worstFreshness } from '../kernel/freshness.js';
import type { WrittenBatch } from '../kernel/ports.js';
import { type KafkaRecord, partitionId } from '../kernel/records.js';
import type { PartitionSummary, RunSummary, StopReason } from '../kernel/summary.js';
import type { PartitionLease, TakenBatch } from './partition-lease.js';

export interface RunTotals {
  recordsRead: number;
  rowsWritten: number;
  deadLettered: number;
  tombstonesSkipped: number;
  /** Records the transforms dropped; absent when none. */
  filtered?: number;
  /** Records an earlier run read whose write this run's recovery committed; absent when none. */
  recordsRecovered?: number;
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

  /** Every partition the run looked at, with its line as it stands. */
  get lookedAtPartitions(): readonly PartitionSummary[] {
    return this.#summaries;
  }

  /** The latency of every record the run committed, over its partitions. */
  latency(): LatencySketch {
    const all = new LatencySketch();
    for (const entry of this.#partitions.values()) all.merge(entry.latency);
    return all;
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

  /** A committed batch, counted in the run's totals and its partition's line (with its records' latency). */
  counted(
    entry: PartitionLease,
    batch: { records: readonly KafkaRecord[]; committedAt: number },
    written: WrittenBatch,
  ): void {
    const records = batch.records.length;
    // What this run wrote: a replay's offsets the tables already held are in the ledger, not here.
    const rowsWritten = written.rows - (written.alreadyHeld?.rows ?? 0);
    const deadLettered = written.deadLetters - (written.alreadyHeld?.deadLetters ?? 0);
    this.#totals.recordsRead += records;
    this.#totals.rowsWritten += rowsWritten;
    this.#totals.deadLettered += deadLettered;
    this.#totals.tombstonesSkipped += written.tombstones;
    if (written.filtered) this.#totals.filtered = (this.#totals.filtered ?? 0) + written.filtered;
    entry.counted(batch.records, batch.committedAt, {
      rows: rowsWritten,
      deadLetters: deadLettered,
      tombstones: written.tombstones,
      filtered: written.filtered ?? 0,
    });
  }

  /** Batches a deferring writer took, committed now (settle-phase.ts). */
  countedTaken(entry: PartitionLease, taken: readonly TakenBatch[], committedAt: number): void {
    for (const t of taken) {
      this.#totals.recordsRead += t.records;
      this.#totals.rowsWritten += t.rows;
      this.#totals.deadLettered += t.deadLetters;
      this.#totals.tombstonesSkipped += t.tombstones;
      if (t.filtered) this.#totals.filtered = (this.#totals.filtered ?? 0) + t.filtered;
      entry.countedTaken(t.timestamps, t.records, committedAt, t);
    }
  }

  /**
   * A recovery committed what an earlier run read (a load job that outlasted that run): not read here, but
   * drained all the same, so that the dispatcher learns a rate where every job outlasts its run (#78).
   */
  recovered(records: number): void {
    if (records > 0) this.#totals.recordsRecovered = (this.#totals.recordsRecovered ?? 0) + records;
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
    for (const entry of this.#partitions.values()) entry.latencyInLine();
    const { failure } = outcome;
    const waiting = summaries.some((p) => p.waiting !== undefined);
    const unknown = summaries.filter((p) => p.freshnessSeconds === null && (p.lag ?? 1) > 0).length;
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
      freshnessSeconds: summaries.length === 0 ? 0 : worstFreshness(summaries.map((p) => p.freshnessSeconds)),
      ...(unknown > 0 ? { freshnessUnknown: unknown } : {}),
      latencyMs: this.latency().figures(),
      partitionCount: summaries.length,
      partitions: summaries.sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition),
      ...(failure ? { error: failure.message } : {}),
    };
  }
}
