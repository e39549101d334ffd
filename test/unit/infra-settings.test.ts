/**
 * Every setting from Pulumi: each setting the drain reads is a Pulumi key the program reads, or is listed
 * as not deployable with its reason (infra/settings-map.ts; its type lists every setting); each setting
 * the program passes as it is reaches the job's environment, and the operations job's, exactly.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { type SettingName, settings } from '../../functions/config/settings.js';
import { type Deployed, deployedSettings, infraKeys, passedSettings } from '../../infra/settings-map.js';
import { deployPage, withDeployReference } from '../../scripts/docs.js';
import { runProgram } from '../support/pulumi-program.js';

/** A valid value of each passed setting, other than its default. */
const samples: Partial<Record<SettingName, string>> = {
  LOG_LEVEL: 'debug',
  START_POSITION: 'latest',
  RETENTION_GAP_POLICY: 'skip',
  DRAIN_UNTIL: 'budget',
  FLUSH_LINGER_MS: '1500',
  BATCH_MAX_RECORDS: '1234',
  BATCH_MAX_BYTES: '2097152',
  STALL_ALERT_SECONDS: '901',
  BACKLOG_ALERT_RECORDS: '250000',
  SCHEMA_REGISTRY_AUTH: 'none',
  TOMBSTONES: 'dead-letter',
};

const infraSources = ['config.ts', 'drain-job.ts', 'index.ts']
  .map((file) => readFileSync(join(import.meta.dirname, '..', '..', 'infra', file), 'utf8'))
  .join('\n');

test('every setting is a Pulumi key or says why it is not one', () => {
  expect(Object.keys(deployedSettings).sort()).toEqual(Object.keys(settings).sort());
  for (const [name, deployed] of Object.entries(deployedSettings) as [SettingName, Deployed][]) {
    if ('notDeployable' in deployed) {
      expect(deployed.notDeployable.length, name).toBeGreaterThan(10);
      continue;
    }
    // The program reads the key: a passed one through settings-map.ts, the others by name.
    if (deployed.passed || deployed.pulumi.startsWith('gcp:')) continue;
    expect(infraSources, `${name}: the program never reads '${deployed.pulumi}'`).toContain(
      `'${deployed.pulumi}'`,
    );
  }
});

test('a passed setting is named as its variable in camelCase', () => {
  for (const { variable, key } of passedSettings) {
    const camel = variable.toLowerCase().replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    expect(key).toBe(camel);
  }
});

describe('each passed setting, set in the stack config', () => {
  let envs: { drain: Record<string, string>; operations: Record<string, string> };
  beforeAll(async () => {
    expect(passedSettings.map((p) => p.variable).sort()).toEqual(Object.keys(samples).sort());
    const program = await runProgram({
      ...Object.fromEntries(
        passedSettings.map(({ variable, key }) => [`kafka-bigquery-drain:${key}`, samples[variable]!]),
      ),
      // SCHEMA_REGISTRY_AUTH goes with a registry.
      'kafka-bigquery-drain:schemaRegistryUrl': 'https://registry.example.com',
    });
    const envOf = (name: string) => {
      const job = program.ofType('gcp:cloudrunv2/job:Job').find((j) => j.inputs.name === name)!;
      const list: { name: string; value?: string }[] = job.inputs.template.template.containers[0].envs;
      return Object.fromEntries(list.filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));
    };
    envs = { drain: envOf('orders-drain'), operations: envOf('orders-ops') };
  });

  test.each(
    passedSettings.map((p) => [p.variable, p.key]),
  )('%s (%s) reaches the jobs as it is', (variable) => {
    expect(envs.drain[variable]).toBe(samples[variable as SettingName]);
    expect(envs.operations[variable]).toBe(samples[variable as SettingName]);
  });
});

test("docs/deploy.md's table of every setting is the one made from the map (else: npm run docs)", () => {
  const page = readFileSync(deployPage, 'utf8');
  expect(page).toBe(withDeployReference(page));
});

test('every key the program reads is an argument of the component (a setting’s key, or where and how it runs)', () => {
  const sources = ['config.ts']
    .map((file) => readFileSync(join(import.meta.dirname, '..', '..', 'infra', file), 'utf8'))
    .join('\n');
  const read = [
    ...sources.matchAll(
      /config\.(?:get|getNumber|getBoolean|getObject|getSecret|require|requireSecret|requireObject)(?:<[^>]*>)?\('([a-zA-Z]+)'\)/g,
    ),
  ].map((m) => m[1]!);
  expect(read.length).toBeGreaterThan(40);
  const settingKeys = Object.values(deployedSettings as Readonly<Record<string, Deployed>>).flatMap((d) =>
    'pulumi' in d ? [d.pulumi] : [],
  );
  const known = new Set<string>([...settingKeys, ...infraKeys]);
  expect([...new Set(read)].filter((key) => !known.has(key))).toEqual([]);
});
