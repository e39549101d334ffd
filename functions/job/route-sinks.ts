import type { DrainConfig } from '../config/config.js';
import type { Route } from '../config/routes.js';
import type { CallTracker } from '../kernel/calls.js';
import { ConfigError } from '../kernel/errors.js';
import type { Logger } from '../kernel/logger.js';
import { onceUntilFailure } from '../kernel/once.js';
import type { Sink } from '../kernel/ports.js';
import { defaultRetryPolicy } from '../kernel/retry.js';
import { type SchemaField, targetTableSchema } from '../schema/table-schema.js';
import { createInsertAllSink, ensureTargetTable, insertAllLimits } from '../sinks/bigquery-sink.js';
import { type ChangeSink, cdcSourceFields, createCdcSink, ensureCdcTable } from '../sinks/cdc-sink.js';
import type { ErrorTable, StreamSink } from '../sinks/contracts.js';
import { createMergeErrorTable } from '../sinks/error-table.js';
import { createMergeSink } from '../sinks/merge-sink.js';
import { evolveTable, type SchemaEvolution } from '../sinks/schema-evolution.js';
import { createStorageWriteSink } from '../sinks/storage-write-sink.js';
import type { WriterPorts } from '../writers/create-writer.js';
import type { GoogleClients } from './clients.js';

/**
 * What a write mode writes through: `sink` always (replay uses it), `streams` in storage-write mode, the
 * drain-written `errorTable` in merge mode.
 */
interface Made {
  readonly sink: Sink;
  readonly streams?: StreamSink;
  readonly errorTable?: ErrorTable;
  readonly changes?: ChangeSink;
  readonly ready?: (primaryKey: readonly string[]) => Promise<void>;
  close(): Promise<void>;
}

/**
 * Sinks whose making (the target table, the staging clean-up) starts at once but is not waited for: if it
 * fails (BigQuery down), the run goes on to lease and read, its writes try the making again and fail, and
 * so the partitions raise `stalled` instead of the run dying before it looks.
 */
function eagerSinks(
  make: () => Promise<Made>,
  logger: Logger,
  mode: DrainConfig['bigquery']['writeMode'],
): {
  sink: Sink;
  streams?: StreamSink;
  errorTable?: ErrorTable;
  changes?: ChangeSink;
  ready?: (primaryKey: readonly string[]) => Promise<void>;
  /** The first making, settled: undefined if it worked or failed for a reason a later write may outlive. */
  firstError: Promise<unknown>;
  close(): Promise<void>;
} {
  const get = onceUntilFailure(() =>
    make().catch((error: unknown) => {
      logger.warn('the BigQuery target is not ready; writes will try again', { error });
      throw error;
    }),
  );
  const first = get();
  const ready = first.catch(() => undefined);
  const firstError = first.then(
    () => undefined,
    (error: unknown) => error,
  );
  const streams = async () => (await get()).streams!;
  return {
    sink: {
      async write(rows, signal) {
        return (await get()).sink.write(rows, signal);
      },
    },
    ...(mode === 'merge'
      ? {
          errorTable: {
            write: async (letters, at, signal) => (await get()).errorTable!.write(letters, at, signal),
          } satisfies ErrorTable,
        }
      : {}),
    ...(mode === 'storage-write'
      ? {
          streams: {
            startEncoding: async (shape) => (await streams()).startEncoding(shape),
            prepare: async (rows, letters, at) => (await streams()).prepare(rows, letters, at),
            commit: async (names) => (await streams()).commit(names),
            streamState: async (name) => (await streams()).streamState(name),
            heldInRange: async (p, from, to) => (await streams()).heldInRange(p, from, to),
            heldOffsets: async (p, from, to) => (await streams()).heldOffsets(p, from, to),
          } satisfies StreamSink,
        }
      : {}),
    ...(mode === 'cdc'
      ? {
          changes: {
            apply: async (rows, letters, at) => (await get()).changes!.apply(rows, letters, at),
            close: () => {},
          } satisfies ChangeSink,
          ready: async (primaryKey: readonly string[]) => (await get()).ready!(primaryKey),
        }
      : {}),
    firstError,
    async close() {
      const settled = await ready;
      await settled?.close();
    },
  };
}

/**
 * The sinks the write mode asks for (see eagerSinks). Shared by the drain and the dead-letter replay, which
 * in the exactly-once modes always writes through MERGE (idempotent by origin; replays are few).
 */
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

export type RouteSinks = ReturnType<typeof eagerSinks>;

export function createRouteSinks(options: RouteSinksOptions): RouteSinks {
  const { config, route, clients, userSchema, logger, runId, calls } = options;
  const mode = config.bigquery.writeMode;
  const tracked = (make: () => Promise<Made>) =>
    calls === undefined ? make : () => calls.track('bigquery', 'preparing the table', make);
  return eagerSinks(
    tracked(async () => {
      const target = { dataset: route.dataset, table: route.table, location: config.bigquery.location };
      if (mode === 'cdc') return cdcSinks(options);
      const schema = targetTableSchema(userSchema, route.metadata);
      const streams =
        mode === 'storage-write'
          ? createStorageWriteSink({
              bigquery: clients.bigquery,
              writer: clients.bigqueryWriter(),
              project: config.project,
              dataset: route.dataset,
              table: route.table,
              location: config.bigquery.location,
              schema,
              logger,
            })
          : undefined;
      // Not awaited: the Storage Write client loads and connects while the table is checked.
      void streams?.warmUp();
      const table = await ensureTargetTable(
        clients.bigquery,
        { ...target, metadata: route.metadata, layout: route.layout },
        userSchema,
      );
      // Nothing is written before the table has every column of the schema file (additive evolution).
      const evolution = await evolveTable(clients.bigquery, target, schema, logger);
      if (evolution.changes.length > 0) {
        // Whoever evolves the table (a run, or a replay) leaves the audit record.
        await recordSchemaEvolution(clients, config.pipelineId, runId, evolution).catch((error: unknown) =>
          logger.warn('recording the schema change in the audit trail failed', { error }),
        );
      }
      if (mode === 'insert-all') {
        const sink = createInsertAllSink(table, { ...insertAllLimits, retry: defaultRetryPolicy, logger });
        return { sink, close: async () => {} };
      }
      const staging = {
        bigquery: clients.bigquery,
        dataset: route.dataset,
        table: route.table,
        pipelineId: config.pipelineId,
        taskIndex: config.taskIndex,
        runId,
        retry: defaultRetryPolicy,
        logger,
        // Older than any run can last: a staging table this old belongs to no live run.
        leftoverAgeMs: (config.budgetSeconds + 600) * 1000,
      };
      const merge = createMergeSink({ ...staging, schema });
      await merge.cleanLeftovers();
      if (mode === 'merge') {
        const errorTable = createMergeErrorTable({ ...staging, location: config.bigquery.location });
        return {
          sink: merge,
          errorTable,
          close: async () => {
            await errorTable.close();
            await merge.close();
          },
        };
      }
      if (streams === undefined) throw new Error(`no sinks for the write mode ${mode}`);
      return {
        sink: merge,
        streams,
        close: async () => {
          streams.close();
          await merge.close();
        },
      };
    }),
    logger,
    mode,
  );
}

/** The write mode's ports, out of the sinks made for it. */
export function writerPorts(
  mode: DrainConfig['bigquery']['writeMode'],
  made: RouteSinks,
  tracked: <T extends object>(port: T) => T,
): WriterPorts {
  if (mode === 'storage-write') return { mode, streams: tracked(made.streams!) };
  if (mode === 'cdc') return { mode, changes: tracked(made.changes!), ready: made.ready! };
  if (mode === 'merge') return { mode, sink: tracked(made.sink), errorTable: tracked(made.errorTable!) };
  return { mode, sink: tracked(made.sink) };
}

/**
 * cdc mode: the change sink on the default streams. The table is made (with its primary key, clustered by
 * it, with its max staleness) or checked once the key is known: at the first batch, since Debezium's key
 * may come from the records themselves; then its columns follow the schema file as in every mode.
 */
async function cdcSinks(options: RouteSinksOptions): Promise<Made> {
  const { config, route, clients, userSchema, logger, runId } = options;
  const cdc = config.bigquery.cdc!;
  const target = { dataset: route.dataset, table: route.table, location: config.bigquery.location };
  const fields = targetTableSchema(
    [...userSchema, ...(cdc.sourceColumns ? cdcSourceFields : [])],
    route.metadata,
  );
  const changes = createCdcSink({
    bigquery: clients.bigquery,
    writer: clients.bigqueryWriter(),
    project: config.project,
    ...target,
    schema: fields,
    maxStaleness: cdc.maxStaleness,
    logger,
  });
  let made: { key: string; done: Promise<void> } | undefined;
  const ready = (primaryKey: readonly string[]) => {
    const key = primaryKey.join(',');
    if (made?.key !== key) {
      const done = (async () => {
        const missing = primaryKey.filter((k) => !fields.some((f) => f.name === k));
        if (userSchema.length > 0 && missing.length > 0)
          throw new ConfigError(
            'BQ_PRIMARY_KEY',
            `names ${missing.join(', ')}, which the table's schema has not`,
          );
        await ensureCdcTable(clients.bigquery, target, route.table, fields, {
          primaryKey,
          maxStaleness: cdc.maxStaleness,
        });
        const evolution = await evolveTable(clients.bigquery, target, fields, logger);
        if (evolution.changes.length > 0)
          await recordSchemaEvolution(clients, config.pipelineId, runId, evolution).catch((error: unknown) =>
            logger.warn('recording the schema change in the audit trail failed', { error }),
          );
      })();
      done.catch(() => {
        if (made?.done === done) made = undefined;
      });
      made = { key, done };
    }
    return made.done;
  };
  const unsupported: Sink = {
    write: async () => {
      throw new ConfigError('BQ_WRITE_MODE', 'replaying dead letters is not supported in cdc mode yet');
    },
  };
  return { sink: unsupported, changes, ready, close: async () => changes.close() };
}

/** Every schema change applied is kept under `pipelines/{pipeline}/audit/`, as operators' actions are. */
async function recordSchemaEvolution(
  clients: GoogleClients,
  pipelineId: string,
  runId: string,
  evolution: SchemaEvolution,
): Promise<void> {
  const audit = clients.firestore.collection('pipelines').doc(pipelineId).collection('audit');
  const batch = clients.firestore.batch();
  for (const change of evolution.changes) {
    batch.create(audit.doc(), {
      action: 'schema_change',
      table: evolution.table,
      change: change.kind,
      column: change.column,
      ...(change.kind === 'add' ? { field: JSON.parse(JSON.stringify(change.field)) } : {}),
      actor: runId,
      at: new Date(),
    });
  }
  await batch.commit();
}

/**
 * A schema version whose records become dead letters, in the audit trail once per table and schema id
 * (the document's id says which: a later run that meets it again finds it there and adds nothing).
 */
export async function recordIncompatibleSchema(
  clients: GoogleClients,
  pipelineId: string,
  runId: string,
  table: string,
  schemaId: number,
  reason: string,
): Promise<void> {
  const doc = clients.firestore.doc(`pipelines/${pipelineId}/audit/schema_incompatible~${table}~${schemaId}`);
  await doc
    .create({ action: 'schema_incompatible', table, schemaId, reason, actor: runId, at: new Date() })
    .catch((error: unknown) => {
      if ((error as { code?: number }).code !== 6) throw error; // ALREADY_EXISTS: recorded before
    });
}
