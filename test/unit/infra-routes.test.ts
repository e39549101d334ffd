/**
 * The Pulumi program with a routes file: every route's table with its own schema (and error table), every
 * dataset granted to the job, and the job told where the routes file is (mounted: the image is configured).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, expect, test } from 'vitest';
import { runProgram } from '../support/pulumi-program.js';

const folder = join(tmpdir(), `infra-routes-${process.pid}`);
mkdirSync(join(folder, 'schemas'), { recursive: true });
writeFileSync(join(folder, 'schemas', 'orders.json'), JSON.stringify([{ name: 'order_id', type: 'STRING' }]));
writeFileSync(
  join(folder, 'schemas', 'payments.json'),
  JSON.stringify([{ name: 'amount', type: 'NUMERIC' }]),
);
writeFileSync(
  join(folder, 'routes.json'),
  JSON.stringify([
    { topics: ['orders'], table: 'shop.orders', schemaFile: 'schemas/orders.json' },
    {
      topics: ['/pay-.*/'],
      table: 'finance.payments',
      schemaFile: 'schemas/payments.json',
      headersColumn: true,
    },
  ]),
);

let program: Awaited<ReturnType<typeof runProgram>>;
beforeAll(async () => {
  program = await runProgram({
    'kafka-bigquery-drain:routesFile': join(folder, 'routes.json'),
    'kafka-bigquery-drain:kafkaTopics': null,
    'kafka-bigquery-drain:schemaFile': null,
  });
});

test('routes: each table with its schema and error table, each dataset granted, ROUTES_FILE mounted beside the configured image', () => {
  const tables = program.ofType('gcp:bigquery/table:Table');
  const columns = (id: string) =>
    JSON.parse(tables.find((t) => t.inputs.tableId === id)!.inputs.schema).map(
      (f: { name: string }) => f.name,
    );
  expect(tables.map((t) => `${t.inputs.datasetId}.${t.inputs.tableId}`).sort()).toEqual([
    'finance.payments',
    'finance.payments_dead_letters',
    'shop.orders',
    'shop.orders_dead_letters',
  ]);
  expect(columns('orders')).toContain('order_id');
  expect(columns('orders')).not.toContain('_kafka_headers');
  expect(columns('payments')).toEqual(expect.arrayContaining(['amount', '_kafka_headers']));
  expect(program.ofType('gcp:bigquery/dataset:Dataset').map((d) => d.inputs.datasetId)).toEqual([
    'shop',
    'finance',
  ]);
  const grants = program
    .ofType('gcp:bigquery/datasetIamMember:DatasetIamMember')
    .filter((g) => g.inputs.member === 'serviceAccount:orders-drain@proj.iam.gserviceaccount.com');
  expect(grants.map((g) => [g.inputs.datasetId, g.inputs.role])).toEqual([
    ['shop', 'roles/bigquery.dataEditor'],
    ['finance', 'roles/bigquery.dataEditor'],
  ]);
  const envs = program.one('gcp:cloudrunv2/job:Job').inputs.template.template.containers[0].envs as {
    name: string;
    value?: string;
  }[];
  const plain = Object.fromEntries(envs.map((e) => [e.name, e.value]));
  // The configured image carries none of this folder: it is mounted (drain-job.ts mountedRoutes).
  expect(plain.ROUTES_FILE).toBe('/config/routes/routes.json');
  for (const name of ['KAFKA_TOPICS', 'BQ_TABLE', 'BQ_SCHEMA_FILE']) expect(plain[name]).toBeUndefined();
});
