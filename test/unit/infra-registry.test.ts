/**
 * The Pulumi program for Avro values whose schemas are in a registry: no table schema file (the drain
 * takes the columns from the registry), the registry's key and secret in Secret Manager only, and a table
 * laid out as configured (hourly partitions that expire, clustering of the user's choice).
 */
import { beforeAll, expect, test } from 'vitest';
import { runProgram } from '../support/pulumi-program.js';

let program: Awaited<ReturnType<typeof runProgram>>;
beforeAll(async () => {
  program = await runProgram({
    'kafka-bigquery-drain:schemaFile': null,
    'kafka-bigquery-drain:valueFormat': 'avro',
    'kafka-bigquery-drain:schemaRegistryUrl': 'https://psrc-1234.europe-west1.gcp.confluent.cloud',
    'kafka-bigquery-drain:schemaRegistryUsername': 'registry-key',
    'kafka-bigquery-drain:schemaRegistryPassword': 'registry-secret-value',
    'kafka-bigquery-drain:partitionType': 'HOUR',
    'kafka-bigquery-drain:partitionExpirationDays': '30',
    'kafka-bigquery-drain:clustering': '["_kafka_topic"]',
  });
});

const envOf = () =>
  program.one('gcp:cloudrunv2/job:Job').inputs.template.template.containers[0].envs as {
    name: string;
    value?: string;
    valueSource?: { secretKeyRef: { secret: string } };
  }[];

test('the job reads Avro from the registry; its credentials come from Secret Manager, never in plain', () => {
  const env = envOf();
  const plain = Object.fromEntries(env.map((e) => [e.name, e.value]));
  expect(plain).toMatchObject({
    VALUE_FORMAT: 'avro',
    SCHEMA_REGISTRY_URL: 'https://psrc-1234.europe-west1.gcp.confluent.cloud',
    BQ_PARTITION_TYPE: 'HOUR',
    BQ_PARTITION_EXPIRATION_DAYS: '30',
    BQ_CLUSTERING: '_kafka_topic',
  });
  expect(plain.BQ_SCHEMA_FILE).toBeUndefined();
  for (const name of ['SCHEMA_REGISTRY_USERNAME', 'SCHEMA_REGISTRY_PASSWORD']) {
    const entry = env.find((e) => e.name === name)!;
    expect(entry.value).toBeUndefined();
    expect(entry.valueSource!.secretKeyRef.secret).toMatch(/^orders-schema-registry-/);
  }
  expect(JSON.stringify(env)).not.toContain('registry-secret-value');
});

test('the table is made with the metadata columns and the configured layout; the drain adds the rest', () => {
  const target = program.ofType('gcp:bigquery/table:Table').find((t) => t.name.endsWith('-target'))!;
  const columns = (JSON.parse(target.inputs.schema) as { name: string }[]).map((f) => f.name);
  // Only the metadata columns (the values' columns come from the registry at the first run), counted.
  expect(columns.length).toBeGreaterThanOrEqual(6);
  expect(columns.filter((c) => !c.startsWith('_'))).toEqual([]);
  expect(columns).toEqual(expect.arrayContaining(['_kafka_topic', '_kafka_partition', '_kafka_offset']));
  expect(target.inputs.timePartitioning).toEqual({
    type: 'HOUR',
    field: '_kafka_timestamp',
    expirationMs: 2_592_000_000,
  });
  expect(target.inputs.clusterings).toEqual(['_kafka_topic']);
});
