import { describe, expect, test } from 'vitest';
import { parseConfig } from '../../functions/config/config.js';
import { parseRoutes, resolveTopics, routeOf, tableName } from '../../functions/config/routes.js';
import { mergeRunSummaries } from '../../functions/drain/run-summary.js';
import { ConfigError } from '../../functions/kernel/errors.js';
import { LatencySketch } from '../../functions/kernel/freshness.js';
import type { RunSummary } from '../../functions/kernel/summary.js';
import { aRunSummary } from '../support/summaries.js';

const noMetadata = { headers: false, keyText: false };
const defaults = { dataset: null, metadata: noMetadata };

const routesJson = JSON.stringify([
  { topics: ['orders', '/orders\\..*/'], table: 'shop.orders', schemaFile: 'orders.schema.json' },
  {
    topics: ['/.*/'],
    table: 'shop.everything',
    schemaFile: '/abs/all.schema.json',
    rulesModule: './rules.mjs',
    headersColumn: true,
  },
]);

function refused(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('parseRoutes', () => {
  test('reads routes: names and regexes, dataset.table, paths relative to the file, per-route columns', () => {
    const routes = parseRoutes(routesJson, '/etc/drain/routes.json', defaults);
    expect(routes.map(tableName)).toEqual(['shop.orders', 'shop.everything']);
    expect(routes[0]).toMatchObject({
      schemaFile: '/etc/drain/orders.schema.json',
      rulesModule: null,
      metadata: noMetadata,
    });
    expect(routes[1]).toMatchObject({
      schemaFile: '/abs/all.schema.json',
      rulesModule: '/etc/drain/rules.mjs',
      metadata: { headers: true, keyText: false },
    });
    expect(routes[0]!.topics.map((t) => t.kind)).toEqual(['name', 'regex']);
  });

  test("UNKNOWN_FIELDS and FIELD_NAMES per route, the pipeline's where a route does not say", () => {
    const routes = parseRoutes(
      JSON.stringify([
        { topics: ['a'], table: 't1', schemaFile: 's.json', unknownFields: 'evolve', fieldNames: 'sanitize' },
        { topics: ['b'], table: 't2', schemaFile: 's.json' },
      ]),
      'r.json',
      { dataset: 'ds', metadata: noMetadata, unknownFields: 'json', fieldNames: 'strict' },
    );
    expect(routes.map((r) => [r.unknownFields, r.fieldNames])).toEqual([
      ['evolve', 'sanitize'],
      ['json', 'strict'],
    ]);
    expect(() =>
      parseRoutes(
        JSON.stringify([{ topics: ['a'], table: 'ds.t', schemaFile: 's.json', unknownFields: 'grow' }]),
        'r.json',
        defaults,
      ),
    ).toThrow(/route 1: "unknownFields" must be one of reject, ignore, json, evolve/);
  });

  test('also under a "routes" key; a bare table takes the default dataset', () => {
    const routes = parseRoutes(
      JSON.stringify({ routes: [{ topics: ['a'], table: 't', schemaFile: 's.json' }] }),
      'r.json',
      { dataset: 'ds', metadata: { headers: false, keyText: true } },
    );
    expect(routes[0]).toMatchObject({ dataset: 'ds', table: 't', metadata: { keyText: true } });
  });

  test.each([
    ['not json', '{', /is not JSON/],
    ['empty', '[]', /non-empty list of routes/],
    ['no topics', '[{"table":"a.b","schemaFile":"s"}]', /route 1: "topics"/],
    [
      'bad regex',
      '[{"topics":["/(/"],"table":"a.b","schemaFile":"s"}]',
      /route 1: .*not a valid regular expression/,
    ],
    ['bad topic', '[{"topics":["a b"],"table":"a.b","schemaFile":"s"}]', /route 1: "a b" is not valid/],
    ['no dataset', '[{"topics":["a"],"table":"b","schemaFile":"s"}]', /"table" must be "dataset.table"/],
    ['bad table', '[{"topics":["a"],"table":"a.b-c","schemaFile":"s"}]', /not a valid BigQuery table/],
    ['no schema', '[{"topics":["a"],"table":"a.b"}]', /route 1: "schemaFile" is required/],
    ['unknown key', '[{"topics":["a"],"table":"a.b","schemaFile":"s","tabel":"x"}]', /unknown key "tabel"/],
    [
      'bad flag',
      '[{"topics":["a"],"table":"a.b","schemaFile":"s","headersColumn":"yes"}]',
      /"headersColumn" must be/,
    ],
    [
      'same table twice',
      '[{"topics":["a"],"table":"a.b","schemaFile":"s"},{"topics":["c"],"table":"a.B","schemaFile":"s"}]',
      /routes 1 and 2 write the same table/,
    ],
  ])('refuses %s, naming ROUTES_FILE', (_name, text, message) => {
    const error = refused(() => parseRoutes(text, 'routes.json', defaults));
    expect(error.variable).toBe('ROUTES_FILE');
    expect(error.message).toMatch(message);
  });
});

describe('route matching', () => {
  const routes = parseRoutes(routesJson, '/r.json', defaults);

  test('the first route that matches wins; a regex matches the whole name; internal topics never match', () => {
    expect(tableName(routeOf(routes, 'orders')!)).toBe('shop.orders');
    expect(tableName(routeOf(routes, 'orders.eu')!)).toBe('shop.orders');
    expect(tableName(routeOf(routes, 'xorders.eu')!)).toBe('shop.everything');
    expect(tableName(routeOf(routes, 'refunds')!)).toBe('shop.everything');
    expect(routeOf(routes, '__consumer_offsets')).toBeUndefined();
    const strict = parseRoutes('[{"topics":["/a|b/"],"table":"d.t","schemaFile":"s"}]', '/r.json', defaults);
    expect(routeOf(strict, 'a')).toBeDefined();
    expect(routeOf(strict, 'ab')).toBeUndefined(); // anchored: not "a" somewhere, the whole name
  });

  test('topics per route from the broker list: named topics always, regexes against the list', () => {
    const only = parseRoutes(
      '[{"topics":["orders","/orders\\\\..*/"],"table":"d.o","schemaFile":"s"},{"topics":["/pay-.*/"],"table":"d.p","schemaFile":"s"}]',
      '/r.json',
      defaults,
    );
    const resolved = resolveTopics(only, [], ['orders.us', 'pay-2', 'pay-1', 'other', '__transaction_state']);
    expect(resolved.map((r) => [tableName(r.route), r.topics])).toEqual([
      ['d.o', ['orders', 'orders.us']],
      ['d.p', ['pay-1', 'pay-2']],
    ]);
    // A new topic on the broker joins its route on the next resolution.
    expect(resolveTopics(only, [], ['orders.us', 'orders.eu'])[0]!.topics).toEqual([
      'orders',
      'orders.eu',
      'orders.us',
    ]);
    // Nothing matches yet: the route has no topic this run.
    expect(resolveTopics(only, [], [])[1]!.topics).toEqual([]);
  });

  test('explicit KAFKA_TOPICS: each must match a route, else exit 2 naming the topic', () => {
    expect(resolveTopics(routes, ['refunds', 'orders'], [])).toMatchObject([
      { topics: ['orders'] },
      { topics: ['refunds'] },
    ]);
    const strict = parseRoutes('[{"topics":["a"],"table":"d.t","schemaFile":"s"}]', '/r.json', defaults);
    const error = refused(() => resolveTopics(strict, ['a', 'b'], []));
    expect(error.variable).toBe('KAFKA_TOPICS');
    expect(error.message).toMatch(/topic "b" matches no route/);
  });
});

describe('config with ROUTES_FILE', () => {
  const base = {
    PIPELINE_ID: 'p',
    GOOGLE_CLOUD_PROJECT: 'proj',
    KAFKA_BROKERS: 'b:9092',
    DEAD_LETTER_TOPIC: 'dead-letters',
    ROUTES_FILE: '/etc/routes.json',
  };
  const files = (path: string) => {
    if (path === '/etc/routes.json') return routesJson;
    throw new Error(`ENOENT: no such file, open '${path}'`);
  };

  test('KAFKA_TOPICS may be left out; the routes say which topics', () => {
    const config = parseConfig(base, files);
    expect(config.kafka.topics).toEqual([]);
    expect(config.routes.map(tableName)).toEqual(['shop.orders', 'shop.everything']);
  });

  test('the single-table variables are one route', () => {
    const config = parseConfig(
      {
        ...base,
        ROUTES_FILE: '',
        KAFKA_TOPICS: 'a,b',
        BQ_DATASET: 'd',
        BQ_TABLE: 't',
        BQ_SCHEMA_FILE: '/s.json',
        RULES_MODULE: '/r.mjs',
        BQ_HEADERS_COLUMN: 'true',
      },
      files,
    );
    expect(config.routes).toHaveLength(1);
    expect(config.routes[0]).toMatchObject({
      dataset: 'd',
      table: 't',
      schemaFile: '/s.json',
      rulesModule: '/r.mjs',
      metadata: { headers: true, keyText: false },
    });
    expect(resolveTopics(config.routes, config.kafka.topics, [])[0]!.topics).toEqual(['a', 'b']);
  });

  test.each([
    ['BQ_TABLE', { BQ_TABLE: 't' }, /is set with ROUTES_FILE/],
    ['BQ_SCHEMA_FILE', { BQ_SCHEMA_FILE: '/s' }, /is set with ROUTES_FILE/],
    ['RULES_MODULE', { RULES_MODULE: '/r' }, /is set with ROUTES_FILE/],
    ['ROUTES_FILE', { ROUTES_FILE: '/missing.json' }, /cannot be read: ENOENT/],
  ])('refuses %s', (variable, env, message) => {
    const error = refused(() => parseConfig({ ...base, ...env }, files));
    expect(error.variable).toBe(variable);
    expect(error.message).toMatch(message);
  });
});

describe('mergeRunSummaries', () => {
  const part = (over: Partial<RunSummary>): RunSummary => aRunSummary(over);
  const sketch = (...latencies: number[]) => {
    const made = new LatencySketch();
    for (const l of latencies) made.add(l);
    return made;
  };
  const head = { pipeline: 'p', runId: 'run', execution: 'e', taskIndex: 0, taskCount: 1, durationMs: 9 };

  test('sums the tables, keeps the gravest stop reason and each table error, marks partitions', () => {
    const merged = mergeRunSummaries(
      [
        {
          table: 'd.a',
          summary: part({
            recordsRead: 10,
            rowsWritten: 9,
            deadLettered: 1,
            commits: 2,
            partitions: [
              {
                topic: 'b',
                partition: 0,
                from: 0,
                to: 10,
                lag: 0,
                read: 10,
                rowsWritten: 9,
                deadLettered: 1,
              },
            ],
          }),
          latency: sketch(1_000, 2_000),
        },
        {
          table: 'd.b',
          summary: part({
            stopReason: 'error',
            freshnessSeconds: 3_600,
            latencyMs: sketch(3_600_000).figures(),
            error: 'BigQuery said no',
            lag: 5,
            partitions: [
              {
                topic: 'a',
                partition: 0,
                from: 0,
                to: 0,
                lag: 5,
                read: 0,
                rowsWritten: 0,
                deadLettered: 0,
                skipped: 'error',
              },
            ],
          }),
          latency: sketch(3_600_000),
        },
        {
          table: 'd.c',
          summary: part({ stopReason: 'budget', freshnessSeconds: null, freshnessUnknown: 2 }),
          latency: sketch(),
        },
      ],
      head,
    );
    expect(merged).toMatchObject({
      runId: 'run',
      durationMs: 9,
      stopReason: 'error',
      recordsRead: 10,
      rowsWritten: 9,
      deadLettered: 1,
      commits: 2,
      lag: 5,
      partitionCount: 3,
      error: 'd.b: BigQuery said no',
    });
    expect(merged.partitions.map((p) => [p.topic, p.table])).toEqual([
      ['a', 'd.b'],
      ['b', 'd.a'],
    ]);
    expect(merged.tables!.map((t) => [t.table, t.stopReason, t.freshnessSeconds, t.latencyMs.count])).toEqual(
      [
        ['d.a', 'caught_up', 0, 0],
        ['d.b', 'error', 3_600, 1],
        ['d.c', 'budget', null, 0],
      ],
    );
    // The run's freshness is its stalest table's; its latency, that of all the tables' records together.
    expect(merged.freshnessSeconds).toBe(3_600);
    expect(merged.freshnessUnknown).toBe(2);
    expect(merged.latencyMs).toEqual(sketch(1_000, 2_000, 3_600_000).figures());
    expect(merged.latencyMs.count).toBe(3);
    expect(mergeRunSummaries([], head).stopReason).toBe('caught_up');
  });
});
