/**
 * What a write mode is: one folder of modes/ that says how a route's rows reach BigQuery (its sinks and its
 * writer) and what that means for operators (its seek rule, what `verify` holds it to), registered by name
 * in registry.ts. Nothing outside modes/ branches on a mode's name: it asks the mode.
 */
import type kafkajs from 'kafkajs';
import type { CdcConfig } from '../config/cdc-config.js';
import type { DrainConfig } from '../config/config.js';
import type { Route } from '../config/routes.js';
import type { GoogleClients } from '../google/clients.js';
import type { CallTracker } from '../kernel/calls.js';
import type { Logger } from '../kernel/logger.js';
import type { Checkpoints, DeadLetters, Sink, Writer } from '../kernel/ports.js';
import type { RecordPolicy } from '../records/classify.js';
import type { RecordRouter } from '../records/record-router.js';
import type { SchemaField } from '../schema/table-schema.js';

/** What a route's sinks are made from. */
export interface RouteSinksOptions {
  readonly config: DrainConfig;
  readonly route: Route;
  readonly clients: GoogleClients;
  readonly userSchema: readonly SchemaField[];
  readonly logger: Logger;
  /** The drain's (or replay's) owner id: its staging tables are its own. */
  readonly runId: string;
  readonly calls?: CallTracker;
}

/** What a mode made for a route: `sink`, which the dead-letter replay writes through, and its own ports. */
export interface MadeSinks {
  readonly sink: Sink;
  close(): Promise<void>;
}

/** What every writer gets, whatever its mode. */
export interface WriterOptions {
  readonly checkpoints: Checkpoints;
  readonly deadLetters: DeadLetters;
  readonly records: RecordPolicy;
  readonly leaseTtlMs: number;
  /** A flush takes the batches waiting up to about this many bytes. */
  readonly flushMaxBytes: number;
  /** cdc mode's settings (BQ_WRITE_MODE=cdc); null otherwise. */
  readonly cdc: CdcConfig | null;
  readonly logger: Logger;
  readonly now: () => number;
}

/** Checks across a run's topics, before any of its drains start. */
export interface BeforeRun {
  readonly config: DrainConfig;
  readonly clients: GoogleClients;
  readonly kafka: kafkajs.Kafka;
  readonly topics: readonly string[];
  readonly logger: Logger;
  /** `check`: look only, record nothing (a first sight of a topic is not remembered). */
  readonly readOnly?: boolean;
}

export interface WriteModeDefinition<M extends MadeSinks = MadeSinks> {
  /** Partitions whose batches may be in flight at once (a flush of many, or each batch on its own). */
  readonly partitionConcurrency: number;
  /** How many batches' bytes (BATCH_MAX_BYTES) the run may hold read and not yet durable; 4 unless said. */
  readonly batchesInFlight?: number;
  /** Whether a route's transform (TRANSFORM_MODULE) is applied: not where changes are written as they come. */
  readonly transforms: boolean;
  /** What `verify` reconciles besides the target table: the error table the mode writes, a changes table. */
  readonly verifies: { readonly errorTable: boolean; readonly changes: boolean };
  /** What the CLI tells an operator who moves a checkpoint back from `from` to `to`. */
  seekBackNote(to: number, from: number): string;
  /** A check across the run's topics before it drains (cdc: each topic's partition count is its own). */
  beforeRun?(context: BeforeRun): Promise<void>;
  /** The route's sinks: its table checked or made, its columns evolved, the mode's own ports. */
  makeSinks(options: RouteSinksOptions): Promise<M>;
  /**
   * The route's writer. `made` resolves to the sinks once they are made: a write before that waits for
   * them, and a write after a failed making tries it again (see route-sinks.ts). `tracked` puts a port's
   * calls under the run's call tracker.
   */
  createWriter(
    made: () => Promise<M>,
    options: WriterOptions,
    tracked: <T extends object>(port: T) => T,
  ): Writer;
  /**
   * The writer of a group of routes sharing a topic by `when` (members in the group's order, each with
   * its sinks and options): one batch split by route, committed only when every table it fed holds its
   * part. Absent: the mode cannot route one topic into several tables.
   */
  fanOut?(
    members: readonly { readonly made: () => Promise<M>; readonly options: WriterOptions }[],
    router: RecordRouter,
    tracked: <T extends object>(port: T) => T,
  ): Writer;
}

/** A port whose every call first waits for the sinks to be made. */
export function lazyPort<T extends object>(get: () => Promise<T>, methods: readonly (keyof T & string)[]): T {
  const port: Record<string, unknown> = {};
  for (const method of methods) {
    port[method] = async (...args: unknown[]) => {
      const target = await get();
      return (target[method] as (...a: unknown[]) => unknown).apply(target, args);
    };
  }
  return port as T;
}
