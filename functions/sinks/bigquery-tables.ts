import type { BigQuery, Dataset, Table, TableMetadata } from '@google-cloud/bigquery';
import { defaultTableLayout, type TableLayout } from '../config/table-layout.js';
import { ConfigError, DrainError } from '../kernel/errors.js';
import type { MetadataColumns } from '../kernel/records.js';
import { type SchemaField, targetTableSchema } from '../schema/table-schema.js';

/** BigQuery's tables as every write mode meets them: errors classified, a table made if missing (a 409 is fine). */
/**
 * HTTP statuses and BigQuery reasons that are transient; anything else is fatal. `jobInternalError` comes
 * with HTTP 400, but BigQuery's error table says to back off and retry it (an internal error of a job).
 */
const retriableHttpStatus = new Set([408, 429, 500, 502, 503, 504]);
export const retriableReasons = new Set([
  'backendError',
  'rateLimitExceeded',
  'internalError',
  'jobInternalError',
  'timeout',
  'jobRateLimitExceeded',
]);
const retriableNetworkCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
  'UND_ERR_SOCKET',
]);

export function bigQueryError(error: unknown, what: string): Error {
  if (error instanceof DrainError || error instanceof TypeError || error instanceof RangeError) return error;
  const e = error as { code?: unknown; errors?: { reason?: string }[]; cause?: { code?: unknown } };
  const reason = e.errors?.[0]?.reason;
  const network =
    typeof e.code === 'string' ? e.code : typeof e.cause?.code === 'string' ? e.cause.code : undefined;
  const retriable =
    (typeof e.code === 'number' && retriableHttpStatus.has(e.code)) ||
    (reason !== undefined && retriableReasons.has(reason)) ||
    (network !== undefined && retriableNetworkCodes.has(network)) ||
    /socket hang up|fetch failed|ECONNREFUSED|ECONNRESET/.test(String((error as Error)?.message));
  const message = error instanceof Error ? error.message : String(error);
  return new DrainError(`bigquery ${what}: ${message}`, {
    retriable,
    code: String(e.code ?? reason),
    cause: error,
  });
}

/** Creates the target table if it is missing: user columns + metadata, laid out as the route says. */
export function ensureTargetTable(
  bigquery: BigQuery,
  target: {
    dataset: string;
    table: string;
    location: string | null;
    metadata?: MetadataColumns;
    layout?: TableLayout;
  },
  userFields: readonly SchemaField[],
): Promise<Table> {
  const fields = targetTableSchema(userFields, target.metadata);
  const layout = target.layout ?? defaultTableLayout;
  checkLayout(layout, fields);
  return ensureTable(bigquery, target, target.table, fields, layout);
}

/** The table's layout: BigQuery's `timePartitioning`, `clustering` and partition-filter settings. */
export function tableLayoutMetadata(layout: TableLayout) {
  return {
    timePartitioning: {
      type: layout.partitionType,
      field: layout.partitionField,
      ...(layout.partitionExpirationDays === null
        ? {}
        : { expirationMs: String(Math.round(layout.partitionExpirationDays * 86_400_000)) }),
    },
    ...(layout.clustering.length === 0 ? {} : { clustering: { fields: [...layout.clustering] } }),
    ...(layout.requirePartitionFilter ? { requirePartitionFilter: true } : {}),
  };
}

/** A partition column must be a top-level TIMESTAMP, DATE or DATETIME; clustering columns top-level scalars. */
export function checkLayout(layout: TableLayout, fields: readonly SchemaField[]): void {
  const find = (name: string) => fields.find((f) => f.name.toLowerCase() === name.toLowerCase());
  const partition = find(layout.partitionField);
  if (
    partition === undefined ||
    !['TIMESTAMP', 'DATE', 'DATETIME'].includes(partition.type.toUpperCase()) ||
    partition.mode === 'REPEATED'
  )
    throw new ConfigError(
      'BQ_PARTITION_FIELD',
      `${layout.partitionField} must be a TIMESTAMP, DATE or DATETIME column of the table${partition === undefined ? ' (it has none of that name)' : ''}`,
    );
  for (const name of layout.clustering) {
    const column = find(name);
    if (
      column === undefined ||
      ['RECORD', 'STRUCT', 'JSON'].includes(column.type.toUpperCase()) ||
      column.mode === 'REPEATED'
    )
      throw new ConfigError(
        'BQ_CLUSTERING',
        `${name} must be a top-level, non-repeated column of the table that is no RECORD or JSON`,
      );
  }
}

/**
 * Creates a table of the dataset (and the dataset) if missing, day-partitioned by the Kafka timestamp and
 * clustered by origin, as every table the drain writes is.
 */
export async function ensureTable(
  bigquery: BigQuery,
  target: { dataset: string; location: string | null },
  name: string,
  fields: readonly SchemaField[],
  layout: TableLayout = defaultTableLayout,
): Promise<Table> {
  try {
    const { table } = await createTableIfMissing(
      bigquery.dataset(target.dataset),
      name,
      {
        schema: { fields: [...fields] },
        ...tableLayoutMetadata(layout),
      },
      target,
    );
    return table;
  } catch (error) {
    throw bigQueryError(error, `ensure table ${name}`);
  }
}

/**
 * An error table (`{table}_dead_letters`), made if missing; one made by an older drain gets the columns it
 * lacks (nullable ones, added at the end: `kafka_headers`), so that new rows fit it.
 */
export async function ensureErrorTable(
  bigquery: BigQuery,
  target: { dataset: string; location: string | null },
  name: string,
  fields: readonly SchemaField[],
): Promise<void> {
  try {
    const { table, existed } = await createTableIfMissing(
      bigquery.dataset(target.dataset),
      name,
      { schema: { fields: [...fields] } },
      target,
    );
    if (existed) await addMissingColumns(table, fields);
  } catch (error) {
    throw bigQueryError(error, `ensure table ${name}`);
  }
}

/** Adds the nullable fields of `fields` the table lacks, after its own (BigQuery adds columns at the end only). */
export async function addMissingColumns(table: Table, fields: readonly SchemaField[]): Promise<void> {
  const [metadata] = await table.getMetadata();
  const present: SchemaField[] = metadata.schema?.fields ?? [];
  const names = new Set(present.map((f) => f.name.toLowerCase()));
  const missing = fields.filter((f) => !names.has(f.name.toLowerCase()) && f.mode !== 'REQUIRED');
  if (missing.length === 0) return;
  await table.setMetadata({ schema: { fields: [...present, ...missing] } });
}

/**
 * Creates the table unless it exists, and first its dataset when `withDataset` says where; another task
 * creating either at the same moment is no error (409). Says whether the table was there already.
 */
export async function createTableIfMissing(
  dataset: Dataset,
  name: string,
  metadata: TableMetadata,
  withDataset?: { readonly location: string | null },
): Promise<{ table: Table; existed: boolean }> {
  if (withDataset !== undefined) {
    const [datasetExists] = await dataset.exists();
    if (!datasetExists)
      await dataset
        .create(withDataset.location === null ? {} : { location: withDataset.location })
        .catch(ignoreAlreadyExists);
  }
  const table = dataset.table(name);
  const [existed] = await table.exists();
  if (!existed) await dataset.createTable(name, metadata).catch(ignoreAlreadyExists);
  return { table, existed };
}

function ignoreAlreadyExists(error: unknown): void {
  if ((error as { code?: unknown }).code !== 409) throw error;
}
