/**
 * What every mode does to a route's target before it writes: the table made if missing, its columns
 * evolved to the schema file's (additively), each change in the audit trail; and the staging settings of
 * the modes that write through MERGE.
 */
import type { Table } from '@google-cloud/bigquery';
import type { GoogleClients } from '../google/clients.js';
import { defaultRetryPolicy } from '../kernel/retry.js';
import { metadataColumns, type SchemaField } from '../schema/table-schema.js';
import { bigQueryError, ensureTargetTable } from '../sinks/bigquery-tables.js';
import { evolveTable, type SchemaEvolution } from '../sinks/schema-evolution.js';
import type { MergeSinkOptions } from './merge/merge-sink.js';
import type { RouteSinksOptions } from './write-mode.js';

/** The route's table and location, as the sinks name it. */
export function targetOf({ config, route }: RouteSinksOptions) {
  return { dataset: route.dataset, table: route.table, location: config.bigquery.location };
}

/** The target table made if missing, then given every column of `schema` it lacks. */
export async function prepareTargetTable(
  options: RouteSinksOptions,
  schema: readonly SchemaField[],
): Promise<Table> {
  const { clients, route, userSchema } = options;
  const table = await ensureTargetTable(
    clients.bigquery,
    { ...targetOf(options), metadata: route.metadata, layout: route.layout },
    userSchema,
  );
  await evolveTarget(options, schema);
  return table;
}

/** Nothing is written before the table has every column of the schema file (additive evolution). */
export async function evolveTarget(
  options: RouteSinksOptions,
  schema: readonly SchemaField[],
): Promise<void> {
  const { clients, config, runId, logger } = options;
  const evolution = await evolveTable(clients.bigquery, targetOf(options), schema, logger);
  if (evolution.changes.length === 0) return;
  // Whoever evolves the table (a run, or a replay) leaves the audit record.
  await recordSchemaEvolution(clients, config.pipelineId, runId, evolution).catch((error: unknown) =>
    logger.warn('recording the schema change in the audit trail failed', { error }),
  );
}

/**
 * UNKNOWN_FIELDS=evolve: the route's columns and those earlier runs added to its table (after them), so that
 * the run writes them and the table's evolution is never taken for a column removed.
 */
export async function withEvolvedColumns(
  clients: GoogleClients,
  target: { readonly dataset: string; readonly table: string },
  columns: readonly SchemaField[],
): Promise<readonly SchemaField[]> {
  let current: SchemaField[];
  try {
    const [metadata] = await clients.bigquery.dataset(target.dataset).table(target.table).getMetadata();
    current = (metadata.schema?.fields ?? []) as SchemaField[];
  } catch (error) {
    if ((error as { code?: number }).code === 404) return columns; // no table yet: none added
    throw bigQueryError(error, `read the schema of ${target.table}`);
  }
  const names = new Set(columns.map((c) => c.name.toLowerCase()));
  const reserved = new Set<string>(metadataColumns);
  const added = current.filter((c) => !names.has(c.name.toLowerCase()) && !reserved.has(c.name));
  return added.length === 0 ? columns : [...columns, ...added];
}

/**
 * UNKNOWN_FIELDS=evolve: the table given the columns it lacks of `fields` (NULLABLE, after its own; one a
 * run of another task added meanwhile is left as it is), each in the audit trail.
 */
export async function addColumns(options: RouteSinksOptions, fields: readonly SchemaField[]): Promise<void> {
  const { clients, route } = options;
  const [metadata] = await clients.bigquery
    .dataset(route.dataset)
    .table(route.table)
    .getMetadata()
    .catch((error: unknown) => {
      throw bigQueryError(error, `read the schema of ${route.table}`);
    });
  const current = (metadata.schema?.fields ?? []) as SchemaField[];
  const names = new Set(current.map((c) => c.name.toLowerCase()));
  const lacking = fields.filter((f) => !names.has(f.name.toLowerCase()));
  if (lacking.length > 0) await evolveTarget(options, [...current, ...lacking]);
}

/** The settings of a route's MERGE sinks: staging tables named for this task and run. */
export function stagingOf(options: RouteSinksOptions): Omit<MergeSinkOptions, 'table' | 'schema'> {
  const { clients, route, config, runId, logger } = options;
  return {
    bigquery: clients.bigquery,
    dataset: route.dataset,
    pipelineId: config.pipelineId,
    taskIndex: config.taskIndex,
    runId,
    retry: defaultRetryPolicy,
    logger,
    // Older than any run can last: a staging table this old belongs to no live run.
    leftoverAgeMs: (config.budgetSeconds + 600) * 1000,
  };
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
