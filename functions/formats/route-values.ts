import { readFileSync } from 'node:fs';
import type { BigQuery } from '@google-cloud/bigquery';
import { GoogleAuth } from 'google-auth-library';
import type { SchemaRegistryConfig } from '../config/config.js';
import type { Route } from '../config/routes.js';
import { ConfigError, DrainError, isRetriable } from '../kernel/errors.js';
import type { Logger } from '../kernel/logger.js';
import { defaultRetryPolicy, withRetry } from '../kernel/retry.js';
import { mergeSchemas } from '../schema/compare.js';
import { metadataColumns, readUserSchema, type SchemaField } from '../schema/table-schema.js';
import { createRawAvroFormat } from './avro/index.js';
import { compileAvro } from './avro/schema.js';
import { UnmappableSchemaError } from './mapped.js';
import { registryFormats } from './registry.js';
import { createSchemaRegistry, type RegisteredSchema, type SchemaRegistry } from './schema-registry.js';
import { createRegistryFormat, type SchemaCompiler, type ValueFormat } from './value-format.js';

/** At the start of a run a registry that does not answer fails the run soon (the next run tries again). */
const startRetry = { attempts: 3, initialDelayMs: 500, maxDelayMs: 2_000 };

/** A route's values: the table's user columns, and how values become rows (none: JSON text). */
export interface RouteValues {
  readonly columns: readonly SchemaField[];
  /** True when the columns follow the values' schema (no schema file): the table evolves with it. */
  readonly followSchema: boolean;
  readonly format?: ValueFormat;
}

/** The topics a route names outright (not by regex): the default subject's topic when none is drained yet. */
export function namedTopics(route: Route): string[] {
  return route.topics.flatMap((t) => (t.kind === 'name' ? [t.name] : []));
}

/** Checks at start what can be checked without a service: the schema files (exit 2 when one is bad). */
export function checkRouteFiles(route: Route): void {
  if (route.schemaFile !== null) readUserSchema(route.schemaFile);
  if (route.valueSchemaFile !== null) rawAvroColumns(route.valueSchemaFile);
}

export function createRegistry(config: SchemaRegistryConfig): SchemaRegistry {
  const auth =
    config.auth === 'google'
      ? new GoogleAuth({ scopes: ['https://www.googleapis.com/auth/cloud-platform'] })
      : undefined;
  return createSchemaRegistry({
    url: config.url,
    ...(config.auth === 'basic' ? { username: config.username!, password: config.password! } : {}),
    ...(auth === undefined
      ? {}
      : {
          bearer: async () => {
            const token = await auth.getAccessToken();
            if (token === null || token === undefined)
              throw new DrainError('no Google access token for the schema registry', { retriable: true });
            return token;
          },
        }),
  });
}

/**
 * The table's user columns and the route's value format. Columns come from the schema file when there is
 * one; else from the values' schema (VALUE_SCHEMA_FILE, or the subject's latest version in the registry)
 * together with the columns the table already has (columns are never removed).
 */
export async function routeValues(
  route: Route,
  topics: readonly string[],
  registry: SchemaRegistry | null,
  bigquery: BigQuery,
  logger: Logger,
  /** The audit trail of versions whose records become dead letters (once per schema id). */
  onIncompatible?: (schemaId: number, reason: string) => Promise<void>,
  /** cdc mode with Debezium: the values are envelopes, and the table's columns are their `after` row's. */
  envelope?: 'debezium',
): Promise<RouteValues> {
  const fileColumns = route.schemaFile === null ? undefined : readUserSchema(route.schemaFile);
  if (route.valueFormat === 'json') return { columns: fileColumns!, followSchema: false };
  if (route.valueSchemaFile !== null) {
    const text = readFileSync(route.valueSchemaFile, 'utf8');
    const raw = rawAvroColumns(route.valueSchemaFile);
    const columns =
      fileColumns ??
      (await withTableColumns(bigquery, route, envelope === 'debezium' ? afterFields(raw) : raw, logger));
    return { columns, followSchema: false, format: createRawAvroFormat(text) };
  }
  const compile =
    envelope === 'debezium'
      ? afterRow(registryFormats[route.valueFormat].compile)
      : registryFormats[route.valueFormat].compile;
  let columns: readonly SchemaField[] | undefined = fileColumns;
  if (columns === undefined) {
    const topic = topics[0] ?? namedTopics(route)[0];
    if (route.valueSubject === null && topic === undefined)
      throw new ConfigError(
        'VALUE_SUBJECT',
        `is required for ${route.dataset}.${route.table}: no topic to name the subject after`,
      );
    const subject = route.valueSubject ?? `${topic}-value`;
    columns = await registryColumns(registry!, compile, subject, bigquery, route, logger);
  }
  return {
    columns,
    followSchema: fileColumns === undefined,
    format: createRegistryFormat({
      name: route.valueFormat,
      schemaType: registryFormats[route.valueFormat].schemaType,
      registry: registry!,
      compile,
      columns,
      columnsFollowSchema: fileColumns === undefined,
      retry: defaultRetryPolicy,
      logger,
      ...(onIncompatible === undefined ? {} : { onIncompatible }),
    }),
  };
}

/**
 * The subject's latest version's columns with the table's. A registry that does not answer at the start
 * does not fail the run when the table exists: its columns as they are, and each partition then waits
 * for the registry at its first batch (a registry fault is no bad data). With no table yet, it does.
 */
async function registryColumns(
  registry: SchemaRegistry,
  compile: SchemaCompiler,
  subject: string,
  bigquery: BigQuery,
  route: Route,
  logger: Logger,
): Promise<readonly SchemaField[]> {
  let latest: RegisteredSchema & { version: number };
  try {
    latest = await withRetry(
      startRetry,
      () => registry.subjectVersion(subject, 'latest'),
      (error, attempt) => logger.warn('the schema registry failed; retrying', { subject, error, attempt }),
    );
  } catch (error) {
    const current = isRetriable(error) ? await tableUserColumns(bigquery, route, logger) : undefined;
    if (current === undefined || current.length === 0) throw error;
    logger.warn('the schema registry does not answer; the table keeps its columns for this run', {
      subject,
      error,
    });
    return current;
  }
  const compiled = await compileLatest(compile, latest, registry, subject);
  logger.info('table columns from the schema registry', {
    subject,
    version: latest.version,
    schemaId: latest.id,
  });
  return withTableColumns(bigquery, route, compiled, logger);
}

async function compileLatest(
  compile: SchemaCompiler,
  latest: RegisteredSchema,
  registry: SchemaRegistry,
  subject: string,
): Promise<readonly SchemaField[]> {
  try {
    return (await compile(latest, registry)).fields;
  } catch (error) {
    if (error instanceof UnmappableSchemaError)
      throw new ConfigError(
        'VALUE_SUBJECT',
        `the latest version of subject ${subject} cannot be a table: ${error.message}`,
      );
    throw error;
  }
}

/**
 * A compiler whose columns are those of the envelope's `after` row (decoding still gives the envelope),
 * and whose rows straight from the bytes are the envelopes' (the upserts), where the format has them.
 */
function afterRow(compile: SchemaCompiler): SchemaCompiler {
  return async (schema, registry) => {
    const { textFields: _, membersText: __, envelopeRows, ...compiled } = await compile(schema, registry);
    return { ...compiled, fields: afterFields(compiled.fields), rows: envelopeRows };
  };
}

/** A Debezium envelope's row columns: its `after` record's fields. */
export function afterFields(fields: readonly SchemaField[]): SchemaField[] {
  const after = fields.find((f) => f.name === 'after');
  if (after?.type !== 'RECORD' || after.fields === undefined)
    throw new UnmappableSchemaError('the schema is no Debezium envelope: it has no "after" record');
  return after.fields;
}

function rawAvroColumns(path: string): readonly SchemaField[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError('VALUE_SCHEMA_FILE', `(${path}) cannot be read: ${(error as Error).message}`);
  }
  try {
    return compileAvro(text).fields;
  } catch (error) {
    throw new ConfigError('VALUE_SCHEMA_FILE', `(${path}) ${(error as Error).message}`);
  }
}

/**
 * The values' columns with those the table has beyond them (an older version's), so that records of every
 * version are judged against the table as it is. A table that cannot be read yet (absent, BigQuery down):
 * the values' columns alone; making the table creates them.
 */
async function withTableColumns(
  bigquery: BigQuery,
  route: Route,
  columns: readonly SchemaField[],
  logger: Logger,
): Promise<readonly SchemaField[]> {
  if (columns.some((f) => (metadataColumns as readonly string[]).includes(f.name)))
    throw new ConfigError(
      'VALUE_SUBJECT',
      `the values' schema has a field named like a metadata column (${metadataColumns.join(', ')})`,
    );
  const current = await tableUserColumns(bigquery, route, logger);
  // As the table will be once evolved: new columns NULLABLE, older versions' columns kept.
  return current === undefined ? columns : mergeSchemas(current, columns, 'nullable');
}

/** The table's user columns; undefined when it cannot be read (absent, or BigQuery silent for 10 s). */
async function tableUserColumns(
  bigquery: BigQuery,
  route: Route,
  logger: Logger,
): Promise<SchemaField[] | undefined> {
  try {
    // At most 10 s: a BigQuery that does not answer must not hold the run before it looks (as the table
    // checks do); making the table later finds out again.
    let timer: NodeJS.Timeout | undefined;
    const [metadata] = await Promise.race([
      bigquery.dataset(route.dataset).table(route.table).getMetadata(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('BigQuery did not answer within 10 s')), 10_000);
      }),
    ]).finally(() => clearTimeout(timer));
    const current = ((metadata.schema?.fields ?? []) as SchemaField[]).filter(
      (f) => !(metadataColumns as readonly string[]).includes(f.name),
    );
    return current;
  } catch (error) {
    if ((error as { code?: number }).code !== 404)
      logger.warn('reading the table’s columns failed', { error });
    return undefined;
  }
}
