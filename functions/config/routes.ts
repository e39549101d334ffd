/**
 * Routes: which topics go to which table, with which schema and rules. A pipeline has one route per
 * table. `ROUTES_FILE` lists them; the single-table variables (KAFKA_TOPICS, BQ_DATASET, BQ_TABLE,
 * BQ_SCHEMA_FILE, RULES_MODULE, BQ_HEADERS_COLUMN, BQ_KEY_TEXT_COLUMN) are the shorthand for one.
 *
 * A topic goes to the first route that matches it, by name or by /regex/. Regexes are resolved against
 * the broker's topic list at the start of each run, so a new topic that matches is drained without a
 * redeploy. Kafka's internal topics (`__consumer_offsets`, ...) never match a regex.
 */
import { dirname, isAbsolute, resolve } from 'node:path';
import { ConfigError } from '../kernel/errors.js';
import type { MetadataColumns } from '../kernel/records.js';
import { type FieldNameRule, routeFieldRules, type UnknownFieldRule } from './field-rules.js';
import { parseWhen, type RouteWhen, whenFormatProblem } from './route-when.js';
import { defaultTableLayout, routeLayout, type TableLayout } from './table-layout.js';

/** The keys a route may have (settings.ts names the variable each stands for). */
export const routeKeys = [
  'topics',
  'table',
  'schemaFile',
  'rulesModule',
  'transformModule',
  'headersColumn',
  'keyTextColumn',
  'valueFormat',
  'valueSchemaFile',
  'valueSubject',
  'partitioning',
  'clustering',
  'when',
  'unknownFields',
  'fieldNames',
] as const;

export type ValueFormatName = 'json' | 'avro' | 'protobuf' | 'json-schema';
export const valueFormatNames: readonly ValueFormatName[] = ['json', 'avro', 'protobuf', 'json-schema'];

export type TopicPattern =
  | { readonly kind: 'name'; readonly name: string }
  | { readonly kind: 'regex'; readonly regex: RegExp; readonly source: string };

export interface Route {
  readonly topics: readonly TopicPattern[];
  readonly dataset: string;
  readonly table: string;
  /**
   * The table's user columns as a BigQuery JSON schema: an absolute path, or one relative to the working
   * directory (the routes file's are made absolute). Null: they come from the values' own schema (the
   * registry subject's latest version, or `valueSchemaFile`).
   */
  readonly schemaFile: string | null;
  /** How record values are written: JSON text, or Avro / Protobuf / JSON Schema in Confluent's wire format. */
  readonly valueFormat: ValueFormatName;
  /** Raw Avro binary (no wire format, no registry): the writer's schema, as Dataflow's template takes it. */
  readonly valueSchemaFile: string | null;
  /** The registry subject whose latest version gives the table's columns (default `{first topic}-value`). */
  readonly valueSubject: string | null;
  readonly layout: TableLayout;
  readonly rulesModule: string | null;
  /** A module exporting `transform(value, context)` (TRANSFORM_MODULE): records changed or dropped on the way in. */
  readonly transformModule: string | null;
  readonly metadata: MetadataColumns;
  /** Which of its topics' records the route takes (null: every record no earlier route took). */
  readonly when: RouteWhen | null;
  /** UNKNOWN_FIELDS for this route's table. */
  readonly unknownFields: UnknownFieldRule;
  /** FIELD_NAMES for this route's records. */
  readonly fieldNames: FieldNameRule;
}

/** A route and the topics it drains in this run (none: nothing of it exists on the broker yet). */
export interface RoutedTopics {
  readonly route: Route;
  readonly topics: readonly string[];
}

const topicName = /^[a-zA-Z0-9._-]{1,249}$/;
const bigQueryName = /^[a-zA-Z0-9_]{1,1024}$/;

/** `"name"` or `"/regex/"` (anchored: the whole topic name must match); a string says what is wrong. */
export function parseTopicPattern(text: string): TopicPattern | string {
  const regex = /^\/(.+)\/$/.exec(text);
  if (regex !== null) {
    try {
      return { kind: 'regex', regex: new RegExp(`^(?:${regex[1]})$`), source: text };
    } catch (error) {
      return `${text} is not a valid regular expression (${(error as Error).message})`;
    }
  }
  return topicName.test(text)
    ? { kind: 'name', name: text }
    : `"${text}" is not valid (a Kafka topic name or /regex/)`;
}

export function matches(pattern: TopicPattern, topic: string): boolean {
  if (pattern.kind === 'name') return pattern.name === topic;
  return !topic.startsWith('__') && pattern.regex.test(topic);
}

/** The first route that takes the topic, or undefined. */
export function routeOf(routes: readonly Route[], topic: string): Route | undefined {
  return routes.find((route) => route.topics.some((pattern) => matches(pattern, topic)));
}

/**
 * The routes a topic's records may go to, in order: those matching it up to the first without a `when`
 * (which takes every record the others did not). One route without `when`: the topic is that route's alone.
 */
export function routesOfTopic(routes: readonly Route[], topic: string): Route[] {
  const taking: Route[] = [];
  for (const route of routes) {
    if (!route.topics.some((pattern) => matches(pattern, topic))) continue;
    taking.push(route);
    if (route.when === null) break;
  }
  return taking;
}

/** Whether any route needs the broker's topic list (a regex) to know its topics. */
export function needsTopicList(routes: readonly Route[]): boolean {
  return routes.some((route) => route.topics.some((pattern) => pattern.kind === 'regex'));
}

/**
 * This run's topics per route. With `explicit` topics (KAFKA_TOPICS) those are drained, and each must
 * match a route (a ConfigError names the one that does not). Without, a route drains its named topics
 * and every topic of the broker that one of its regexes matches and no earlier route takes.
 */
export function resolveTopics(
  routes: readonly Route[],
  explicit: readonly string[],
  brokerTopics: readonly string[],
): RoutedTopics[] {
  const byRoute = new Map<Route, string[]>(routes.map((route) => [route, []]));
  const candidates =
    explicit.length > 0
      ? explicit
      : [
          ...new Set([
            ...routes.flatMap((route) => route.topics.flatMap((p) => (p.kind === 'name' ? [p.name] : []))),
            ...brokerTopics,
          ]),
        ];
  for (const topic of candidates) {
    const taking = routesOfTopic(routes, topic);
    if (taking.length === 0) {
      if (explicit.length > 0) {
        throw new ConfigError('KAFKA_TOPICS', `topic "${topic}" matches no route of ROUTES_FILE`);
      }
      continue; // a broker topic that is not this pipeline's
    }
    for (const route of taking) byRoute.get(route)!.push(topic);
  }
  return routes.map((route) => ({ route, topics: byRoute.get(route)!.sort() }));
}

/** `dataset.table` of a route, as logs, summaries and `verify` name it. */
export function tableName(route: Pick<Route, 'dataset' | 'table'>): string {
  return `${route.dataset}.${route.table}`;
}

/**
 * The routes of a `ROUTES_FILE` (its JSON text): `[{ "topics": [...], "table": "dataset.table",
 * "schemaFile": "...", "rulesModule"?: "...", "headersColumn"?: bool, "keyTextColumn"?: bool }]`, or the
 * same list under `"routes"`. A table named without a dataset takes `defaults.dataset` (BQ_DATASET).
 * Relative paths are relative to the routes file. Every error names ROUTES_FILE and the route.
 */
export function parseRoutes(
  text: string,
  file: string,
  defaults: {
    dataset: string | null;
    metadata: MetadataColumns;
    valueFormat?: ValueFormatName;
    layout?: TableLayout;
    unknownFields?: UnknownFieldRule;
    fieldNames?: FieldNameRule;
  },
): Route[] {
  const fail = (message: string): never => {
    throw new ConfigError('ROUTES_FILE', `(${file}) ${message}`);
  };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return fail(`is not JSON: ${(error as Error).message}`);
  }
  const list = Array.isArray(json) ? json : (json as { routes?: unknown } | null)?.routes;
  if (!Array.isArray(list) || list.length === 0) return fail('must hold a non-empty list of routes');
  const base = dirname(resolve(file));
  const path = (p: string) => (isAbsolute(p) ? p : resolve(base, p));
  const known = new Set<string>(routeKeys);
  const routes = list.map((entry: unknown, index): Route => {
    const at = `route ${index + 1}`;
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry))
      return fail(`${at} is not an object`);
    const r = entry as Record<string, unknown>;
    for (const key of Object.keys(r)) if (!known.has(key)) fail(`${at} has an unknown key "${key}"`);
    if (!Array.isArray(r.topics) || r.topics.length === 0 || !r.topics.every((t) => typeof t === 'string')) {
      return fail(`${at}: "topics" must be a non-empty list of topic names or /regex/ strings`);
    }
    const topics = r.topics.map((t: string) => {
      const pattern = parseTopicPattern(t);
      return typeof pattern === 'string' ? fail(`${at}: ${pattern}`) : pattern;
    });
    if (typeof r.table !== 'string') return fail(`${at}: "table" ("dataset.table") is required`);
    const parts = r.table.split('.');
    const [dataset, table] = parts.length === 2 ? parts : [defaults.dataset, parts[0]];
    if (parts.length > 2 || dataset === null || dataset === undefined || table === undefined) {
      return fail(`${at}: "table" must be "dataset.table" (or a table name, with BQ_DATASET set)`);
    }
    if (!bigQueryName.test(dataset) || !bigQueryName.test(table)) {
      return fail(`${at}: "${r.table}" is not a valid BigQuery table (letters, digits and _)`);
    }
    const valueFormat = r.valueFormat ?? defaults.valueFormat ?? 'json';
    if (!valueFormatNames.includes(valueFormat as ValueFormatName))
      return fail(`${at}: "valueFormat" must be one of ${valueFormatNames.join(', ')}`);
    for (const key of ['schemaFile', 'valueSchemaFile', 'valueSubject']) {
      if (r[key] !== undefined && (typeof r[key] !== 'string' || r[key] === ''))
        fail(`${at}: "${key}" must be a non-empty string`);
    }
    const formatProblem = valueFormatProblem(
      valueFormat as ValueFormatName,
      r.schemaFile !== undefined,
      r.valueSchemaFile !== undefined,
    );
    if (formatProblem !== undefined) return fail(`${at}: ${formatProblem}`);
    for (const key of ['rulesModule', 'transformModule']) {
      if (r[key] !== undefined && typeof r[key] !== 'string') return fail(`${at}: "${key}" must be a path`);
    }
    for (const flag of ['headersColumn', 'keyTextColumn']) {
      if (r[flag] !== undefined && typeof r[flag] !== 'boolean')
        fail(`${at}: "${flag}" must be true or false`);
    }
    const layout = routeLayout(r, defaults.layout ?? defaultTableLayout, (m) => fail(`${at}: ${m}`));
    const rules = routeFieldRules(r, defaults, (m) => fail(`${at}: ${m}`));
    const when = r.when === undefined ? null : parseWhen(r.when);
    if (typeof when === 'string') return fail(`${at}: ${when}`);
    const whenProblem = whenFormatProblem(
      when,
      valueFormat as ValueFormatName,
      r.valueSchemaFile !== undefined,
    );
    if (whenProblem !== undefined) return fail(`${at}: ${whenProblem}`);
    return {
      when,
      ...rules,
      topics,
      dataset,
      table,
      layout,
      schemaFile: typeof r.schemaFile === 'string' ? path(r.schemaFile) : null,
      valueFormat: valueFormat as ValueFormatName,
      valueSchemaFile: typeof r.valueSchemaFile === 'string' ? path(r.valueSchemaFile) : null,
      valueSubject: typeof r.valueSubject === 'string' ? r.valueSubject : null,
      rulesModule: typeof r.rulesModule === 'string' ? path(r.rulesModule) : null,
      transformModule: typeof r.transformModule === 'string' ? path(r.transformModule) : null,
      metadata: {
        headers: (r.headersColumn as boolean | undefined) ?? defaults.metadata.headers,
        keyText: (r.keyTextColumn as boolean | undefined) ?? defaults.metadata.keyText,
      },
    };
  });
  const seen = new Map<string, number>();
  for (const [index, route] of routes.entries()) {
    const name = tableName(route).toLowerCase();
    if (seen.has(name))
      fail(`routes ${seen.get(name)! + 1} and ${index + 1} write the same table ${tableName(route)}`);
    seen.set(name, index);
  }
  return routes;
}

/**
 * What a format needs besides itself: JSON needs the table's schema file; a schema file for the values
 * (raw Avro) only goes with Avro. Undefined when the combination works.
 */
export function valueFormatProblem(
  format: ValueFormatName,
  hasSchemaFile: boolean,
  hasValueSchemaFile: boolean,
): string | undefined {
  if (format === 'json' && !hasSchemaFile) return '"schemaFile" is required (JSON values carry no schema)';
  if (hasValueSchemaFile && format !== 'avro')
    return '"valueSchemaFile" is for raw Avro values only (valueFormat avro)';
  return undefined;
}

export type { FieldNameRule, UnknownFieldRule } from './field-rules.js';
export { fieldNameRules, unknownFieldRules } from './field-rules.js';
