/**
 * One decision of the dispatcher (issue #66), the same from the HTTP function, the CLI and `--launch
 * local`: read the pipeline (observe.ts), learn the rate (sizing.ts), size the execution, or launch one
 * task when a quiet pipeline owes an alert (alerts-due.ts); log the decision as one line, then launch.
 */
import type { Firestore } from '@google-cloud/firestore';
import type { DrainConfig } from '../config/config.js';
import { loadTaskCeiling } from '../config/load-config.js';
import { thresholdsOf } from '../drain/episodes.js';
import type { Logger } from '../kernel/logger.js';
import type { Source } from '../kernel/ports.js';
import { alertOwed } from './alerts-due.js';
import type { Launcher } from './launcher.js';
import { recentRuns, viewPipeline } from './observe.js';
import { decideTasks, learnedRate } from './sizing.js';

export interface DispatchLine {
  readonly event: 'dispatch';
  readonly pipeline: string;
  readonly backlog: number;
  readonly partitions: number;
  readonly paused: number;
  readonly runningTasks: number;
  /** Records a second one task drains, as learned; null before any run taught it. */
  readonly rate: number | null;
  readonly tasks: number;
  readonly reason: string;
  readonly launch: Launcher['kind'];
}

export interface DispatchOutcome {
  readonly line: DispatchLine;
  readonly execution?: string;
  /** The tasks' worst exit code, when the launcher waited for them. */
  readonly exitCode?: number;
}

/** DISPATCH_MIN_TASKS and DISPATCH_MAX_TASKS, or a command line's own. */
export interface TaskLimits {
  readonly minTasks: number;
  readonly maxTasks: number;
}

export async function dispatchOnce(
  deps: { readonly firestore: Firestore; readonly source: Source; readonly logger: Logger },
  config: DrainConfig,
  target: { readonly topics: readonly string[]; readonly limits: TaskLimits; readonly launcher: Launcher },
  now = Date.now(),
): Promise<DispatchOutcome> {
  const { launcher } = target;
  const [view, runs, launched] = await Promise.all([
    viewPipeline(deps, config.pipelineId, target.topics, now),
    recentRuns(deps.firestore, config.pipelineId, now),
    launcher.runningTasks(),
  ]);
  const runningTasks = launched ?? view.leaseOwners;
  const rate = learnedRate(runs, now);
  const load = config.bigquery.load;
  // load mode: each task of an execution must still get a load of the day's budget (loadPlan).
  const maxTasks =
    load === null
      ? target.limits.maxTasks
      : Math.min(
          target.limits.maxTasks,
          loadTaskCeiling(load.jobsPerTablePerDay, load.schedulePeriodSeconds),
        );
  let decision = decideTasks({
    backlog: view.backlog,
    partitionCount: view.partitions,
    runningTasks,
    ratePerTask: rate,
    budgetSeconds: config.budgetSeconds,
    minTasks: target.limits.minTasks,
    maxTasks,
  });
  if (view.backlog === 0 && runningTasks === 0) {
    const owed = alertOwed(view.quiet, config.pipelineId, thresholdsOf(config), now);
    if (owed !== null) decision = { tasks: 1, reason: `nothing waits, but a run is owed: ${owed}` };
  }
  const line: DispatchLine = {
    event: 'dispatch',
    pipeline: config.pipelineId,
    backlog: view.backlog,
    partitions: view.partitions,
    paused: view.paused,
    runningTasks,
    rate: rate === null ? null : Math.round(rate),
    tasks: decision.tasks,
    reason: decision.reason,
    launch: launcher.kind,
  };
  // Written whatever LOG_LEVEL says: the log-based metric and the dashboard read it.
  deps.logger.always('NOTICE', `dispatch: ${decision.tasks} task(s)`, { ...line });
  if (decision.tasks === 0 || launcher.kind === 'none') return { line };
  const started = await launcher.launch(decision.tasks);
  deps.logger.always(
    'NOTICE',
    launcher.kind === 'local' ? 'dispatch: the tasks ended' : 'dispatch: execution started',
    {
      event: 'dispatch_launched',
      pipeline: config.pipelineId,
      execution: started.execution,
      tasks: decision.tasks,
      ...(started.exitCode === undefined ? {} : { exitCode: started.exitCode }),
    },
  );
  return {
    line,
    execution: started.execution,
    ...(started.exitCode === undefined ? {} : { exitCode: started.exitCode }),
  };
}
