import { ConfigError } from '../kernel/errors.js';
import { fieldNameRules, unknownFieldRules } from './field-rules.js';
import type { Reader } from './reader.js';
import { parseRoutes, type Route, valueFormatNames, valueFormatProblem } from './routes.js';
import { columnList, type TableLayout, tableLayoutProblem } from './table-layout.js';

export interface SchemaRegistryConfig {
  readonly url: string;
  /**
   * basic: SCHEMA_REGISTRY_USERNAME and _PASSWORD (Secret Manager in production); google: a bearer token
   * from the job's own credentials (Google's Managed Kafka schema registry); none.
   */
  readonly auth: 'none' | 'basic' | 'google';
  readonly username: string | null;
  readonly password: string | null;
}

/** Where records go: one table (BQ_TABLE, ...) or the routes of ROUTES_FILE, and the topics named. */
export function routesOf(read: Reader, readFile: (path: string) => string) {
  const metadata = {
    headers: read.boolean('BQ_HEADERS_COLUMN'),
    keyText: read.boolean('BQ_KEY_TEXT_COLUMN'),
  };
  const dataset = read.matching('BQ_DATASET', /^[a-zA-Z0-9_]{1,1024}$/, 'letters, digits and _', true);
  const routesFile = read.optional('ROUTES_FILE');
  const valueFormat = read.oneOf('VALUE_FORMAT', valueFormatNames);
  const layout = layoutOf(read);
  // The pipeline's rules for fields (a route may say its own).
  const unknownFields = read.oneOf('UNKNOWN_FIELDS', unknownFieldRules);
  const fieldNames = read.oneOf('FIELD_NAMES', fieldNameRules);
  let routes: Route[];
  let topics: string[];
  const topicList = (optional: boolean) =>
    optional && read.optional('KAFKA_TOPICS') === null
      ? []
      : read.list('KAFKA_TOPICS', /^[a-zA-Z0-9._-]{1,249}$/, 'a Kafka topic name');
  if (routesFile === null) {
    topics = topicList(false);
    const schemaFile = read.optional('BQ_SCHEMA_FILE');
    const valueSchemaFile = read.optional('VALUE_SCHEMA_FILE');
    const problem = valueFormatProblem(valueFormat, schemaFile !== null, valueSchemaFile !== null);
    if (problem !== undefined) {
      throw new ConfigError(
        schemaFile === null && valueFormat === 'json' ? 'BQ_SCHEMA_FILE' : 'VALUE_SCHEMA_FILE',
        problem
          .replace('"schemaFile"', 'BQ_SCHEMA_FILE')
          .replace('"valueSchemaFile"', 'VALUE_SCHEMA_FILE')
          .replace('valueFormat', 'VALUE_FORMAT='),
      );
    }
    routes = [
      {
        topics: topics.map((name) => ({ kind: 'name', name })),
        dataset: dataset ?? read.required('BQ_DATASET'),
        table: read.matching('BQ_TABLE', /^[a-zA-Z0-9_]{1,1024}$/, 'letters, digits and _'),
        schemaFile,
        rulesModule: read.optional('RULES_MODULE'),
        transformModule: read.optional('TRANSFORM_MODULE'),
        metadata,
        valueFormat,
        valueSchemaFile,
        valueSubject: read.optional('VALUE_SUBJECT'),
        layout,
        when: null,
        unknownFields,
        fieldNames,
      },
    ];
  } else {
    // One way to say where records go: the routes, each with its own table, schema and rules.
    for (const name of [
      'BQ_TABLE',
      'BQ_SCHEMA_FILE',
      'RULES_MODULE',
      'TRANSFORM_MODULE',
      'VALUE_SCHEMA_FILE',
      'VALUE_SUBJECT',
    ] as const) {
      if (read.optional(name) !== null) {
        throw new ConfigError(name, 'is set with ROUTES_FILE: set the table, schema and rules in each route');
      }
    }
    let text: string;
    try {
      text = readFile(routesFile);
    } catch (error) {
      throw new ConfigError('ROUTES_FILE', `(${routesFile}) cannot be read: ${(error as Error).message}`);
    }
    routes = parseRoutes(text, routesFile, {
      dataset,
      metadata,
      valueFormat,
      layout,
      unknownFields,
      fieldNames,
    });
    topics = topicList(true);
  }

  return { routes, routesFile, topics, unknownFields, fieldNames };
}

/** The table layout: BQ_PARTITION_FIELD, _TYPE, _EXPIRATION_DAYS, BQ_REQUIRE_PARTITION_FILTER, BQ_CLUSTERING. */
function layoutOf(read: Reader): TableLayout {
  const expiration = read.optional('BQ_PARTITION_EXPIRATION_DAYS');
  const layout: TableLayout = {
    partitionField: read.text('BQ_PARTITION_FIELD'),
    partitionType: read.oneOf('BQ_PARTITION_TYPE', ['DAY', 'HOUR', 'MONTH', 'YEAR'] as const),
    partitionExpirationDays:
      expiration === null ? null : read.integer('BQ_PARTITION_EXPIRATION_DAYS', 1, 100_000, 0),
    requirePartitionFilter: read.boolean('BQ_REQUIRE_PARTITION_FILTER'),
    clustering: columnList(read.text('BQ_CLUSTERING')),
  };
  const problem = tableLayoutProblem(layout);
  if (problem !== undefined) {
    const variable = /clustering/.test(problem)
      ? 'BQ_CLUSTERING'
      : /required partition filter/.test(problem)
        ? 'BQ_REQUIRE_PARTITION_FILTER'
        : /expiration/.test(problem)
          ? 'BQ_PARTITION_EXPIRATION_DAYS'
          : 'BQ_PARTITION_FIELD';
    throw new ConfigError(variable, problem);
  }
  return layout;
}

/** The registry, required when a route reads the wire format; its credentials go together. */
export function registryOf(
  read: Reader,
  routes: readonly Route[],
  routesFile: string | null,
): SchemaRegistryConfig | null {
  const url = read.matching('SCHEMA_REGISTRY_URL', /^https?:\/\/[^/\s]+/, 'an http(s) URL', true);
  const needing = routes.find((r) => r.valueFormat !== 'json' && r.valueSchemaFile === null);
  if (url === null) {
    if (needing !== undefined)
      throw new ConfigError(
        'SCHEMA_REGISTRY_URL',
        `is required: ${routesFile === null ? `VALUE_FORMAT=${needing.valueFormat}` : `the route of ${needing.dataset}.${needing.table} (valueFormat ${needing.valueFormat})`} reads Confluent's wire format, whose schemas are in a registry`,
      );
    for (const name of [
      'SCHEMA_REGISTRY_USERNAME',
      'SCHEMA_REGISTRY_PASSWORD',
      'SCHEMA_REGISTRY_AUTH',
    ] as const)
      if (read.optional(name) !== null) throw new ConfigError(name, 'is set but SCHEMA_REGISTRY_URL is not');
    return null;
  }
  const username = read.optional('SCHEMA_REGISTRY_USERNAME');
  const password = read.optional('SCHEMA_REGISTRY_PASSWORD');
  const byDefault =
    username !== null ? 'basic' : /\.googleapis\.com(:\d+)?(\/|$)/.test(url) ? 'google' : 'none';
  const auth = read.oneOf('SCHEMA_REGISTRY_AUTH', ['none', 'basic', 'google'], byDefault);
  if (auth === 'basic' && (username === null || password === null))
    throw new ConfigError(
      username === null ? 'SCHEMA_REGISTRY_USERNAME' : 'SCHEMA_REGISTRY_PASSWORD',
      'is required with basic auth to the schema registry (both go together)',
    );
  if (auth !== 'basic' && (username !== null || password !== null))
    throw new ConfigError(
      username !== null ? 'SCHEMA_REGISTRY_USERNAME' : 'SCHEMA_REGISTRY_PASSWORD',
      `is set with SCHEMA_REGISTRY_AUTH=${auth}, which sends no password`,
    );
  return { url, auth, username, password };
}
