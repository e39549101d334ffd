import type { LatencyFigures } from './freshness.js';
import type { PartitionRef } from './records.js';

/**
 * Why a run ended: it caught up; its budget ran out; a signal; `stalled`: it got through all it could but
 * left partitions that could not move (a recorded flush it could not finish), each saying why in its
 * `waiting`; or an error (exit 1).
 */
export type StopReason = 'caught_up' | 'budget' | 'stalled' | 'signal' | 'error';

export interface PartitionSummary extends PartitionRef {
  from: number | null;
  to: number | null;
  /** Records left between `to` and the end offset seen at start (or the latest seen). */
  lag: number | null;
  read: number;
  rowsWritten: number;
  deadLettered: number;
  /** Tombstones skipped (TOMBSTONES=skip); absent when none. */
  tombstonesSkipped?: number;
  /** Records the route's transform dropped; absent when none. */
  filtered?: number;
  /**
   * At the run's end, the age in seconds of the first record at or after the checkpoint (0 when none
   * waits); null when it could not be read (no checkpoint known, Kafka did not answer in time).
   */
  freshnessSeconds?: number | null;
  /**
   * The checkpoint is below it on purpose (an operator's backward seek): the records up to it are replayed,
   * and freshness counts from the first record at or after it, the one that waits behind the replay.
   * Absent when the partition is not replaying.
   */
  replayUntil?: number;
  /** The records this run committed of the partition, from their Kafka timestamp to the commit; absent when none. */
  latencyMs?: LatencyFigures;
  /** Why this partition was not (fully) drained, if it was not. */
  skipped?: 'leased_elsewhere' | 'fenced' | 'error' | 'paused';
  /** Why the partition cannot move until something changes (its `stalled` alert opens on schedule). */
  waiting?: string;
  /** Another task's partition, taken after this task's own share because its records waited. */
  shared?: true;
  /** The table it is routed to (`dataset.table`), in the summary of a pipeline with several routes. */
  table?: string;
}

/** One table's part of a run (a pipeline with several routes). */
export interface TableSummary {
  table: string;
  stopReason: StopReason;
  recordsRead: number;
  rowsWritten: number;
  deadLettered: number;
  lag: number;
  partitionCount: number;
  freshnessSeconds: number | null;
  latencyMs: LatencyFigures;
  error?: string;
}

export interface RunSummary {
  event: 'run_summary';
  pipeline: string;
  runId: string;
  execution: string;
  taskIndex: number;
  taskCount: number;
  stopReason: StopReason;
  recordsRead: number;
  rowsWritten: number;
  deadLettered: number;
  /** Records with a null value skipped under TOMBSTONES=skip: read, accounted in the ledger, not written. */
  tombstonesSkipped: number;
  /** Records the routes' transforms dropped: read, accounted in the ledger, not written; absent when none. */
  filtered?: number;
  /**
   * Records an earlier run read and this run's recovery committed (a load job that outlasted that run):
   * not in `recordsRead`; the dispatcher counts both. Absent when none.
   */
  recordsRecovered?: number;
  alerts: number;
  commits: number;
  durationMs: number;
  /** Records left undrained across this run's partitions (a log-based metric reads this). */
  lag: number;
  /**
   * At the run's end, the age in seconds of the oldest record not yet durable in BigQuery, over every
   * partition the run looked at (drained, held elsewhere, paused, waiting); 0 when nothing waits; null
   * when no partition's figure could be read. A log-based metric and the freshness SLO read this.
   */
  freshnessSeconds: number | null;
  /** Partitions with records waiting whose age could not be read (left out of `freshnessSeconds`). */
  freshnessUnknown?: number;
  /** For each record committed in this run (not replays after a seek): commit time minus Kafka timestamp. */
  latencyMs: LatencyFigures;
  /** Partitions this run looked at (leased or tried to). */
  partitionCount: number;
  /**
   * In the logged line, the partitions worth a look (all of them up to 50; see run-summary.ts); in the
   * run's Firestore document, all of them.
   */
  partitions: PartitionSummary[];
  /** Partitions left out of the logged line (nothing to see: caught up, no error). */
  partitionsOmitted?: number;
  /** Per table, with several routes. */
  tables?: TableSummary[];
  error?: string;
}
