import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { parseConfig } from '../../functions/config/config.js';
import { routeKeys } from '../../functions/config/routes.js';
import { leastSettings, type Setting, settings } from '../../functions/config/settings.js';
import { partitioningKeys } from '../../functions/config/table-layout.js';
import { configurationPage, withReference } from '../../scripts/docs.js';

const configDir = join(import.meta.dirname, '../../functions/config');
const parserSource = readdirSync(configDir)
  .filter((f) => f.endsWith('.ts') && f !== 'settings.ts')
  .map((f) => readFileSync(join(configDir, f), 'utf8'))
  .join('\n');
const page = readFileSync(configurationPage, 'utf8');
/** The variables the page's tables list, in the order they list them. */
const onPage = [...page.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map((m) => m[1]!);

/** The least a pipeline needs. */
const minimal: Record<string, string> = { ...leastSettings } as Record<string, string>;

/** Every variable parseConfig asks the environment for while it parses `env`. */
function variablesRead(env: Record<string, string>): Set<string> {
  const asked = new Set<string>();
  const watched = new Proxy(env, {
    get(target, key) {
      if (typeof key === 'string') asked.add(key);
      return target[key as string];
    },
  });
  try {
    parseConfig(watched, () => '[{"topics": ["t"], "table": "ds.t", "schemaFile": "s.json"}]');
  } catch {
    // a refused combination still shows what was read
  }
  return asked;
}

describe('docs/configuration.md and the parser', () => {
  test('the page holds the reference made from settings.ts, unchanged (else: npm run docs)', () => {
    expect(page).toBe(withReference(page));
  });

  test('the page lists every setting once, and nothing else', () => {
    expect(onPage).toEqual(Object.keys(settings));
  });

  test('every variable the parser names in its source is on the page', () => {
    const named = new Set([...parserSource.matchAll(/'([A-Z][A-Z0-9]*_[A-Z0-9_]+)'/g)].map((m) => m[1]!));
    const missing = [...named].filter((name) => !onPage.includes(name));
    expect(missing).toEqual([]);
    expect(named.size).toBeGreaterThan(40);
  });

  test('every setting on the page is read by the parser', () => {
    for (const name of onPage) expect(parserSource, name).toContain(`'${name}'`);
  });

  test('every variable the parser reads while parsing is on the page', () => {
    const envs: Record<string, string>[] = [minimal];
    envs.push({ ...minimal, BQ_WRITE_MODE: 'cdc', CHANGE_FORMAT: 'upsert', BQ_PRIMARY_KEY: 'id' });
    envs.push({ ...minimal, KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_USERNAME: 'u' });
    envs.push({ ...minimal, KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_OAUTH_PROVIDER: 'google' });
    envs.push({ ...minimal, VALUE_FORMAT: 'avro', SCHEMA_REGISTRY_URL: 'http://r:1', BQ_TABLE: '' });
    envs.push({ ...minimal, ROUTES_FILE: 'routes.json', BQ_TABLE: '', BQ_SCHEMA_FILE: '' });
    const read = new Set(envs.flatMap((env) => [...variablesRead(env)]));
    expect([...read].filter((name) => !onPage.includes(name))).toEqual([]);
    // the watch works: it saw settings that only some of the envs lead to
    for (const name of ['CHANGE_FORMAT', 'KAFKA_OAUTH_PROVIDER', 'SCHEMA_REGISTRY_AUTH', 'ROUTES_FILE'])
      expect(read).toContain(name);
  });

  test("each route name is a key a route takes, and each route key but when's is a setting's", () => {
    const named = (Object.values(settings) as Setting[]).flatMap((s) => (s.route ? [s.route] : []));
    for (const route of named) {
      const [key, inner] = route.split('.');
      expect(routeKeys as readonly string[], route).toContain(key);
      if (inner !== undefined) expect(partitioningKeys, route).toContain(inner);
    }
    // `when` has no setting: it says which of a shared topic's records a route takes (routes file only).
    for (const key of routeKeys.filter((k) => k !== 'partitioning' && k !== 'when'))
      expect(
        named.some((n) => n.split('.')[0] === key),
        key,
      ).toBe(true);
    for (const inner of partitioningKeys) expect(named, inner).toContain(`partitioning.${inner}`);
  });

  test("the parser's defaults are the table's", () => {
    const config = parseConfig(minimal);
    expect(config.batchMaxRecords).toBe(settings.BATCH_MAX_RECORDS.default);
    expect(config.batchMaxBytes).toBe(settings.BATCH_MAX_BYTES.default);
    expect(config.budgetSeconds).toBe(settings.DRAIN_BUDGET_SECONDS.default);
    expect(config.bigquery.writeMode).toBe(settings.BQ_WRITE_MODE.default);
    expect(config.tombstones).toBe(settings.TOMBSTONES.default);
    expect(config.routes[0]!.layout.clustering.join(',')).toBe(settings.BQ_CLUSTERING.default);
    expect(config.routes[0]!.layout.partitionField).toBe(settings.BQ_PARTITION_FIELD.default);
  });
});
