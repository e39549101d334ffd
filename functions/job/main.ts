/**
 * The Cloud Run Job's entry point: one bounded drain for this task. Exit 0: the run ended cleanly
 * (caught up, budget, or SIGTERM). Exit 1: it failed, state is consistent, a retry is safe. Exit 2: bad
 * configuration, a retry will not help. The last line on stdout is always the run summary.
 */
import { pathToFileURL } from 'node:url';
import { parseConfig } from '../drain/config.js';
import { asError, ConfigError } from '../drain/errors.js';
import { createLogger, type Logger } from '../drain/logger.js';
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
    if (error instanceof ConfigError) {
      logger.error(`configuration error: ${error.message}`, {
        event: 'config_error',
        variable: error.variable,
      });
      return 2;
    }
    logger.error('configuration could not be read', { error: asError(error) });
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
  const fault =
    faultPoint === null
      ? undefined
      : (point: string) => {
          if (point === faultPoint) process.kill(process.pid, 'SIGKILL');
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
  const severity = summary.stopReason === 'error' ? 'error' : 'notice';
  logger[severity === 'error' ? 'error' : 'notice'](
    'run finished',
    summary as unknown as Record<string, unknown>,
  );
  return summary.stopReason === 'error' ? 1 : 0;
}

function finishWithError(logger: Logger, pipeline: string, error: Error): number {
  const code = error instanceof ConfigError ? 2 : 1;
  logger.error(code === 2 ? `configuration error: ${error.message}` : 'run failed before draining', {
    event: code === 2 ? 'config_error' : 'run_summary',
    pipeline,
    stopReason: 'error',
    error,
  });
  return code;
}

/** Against the local emulators there is no metadata server: stop the Google auth library probing for one. */
export function quietLocalAuth(env: NodeJS.ProcessEnv): void {
  if (env.FIRESTORE_EMULATOR_HOST && env.METADATA_SERVER_DETECTION === undefined) {
    env.METADATA_SERVER_DETECTION = 'none';
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  quietLocalAuth(process.env);
  process.exit(await runMain({ env: process.env }));
}
