import { settings } from './settings.js';

/**
 * How a route's table is laid out: time partitioning by a column (the Kafka timestamp by default, or a
 * user TIMESTAMP / DATE / DATETIME column), its granularity and expiration, whether queries must filter
 * on it, and clustering by up to four columns. Applied when the table is made (by the drain or `infra/`).
 */
export interface TableLayout {
  readonly partitionField: string;
  readonly partitionType: 'DAY' | 'HOUR' | 'MONTH' | 'YEAR';
  readonly partitionExpirationDays: number | null;
  readonly requirePartitionFilter: boolean;
  readonly clustering: readonly string[];
}

/** `a, b,c` → `['a', 'b', 'c']`. */
export function columnList(text: string): string[] {
  return text
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '');
}

/** The layout of a table whose route and variables say nothing of it: settings.ts's defaults. */
export const defaultTableLayout: TableLayout = {
  partitionField: settings.BQ_PARTITION_FIELD.default,
  partitionType: settings.BQ_PARTITION_TYPE.default,
  partitionExpirationDays: null,
  requirePartitionFilter: settings.BQ_REQUIRE_PARTITION_FILTER.default,
  clustering: columnList(settings.BQ_CLUSTERING.default),
};

/** What is wrong with a layout (undefined: nothing); `at` prefixes the message. */
export function tableLayoutProblem(layout: TableLayout): string | undefined {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,299}$/.test(layout.partitionField))
    return `partition field "${layout.partitionField}" is not a column name`;
  if (!['DAY', 'HOUR', 'MONTH', 'YEAR'].includes(layout.partitionType))
    return `partition type ${layout.partitionType} is not DAY, HOUR, MONTH or YEAR`;
  if (layout.partitionExpirationDays !== null && !(layout.partitionExpirationDays > 0))
    return 'partition expiration must be a positive number of days';
  // The drain's own queries of the table (replays, verify, MERGE) filter on the Kafka timestamp only.
  if (layout.requirePartitionFilter && layout.partitionField !== '_kafka_timestamp')
    return "a required partition filter needs partitioning by _kafka_timestamp (the drain's own queries filter on it)";
  if (layout.clustering.length > 4) return 'clustering takes at most four columns';
  const bad = layout.clustering.find((c) => !/^[A-Za-z_][A-Za-z0-9_]{0,299}$/.test(c));
  if (bad !== undefined) return `clustering column "${bad}" is not a column name`;
  return undefined;
}

export const partitioningKeys: readonly string[] = [
  'field',
  'type',
  'expirationDays',
  'requirePartitionFilter',
];

/**
 * A routes file's `"partitioning": { "field", "type", "expirationDays", "requirePartitionFilter" }` and
 * `"clustering": [...]`, over the pipeline's layout.
 */
export function routeLayout(
  r: Record<string, unknown>,
  base: TableLayout,
  fail: (message: string) => never,
): TableLayout {
  const p = (r.partitioning ?? {}) as Record<string, unknown>;
  if (typeof p !== 'object' || p === null || Array.isArray(p))
    return fail('"partitioning" must be an object');
  for (const key of Object.keys(p))
    if (!partitioningKeys.includes(key)) fail(`"partitioning" has an unknown key "${key}"`);
  if (
    r.clustering !== undefined &&
    (!Array.isArray(r.clustering) || !r.clustering.every((c) => typeof c === 'string'))
  )
    fail('"clustering" must be a list of column names');
  const layout: TableLayout = {
    partitionField: typeof p.field === 'string' ? p.field : base.partitionField,
    partitionType:
      typeof p.type === 'string'
        ? (p.type.toUpperCase() as TableLayout['partitionType'])
        : base.partitionType,
    partitionExpirationDays:
      typeof p.expirationDays === 'number' ? p.expirationDays : base.partitionExpirationDays,
    requirePartitionFilter:
      typeof p.requirePartitionFilter === 'boolean' ? p.requirePartitionFilter : base.requirePartitionFilter,
    clustering: (r.clustering as string[] | undefined) ?? base.clustering,
  };
  const problem = tableLayoutProblem(layout);
  return problem === undefined ? layout : fail(problem);
}
