/**
 * A route's sinks, made by its write mode, and its writer on them. Shared by the drain and the dead-letter
 * replay (which writes through `sink`).
 */
import { whenRefusal } from '../config/bigquery.js';
import { ConfigError } from '../kernel/errors.js';
import { onceUntilFailure } from '../kernel/once.js';
import type { Sink, Writer } from '../kernel/ports.js';
import type { RecordRouter } from '../records/record-router.js';
import { writeModeNamed } from './registry.js';
import type { MadeSinks, RouteSinksOptions, WriterOptions } from './write-mode.js';

export type { RouteSinksOptions, WriterOptions } from './write-mode.js';

export interface RouteSinks {
  /** Writes rows as JSON (the dead-letter replay). */
  readonly sink: Sink;
  /** The route's writer, in its mode, on these sinks. */
  writer(options: WriterOptions, tracked: <T extends object>(port: T) => T): Writer;
  /** The sinks, once made (a group's writer is made from its routes'). */
  readonly made: () => Promise<MadeSinks>;
  /** The first making, settled: undefined if it worked or failed for a reason a later write may outlive. */
  readonly firstError: Promise<unknown>;
  close(): Promise<void>;
}

/**
 * The writer of a group of routes sharing a topic by `when`, in the mode's way; a mode that cannot route
 * one topic into several tables is a configuration error naming ROUTES_FILE.
 */
export function groupWriter(
  writeMode: string,
  members: readonly { readonly sinks: RouteSinks; readonly options: WriterOptions }[],
  router: RecordRouter,
  tracked: <T extends object>(port: T) => T,
): Writer {
  const mode = writeModeNamed(writeMode);
  if (mode.fanOut === undefined) throw groupRefused(writeMode);
  return mode.fanOut(
    members.map((m) => ({ made: m.sinks.made, options: m.options })),
    router,
    tracked,
  );
}

/** Why routes sharing a topic cannot run in this mode. */
export function groupRefused(writeMode: string): ConfigError {
  return new ConfigError('ROUTES_FILE', whenRefusal(writeMode));
}

/**
 * Sinks whose making (the target table, the staging clean-up) starts at once but is not waited for: if it
 * fails (BigQuery down), the run goes on to lease and read, its writes try the making again and fail, and
 * so the partitions raise `stalled` instead of the run dying before it looks.
 */
export function createRouteSinks(options: RouteSinksOptions): RouteSinks {
  const { logger, calls } = options;
  const mode = writeModeNamed(options.config.bigquery.writeMode);
  const make = () => mode.makeSinks(options);
  const tracked = calls === undefined ? make : () => calls.track('bigquery', 'preparing the table', make);
  const get = onceUntilFailure(
    (): Promise<MadeSinks> =>
      tracked().catch((error: unknown) => {
        logger.warn('the BigQuery target is not ready; writes will try again', { error });
        throw error;
      }),
  );
  const first = get();
  const ready = first.catch(() => undefined);
  return {
    sink: { write: async (rows, signal) => (await get()).sink.write(rows, signal) },
    writer: (writerOptions, trackedPort) => mode.createWriter(get, writerOptions, trackedPort),
    made: get,
    firstError: first.then(
      () => undefined,
      (error: unknown) => error,
    ),
    async close() {
      const settled = await ready;
      await settled?.close();
    },
  };
}
