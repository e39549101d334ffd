/**
 * How many tasks the next execution takes (issue #66's dispatcher; this is its rule, pure): none when
 * nothing waits, else the tasks that drain what waits within one run at the rate a task drained in the
 * last runs, clamped to `[minTasks, maxTasks]` and to the partitions (a task beyond them finds none).
 * Tasks of an execution still running count: leases keep two executions off one partition, so only the
 * tasks missing are launched.
 */

/** What a past run tells the rule: how many records one task read, in how long, and why it stopped. */
export interface RunRate {
  readonly endedAt: number;
  readonly recordsRead: number;
  readonly durationMs: number;
  readonly stopReason: 'caught_up' | 'budget' | 'stalled' | 'signal' | 'error';
}

export interface SizingInput {
  /** Records waiting, over every partition (end offsets against checkpoints). */
  readonly backlog: number;
  readonly partitionCount: number;
  /** Tasks of executions still running. */
  readonly runningTasks: number;
  /** Records a second one task drains; null before any run taught it. */
  readonly ratePerTask: number | null;
  /** How long a run drains (DRAIN_BUDGET_SECONDS). */
  readonly budgetSeconds: number;
  readonly minTasks: number;
  readonly maxTasks: number;
}

export interface Decision {
  readonly tasks: number;
  readonly reason: string;
}

/** Runs older than this teach nothing about today's records (their size, the table's speed). */
export const rateWindowMs = 6 * 3_600_000;

/**
 * A task's drain rate: the median over recent runs that drained for their whole budget (`budget`: they
 * were never short of records). A run that caught up stopped for want of records, so it says only that the
 * rate is at least what it read: with no full run, the best of those is the rate (an underestimate, which
 * launches more tasks, never fewer); null with neither.
 */
export function learnedRate(runs: readonly RunRate[], now: number): number | null {
  const recent = runs.filter((r) => now - r.endedAt <= rateWindowMs && r.durationMs > 0 && r.recordsRead > 0);
  const perSecond = (r: RunRate) => r.recordsRead / (r.durationMs / 1000);
  const full = recent
    .filter((r) => r.stopReason === 'budget')
    .map(perSecond)
    .sort((a, b) => a - b);
  if (full.length > 0) return full[Math.floor((full.length - 1) / 2)]!;
  const partial = recent.filter((r) => r.stopReason === 'caught_up').map(perSecond);
  return partial.length === 0 ? null : Math.max(...partial);
}

export function decideTasks(input: SizingInput): Decision {
  const { backlog, partitionCount, runningTasks, ratePerTask, budgetSeconds } = input;
  if (backlog <= 0) return { tasks: 0, reason: 'nothing waits' };
  const ceiling = Math.max(0, Math.min(input.maxTasks, partitionCount));
  const floor = Math.min(Math.max(1, input.minTasks), ceiling);
  const wanted =
    ratePerTask === null || ratePerTask <= 0
      ? floor
      : Math.min(ceiling, Math.max(floor, Math.ceil(backlog / (ratePerTask * budgetSeconds))));
  const why =
    ratePerTask === null
      ? `${backlog} records wait; no run has taught the rate yet: ${floor} task(s)`
      : `${backlog} records wait; a task drains ${Math.round(ratePerTask)}/s for ${budgetSeconds} s: ${wanted} task(s)`;
  if (runningTasks >= wanted)
    return { tasks: 0, reason: `${why}, and ${runningTasks} still run: none launched` };
  const launch = wanted - runningTasks;
  return {
    tasks: launch,
    reason: runningTasks === 0 ? why : `${why}, ${runningTasks} still run: ${launch} more launched`,
  };
}
