/**
 * The Cloud Run Job's run: one bounded drain for this task. Exit 0: the run ended cleanly (caught up,
 * budget, or SIGTERM). Exit 1: it failed, state is consistent, a retry is safe. Exit 2: bad configuration,
 * a retry will not help. The last line on stdout is always the run summary. Started by the CLI's `run`
 * (functions/cli/main.ts), the one entry point: in the image's bundle every module has the bundle's URL,
 * so a "run me when I am the main module" here as well ran a drain before every command.
 */
import { parseConfig } from '../config/config.js';
import { tableName } from '../config/routes.js';
import { freshnessLines, summaryLine } from '../drain/run-summary.js';
import { resolveSecretReferences } from '../google/secret-references.js';
import { createCallTracker, describe } from '../kernel/calls.js';
import { armCrashPoints, crashPointsOf } from '../kernel/crash-points.js';
import { asError, ConfigError, DrainError } from '../kernel/errors.js';
import { createLogger, type Logger } from '../kernel/logger.js';
import type { RunSummary } from '../kernel/summary.js';
import { cutoffAfterSettleMs, settleMs } from './deadline.js';
import { type JobIo, runJob } from './run-job.js';

/** The watchdog ends a run still not returned this long after the cutoff. */
const watchdogAfterCutoffMs = 1_000;

export interface MainIo {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly onProgress?: JobIo['onProgress'];
}

export async function runMain(io: MainIo): Promise<number> {
  const config = await runConfig(io.env);
  if (typeof config === 'number') return config;
  const logger = createLogger({ level: config.logLevel });
  // The budget counts from the process's start, as Cloud Run counts the task's time: loading the code
  // on a busy machine must not push the run's end past budget + 10 s.
  const startedAt = Date.now() - Math.round(process.uptime() * 1000);
  const calls = createCallTracker();
  const watchdog = startWatchdog(calls, Math.max(0, config.budgetSeconds * 1000 - (Date.now() - startedAt)));
  const shutdown = new AbortController();
  const onSignal = (signal: NodeJS.Signals): void => {
    if (shutdown.signal.aborted) return;
    logger.notice('stop requested; settling the batch in flight', { signal });
    watchdog.endBy(Date.now());
    shutdown.abort();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  armCrashPoints(crashPointsOf(io.env));
  const overdue = watchdog.overdue;

  let summary: RunSummary;
  try {
    const outcome = await Promise.race([
      runJob(config, {
        logger,
        signal: shutdown.signal,
        onProgress: io.onProgress,
        calls,
        startedAt,
      }),
      overdue,
    ]);
    if (outcome === 'overdue') {
      // Something that is not a tracked call (a client's own shutdown) still holds the run: it ends now.
      const stuck = describe([...calls.cutOff(), ...calls.pending()], Date.now()) || 'a client did not close';
      logger.error('the run did not end in time; exiting', {
        event: 'run_overdue',
        pending: calls.pending(),
      });
      logger.always('ERROR', 'run finished', {
        ...failedRunSummary(config.pipelineId, `the run did not end in time: ${stuck}`),
        durationMs: Date.now() - startedAt,
      });
      return 1;
    }
    summary = outcome;
    // A service that did not answer kept the run from ending by itself, or left calls unanswered at its
    // end (see runJob): the run fails, naming it, unless it failed for its own reason first. Not counted
    // (CallTracker.unanswered): BigQuery writes, abandoned at the hard stop by design (their partitions
    // are read again; a real outage shows as `stalled`), and calls to a service that was answering with
    // errors its client was still retrying (a 503): a failing service, not a silent one.
    const unanswered = calls.unanswered();
    if (unanswered.length > 0 && summary.stopReason !== 'error') {
      summary = {
        ...summary,
        stopReason: 'error',
        error: `at the run's end ${describe(unanswered, Date.now())}`,
      };
    }
  } catch (error) {
    return finishWithError(logger, config.pipelineId, asError(error));
  } finally {
    watchdog.dispose();
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
  const only = config.routes.length === 1 ? tableName(config.routes[0]!) : undefined;
  // At LOG_LEVEL info (the default) or lower: the console's per-table and per-partition charts read them.
  for (const line of freshnessLines(summary, only)) {
    logger.info(line.event === 'table_freshness' ? 'table freshness' : 'partition freshness', line);
  }
  logger.always(
    summary.stopReason === 'error' ? 'ERROR' : summary.stopReason === 'stalled' ? 'WARNING' : 'NOTICE',
    'run finished',
    summaryLine(summary) as unknown as Record<string, unknown>,
  );
  return summary.stopReason === 'error' ? 1 : 0;
}

/** A configuration that cannot run: exit 2, naming the variable, with the run summary line. */
/** The run's configuration, its secret references resolved; or the exit code of a run refused at start. */
async function runConfig(env: MainIo['env']): Promise<ReturnType<typeof parseConfig> | number> {
  try {
    return parseConfig(await resolveSecretReferences(env));
  } catch (error) {
    // Secret Manager did not answer: a retry may find it back (exit 1).
    if (error instanceof DrainError && !(error instanceof ConfigError)) {
      return finishWithError(createLogger({ level: 'info' }), env.PIPELINE_ID?.trim() ?? '', error);
    }
    return refuseConfig(env, error);
  }
}

function refuseConfig(env: MainIo['env'], error: unknown): number {
  const logger = createLogger({ level: 'info' });
  const variable = error instanceof ConfigError ? error.variable : undefined;
  const message =
    error instanceof ConfigError
      ? `configuration error: ${error.message}`
      : `configuration could not be read: ${asError(error).message}`;
  logger.error(message, { event: 'config_error', variable });
  logger.always('ERROR', 'run refused: bad configuration', {
    ...failedRunSummary(env.PIPELINE_ID?.trim() || null, message),
    variable,
  });
  return 2;
}

/**
 * The run's end: at its budget or on a signal (`endBy`), the batch in flight may settle; then every call
 * still pending fails (the cutoff), and if the run has still not returned, the watchdog ends it
 * (`overdue`). Either way it exits within budget + 10 s (Cloud Run kills the task 10 s after SIGTERM).
 */
function startWatchdog(calls: ReturnType<typeof createCallTracker>, budgetMs: number) {
  let watchdogTimer: NodeJS.Timeout | undefined;
  let watchdogAt = Number.POSITIVE_INFINITY;
  let late: () => void = () => {};
  const overdue = new Promise<'overdue'>((resolve) => {
    late = () => resolve('overdue');
  });
  const endBy = (stopAt: number): void => {
    const cutoffAt = stopAt + settleMs + cutoffAfterSettleMs;
    calls.cutoff(cutoffAt);
    if (cutoffAt + watchdogAfterCutoffMs >= watchdogAt) return;
    watchdogAt = cutoffAt + watchdogAfterCutoffMs;
    clearTimeout(watchdogTimer);
    watchdogTimer = setTimeout(late, watchdogAt - Date.now());
  };
  const budgetTimer = setTimeout(() => endBy(Date.now()), budgetMs);
  return {
    endBy,
    overdue,
    dispose() {
      clearTimeout(budgetTimer);
      clearTimeout(watchdogTimer);
    },
  };
}

/** A run that failed before it drained (bad config found late, RULES_MODULE, an unreachable service). */
function finishWithError(logger: Logger, pipeline: string, error: Error): number {
  const code = error instanceof ConfigError ? 2 : 1;
  const message = code === 2 ? `configuration error: ${error.message}` : 'run failed before draining';
  if (error instanceof ConfigError) {
    logger.error(message, { event: 'config_error', variable: error.variable });
  }
  logger.always('ERROR', message, failedRunSummary(pipeline, error.message));
  return code;
}

/** The summary of a run that drained nothing: same shape as a real one, so that every run ends with one. */
function failedRunSummary(
  pipeline: string | null,
  error: string,
): Omit<RunSummary, 'runId' | 'execution' | 'taskIndex' | 'taskCount'> {
  return {
    event: 'run_summary',
    pipeline: pipeline ?? '',
    stopReason: 'error',
    recordsRead: 0,
    rowsWritten: 0,
    deadLettered: 0,
    tombstonesSkipped: 0,
    alerts: 0,
    commits: 0,
    durationMs: 0,
    lag: 0,
    partitionCount: 0,
    freshnessSeconds: null,
    latencyMs: { count: 0, p50: null, p99: null, max: null },
    partitions: [],
    error,
  };
}

/**
 * Exits once stdout and stderr have been handed to the OS. A pipe (how a container runtime collects
 * logs) takes 64 KB at a time; `process.exit` right after a larger write cuts the line there.
 */
export function exitWhenWritten(code: number): void {
  let pending = 2;
  const done = (): void => {
    pending -= 1;
    if (pending === 0) process.exit(code);
  };
  process.stdout.write('', done);
  process.stderr.write('', done);
}

/** Against the local emulators there is no metadata server: stop the Google auth library probing for one. */
export function quietLocalAuth(env: NodeJS.ProcessEnv): void {
  if (env.FIRESTORE_EMULATOR_HOST && env.METADATA_SERVER_DETECTION === undefined) {
    env.METADATA_SERVER_DETECTION = 'none';
  }
}
