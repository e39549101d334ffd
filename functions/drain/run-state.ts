import type { StartPosition } from '../config/start-position.js';
import type { LatencySketch } from '../kernel/freshness.js';
import type { Logger } from '../kernel/logger.js';
import type { Alerts, Checkpoints, Source, SourceReader, Writer } from '../kernel/ports.js';
import { systemTimers, type Timers } from '../kernel/timers.js';
import type { Thresholds } from './episodes.js';
import { RunRecord } from './run-record.js';
import { createRunStop, type RunStop } from './stop.js';

export interface DrainPorts {
  readonly source: Source;
  readonly checkpoints: Checkpoints;
  /** The route's write mode (writers/): rows, dead letters, and what a flush needs to be durable. */
  readonly writer: Writer;
  /** Without it (no ALERT_TOPIC), alerts are only logged. */
  readonly alerts?: Alerts;
}

export interface DrainOptions {
  readonly pipelineId: string;
  readonly runId: string;
  readonly execution: string;
  readonly taskIndex: number;
  readonly taskCount: number;
  readonly topics: readonly string[];
  readonly budgetMs: number;
  readonly leaseTtlMs: number;
  readonly batchMaxRecords: number;
  readonly batchMaxBytes: number;
  readonly retentionGapPolicy: 'fail' | 'skip';
  readonly startPosition: StartPosition;
  /** After a stop is asked for, how long the batch in flight may take to settle before it is abandoned. */
  readonly settleMs: number;
  /** How many partitions may have a batch in flight at once. */
  readonly partitionConcurrency: number;
  /** How many bytes of fetched records may be in flight at once (memory; the size of flushes). */
  readonly inFlightMaxBytes: number;
  /**
   * DRAIN_UNTIL=budget: the run follows the log until its budget instead of stopping at the end it saw at
   * its start; a batch not yet full is cut `lingerMs` after it began.
   */
  readonly follow?: { readonly lingerMs: number };
  /** How many Firestore round trips (leases, releases) a run has in flight at once. */
  readonly firestoreConcurrency: number;
  readonly alertThresholds: Thresholds;
  /**
   * How long after its start a run leaves other tasks' free partitions to them: a task of the same
   * execution that is slow to start (its table checks, its reader joining) keeps its share instead of
   * losing all of it to a task that finished its own first. A lease that expired (a task that died) is
   * taken once it has expired and this has passed.
   */
  readonly shareGraceMs: number;
}

export interface DrainContext {
  readonly logger: Logger;
  readonly now: () => number;
  /** The run's timers (system timers unless given: tests pass a fake clock's). */
  readonly timers?: Timers;
  /** Aborts on SIGTERM/SIGINT. */
  readonly signal: AbortSignal;
  /** Gets the latency of every record the run committed, at its end (the job merges its routes' runs). */
  readonly latency?: LatencySketch;
  /** Test-only crash points; a no-op in production. */
  readonly onProgress?: (progress: { recordsRead: number; lag: Map<string, number> }) => void;
}

/** What the phases of one run share: its ports and settings, its stop, its partitions and its counts. */
export interface DrainRun {
  readonly ports: DrainPorts;
  readonly options: DrainOptions;
  readonly context: DrainContext;
  readonly logger: Logger;
  readonly now: () => number;
  readonly timers: Timers;
  /** When the run began (`now()`): the share grace counts from here. */
  readonly startedAt: number;
  readonly stop: RunStop;
  /** What the run records: the partitions it leased, every partition it looked at, its totals. */
  readonly record: RunRecord;
  /** Per topic, the offsets of START_POSITION=timestamp, looked up once. */
  readonly offsetsAtStart: Map<string, Promise<Map<number, number>>>;
  /** The reader of the partitions being drained (one per round: the task's own share, then shared ones). */
  reader: SourceReader | undefined;
}

/**
 * A run about to start: what its phases read (ports, options, clock, timers, stop) and what it records
 * (nothing yet). The run loop makes one; a test makes one to drive a single phase.
 */
export function createDrainRun(ports: DrainPorts, options: DrainOptions, context: DrainContext): DrainRun {
  const timers = context.timers ?? systemTimers;
  return {
    ports,
    options,
    context,
    logger: context.logger,
    now: context.now,
    timers,
    startedAt: context.now(),
    stop: createRunStop(
      { budgetMs: options.budgetMs, settleMs: options.settleMs, signal: context.signal },
      timers,
    ),
    record: new RunRecord(),
    offsetsAtStart: new Map(),
    reader: undefined,
  };
}

/**
 * Where a run reads a partition to: the end it saw at its start, or, following the log (DRAIN_UNTIL=budget),
 * no end: it reads until its budget.
 */
export function readsTo(run: DrainRun, entry: { readonly end: number }): number {
  return run.options.follow === undefined ? entry.end : Number.POSITIVE_INFINITY;
}
