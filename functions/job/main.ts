/**
 * The Cloud Run Job's entry point: one bounded drain for this task. Exit 0: the run ended cleanly
 * (caught up, budget, or SIGTERM). Exit 1: it failed, state is consistent, a retry is safe. Exit 2: bad
 * configuration, a retry will not help. The last line on stdout is always the run summary.
 */
import { pathToFileURL } from 'node:url';
import { parseConfig } from '../drain/config.js';
import { asError, ConfigError } from '../drain/errors.js';
import { createLogger, type Logger } from '../drain/logger.js';
import { summaryLine } from '../drain/run-summary.js';
import type { RunSummary } from '../drain/types.js';
import { type JobIo, runJob } from './run-job.js';

export interface MainIo {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly onProgress?: JobIo['onProgress'];
}

export async function runMain(io: MainIo): Promise<number> {
  let config: ReturnType<typeof parseConfig>;
  try {
    config = parseConfig(io.env);
  } catch (error) {
    const logger = createLogger({ level: 'info' });
    const variable = error instanceof ConfigError ? error.variable : undefined;
    const message =
      error instanceof ConfigError
        ? `configuration error: ${error.message}`
        : `configuration could not be read: ${asError(error).message}`;
    logger.error(message, { event: 'config_error', variable });
    logger.always('ERROR', 'run refused: bad configuration', {
      ...failedRunSummary(io.env.PIPELINE_ID?.trim() || null, message),
      variable,
    });
    return 2;
  }
  const logger = createLogger({ level: config.logLevel });
  const shutdown = new AbortController();
  const onSignal = (signal: NodeJS.Signals): void => {
    if (shutdown.signal.aborted) return;
    logger.notice('stop requested; settling the batch in flight', { signal });
    shutdown.abort();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const faultPoint = config.faultPoint;
  let frozen = false;
  const fault =
    faultPoint === null
      ? undefined
      : (point: string) => {
          if (point !== faultPoint) return;
          if (config.faultAction === 'kill') process.kill(process.pid, 'SIGKILL');
          else if (!frozen) {
            // A zombie: frozen once, here; after SIGCONT it goes on as a run that slept would.
            frozen = true;
            process.kill(process.pid, 'SIGSTOP');
          }
        };

  let summary: RunSummary;
  try {
    summary = await runJob(config, { logger, signal: shutdown.signal, fault, onProgress: io.onProgress });
  } catch (error) {
    return finishWithError(logger, config.pipelineId, asError(error));
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
  logger.always(
    summary.stopReason === 'error' ? 'ERROR' : 'NOTICE',
    'run finished',
    summaryLine(summary) as unknown as Record<string, unknown>,
  );
  return summary.stopReason === 'error' ? 1 : 0;
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

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  quietLocalAuth(process.env);
  exitWhenWritten(await runMain({ env: process.env }));
}
