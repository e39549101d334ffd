/**
 * One topic into several tables (#41): routes with `when`. By a header (records from kcat), into two tables
 * of one name in two datasets, in storage-write mode and in load mode (#67: a job a table, one intent
 * naming them), killed at every point of a flush and by SIGKILLs at random moments: each record in
 * exactly one table or dead-letter once, `verify` reconciling the partition against both tables together.
 * By the Avro record's full name through the registry (Python's AvroSerializer with the
 * TopicRecordNameStrategy: two record types, two subjects, one topic), exact values, then under kills. By a JSON field in merge mode, with
 * a route without `when` taking the rest.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import {
  createPipeline,
  e2eClients,
  leasesFree,
  type Pipeline,
  runJob,
  runVerify,
  schemaFields,
  startJob,
  waitFor,
} from '../support/job.js';
import { kcatProduce, pythonProduce } from '../support/producers.js';
import { pullAll } from '../support/pubsub.js';
import { stackEnv } from '../support/stack.js';

const clients = await e2eClients();
const registryUrl = (stackEnv() as unknown as Record<string, string>).SCHEMA_REGISTRY_URL!;

/** A pipeline whose topic the routes file splits: the routes get the pipeline's dataset. */
async function routedPipeline(partitions: number, routes: object[], env: Record<string, string>) {
  const pipeline = await createPipeline(clients, partitions, env);
  const routesFile = join(tmpdir(), `${pipeline.id}.routes.json`);
  writeFileSync(routesFile, JSON.stringify(routes));
  for (const key of ['KAFKA_TOPICS', 'BQ_TABLE', 'BQ_SCHEMA_FILE']) delete pipeline.env[key];
  pipeline.env.ROUTES_FILE = routesFile;
  return pipeline;
}

function schemaFile(pipeline: Pick<Pipeline, 'id'>): string {
  const file = join(tmpdir(), `${pipeline.id}.when.schema.json`);
  writeFileSync(file, JSON.stringify(schemaFields));
  return file;
}

/** `partition:offset` of every row of a table (duplicates kept), sorted. */
async function offsetsOf(dataset: string, table: string): Promise<string[]> {
  const [rows] = await clients.bigquery
    .query({ query: `SELECT _kafka_partition AS p, _kafka_offset AS o FROM \`${dataset}.${table}\`` })
    .catch((error: unknown) => {
      if (/not found/i.test(String(error))) return [[]];
      throw error;
    });
  return (rows as { p: number; o: number }[]).map((r) => `${r.p}:${r.o}`).sort();
}

/** Every fault point of a mode's flush (load: of its streamed loads, a job a table, one intent). */
const byHeader: { mode: string; points: string[]; env: Record<string, string> }[] = [
  {
    mode: 'storage-write',
    points: ['after-append', 'after-finalize', 'after-intent', 'after-batch-commit', 'mid-commit'],
    env: {},
  },
  {
    mode: 'load',
    // after-load-submitted: the first table's job made, the second's not yet (load-stream.ts's settle).
    points: ['after-error-table', 'after-intent', 'after-load-submitted', 'after-load-done', 'mid-commit'],
    // One run a day, so that every run may take the day's loads (as the crash matrix).
    env: { LOAD_JOBS_PER_TABLE_PER_DAY: '1500', SCHEDULE_PERIOD_SECONDS: '86400' },
  },
];

test.each(
  byHeader,
)('by header, $mode: every fault point and SIGKILLs, each record in exactly one table', async ({
  mode,
  points,
  env,
}) => {
  const partitions = 3;
  const pipeline = await routedPipeline(partitions, [], {
    BQ_WRITE_MODE: mode,
    BATCH_MAX_RECORDS: '7',
    LEASE_TTL_SECONDS: '3',
    DRAIN_BUDGET_SECONDS: '20',
    ...env,
  });
  const { dataset, topic } = pipeline;
  // Refunds go to a table of the same name in a second dataset (#77: load's job ids named the table alone,
  // and one table's records were lost while every run exited 0).
  const refundsDataset = `${dataset}_refunds`;
  const file = schemaFile(pipeline);
  writeFileSync(
    pipeline.env.ROUTES_FILE!,
    JSON.stringify([
      { topics: [topic], table: `${dataset}.orders`, schemaFile: file, when: { header: { kind: 'order' } } },
      {
        topics: [topic],
        table: `${refundsDataset}.orders`,
        schemaFile: file,
        when: { header: { kind: 'refund' } },
      },
    ]),
  );

  // Per partition, rounds of orders (one malformed), refunds, and records with no kind (no route's).
  const expected = {
    orders: [] as string[],
    refunds: [] as string[],
    malformed: [] as string[],
    none: [] as string[],
  };
  const offsets = Array.from({ length: partitions }, () => 0);
  let rounds = 0;
  /** A round on every partition: orders (one malformed), refunds, a record with no kind (no route's). */
  const produceRound = async () => {
    const round = rounds++;
    for (let p = 0; p < partitions; p++) {
      const orders = Array.from({ length: 12 }, (_, i) =>
        JSON.stringify({ id: `o${p}-${round}-${i}`, n: i }),
      );
      orders[5] = '{not json';
      await kcatProduce(topic, p, orders, 'none', { kind: 'order' });
      for (let i = 0; i < orders.length; i++)
        (i === 5 ? expected.malformed : expected.orders).push(`${p}:${offsets[p]!++}`);
      const refunds = Array.from({ length: 9 }, (_, i) =>
        JSON.stringify({ id: `r${p}-${round}-${i}`, n: i }),
      );
      await kcatProduce(topic, p, refunds, 'none', { kind: 'refund' });
      for (let i = 0; i < refunds.length; i++) expected.refunds.push(`${p}:${offsets[p]!++}`);
      await kcatProduce(topic, p, [JSON.stringify({ id: `x${p}-${round}`, n: 0 })], 'none');
      expected.none.push(`${p}:${offsets[p]!++}`);
    }
  };
  for (let round = 0; round < 4; round++) await produceRound();

  const killedAt = new Map<string, number>();
  for (const point of points) {
    // Each point until it has killed a run (at most twice): the crash matrix kills each twice already.
    for (let i = 0; i < 2 && !killedAt.has(point); i++) {
      await waitFor('leases to expire', () => leasesFree(clients, pipeline), 30_000);
      // load mode: a round before each fault run, so that the data outlasts them (a killed run's load may
      // be finished by the next, which then reads nothing more: its points would go unreached).
      if (mode === 'load') await produceRound();
      const job = startJob({ ...pipeline.env, KBD_FAULT_POINT: point });
      if ((await job.exited).signal === 'SIGKILL') killedAt.set(point, (killedAt.get(point) ?? 0) + 1);
    }
  }
  for (let kills = 0; kills < 6; kills++) {
    await waitFor('leases to expire', () => leasesFree(clients, pipeline), 30_000);
    const job = startJob(pipeline.env);
    await new Promise((resolve) => setTimeout(resolve, 300 + Math.random() * 1500));
    job.child.kill('SIGKILL');
    await job.exited;
  }
  await waitFor('leases to expire', () => leasesFree(clients, pipeline), 30_000);
  await waitFor(
    'a clean run to catch up',
    async () => {
      const { code, summary } = await runJob(pipeline.env);
      expect(code).toBe(0);
      return summary.stopReason === 'caught_up' && summary.partitions.every((p) => p.lag === 0);
    },
    300_000,
  );
  // Every point of the flush killed a run at least once (the data outlasts the ten fault runs).
  for (const point of points) expect(killedAt.get(point) ?? 0, point).toBeGreaterThan(0);

  // Each record in exactly one place, once: its kind's table, or the first route's error table.
  expect(await offsetsOf(dataset, 'orders')).toEqual([...expected.orders].sort());
  expect(await offsetsOf(refundsDataset, 'orders')).toEqual([...expected.refunds].sort());
  expect(await offsetsOf(dataset, 'orders_dead_letters')).toEqual(
    [...expected.malformed, ...expected.none].sort(),
  );
  expect(await offsetsOf(refundsDataset, 'orders_dead_letters')).toEqual([]);
  const [reasons] = await clients.bigquery.query({
    query: `SELECT error_kind AS kind, error_message AS message FROM \`${dataset}.orders_dead_letters\` WHERE error_kind = 'schema'`,
  });
  expect(reasons).toHaveLength(expected.none.length);
  expect(reasons[0].message).toContain(`no route of topic "${topic}" takes this record`);
  // Pub/Sub has each dead letter at least once.
  const letters = await pullAll(clients, pipeline.deadLetterSubscription);
  expect(
    new Set(letters.map((m) => `${m.attributes.source_partition}:${m.attributes.source_offset}`)),
  ).toEqual(new Set([...expected.malformed, ...expected.none]));

  // verify reconciles each partition against both tables together.
  const verify = await runVerify(pipeline.env);
  expect(verify.code).toBe(0);
  expect(verify.verdicts).toHaveLength(partitions);
  for (const verdict of verify.verdicts)
    expect(verdict).toMatchObject({
      table: `${dataset}.orders + ${refundsDataset}.orders`,
      ok: true,
      ledgerRows: rounds * (11 + 9),
      deadLetters: rounds * 2,
      tableRows: rounds * (11 + 9),
      errorTableRows: rounds * 2,
      duplicates: 0,
    });
}, 900_000);

test('by Avro record name through the registry: two record types of one topic into two tables, then under kills', async () => {
  const pipeline = await routedPipeline(1, [], { BQ_WRITE_MODE: 'storage-write' });
  const { dataset, topic } = pipeline;
  const order = {
    type: 'record',
    name: 'Order',
    namespace: 'acme.shop',
    fields: [
      { name: 'id', type: 'string' },
      { name: 'amount', type: 'long' },
    ],
  };
  const refund = {
    type: 'record',
    name: 'Refund',
    namespace: 'acme.shop',
    fields: [
      { name: 'id', type: 'string' },
      { name: 'order_id', type: 'string' },
      { name: 'reason', type: ['null', 'string'], default: null },
    ],
  };
  const other = {
    type: 'record',
    name: 'Audit',
    namespace: 'acme.shop',
    fields: [{ name: 'who', type: 'string' }],
  };
  const produce = (schema: object, values: string) =>
    pythonProduce({
      topic,
      format: 'avro',
      schema: JSON.stringify(schema),
      values,
      partition: 0,
      registry: registryUrl,
      subject_strategy: 'topic_record',
    });
  await produce(order, "[{'id': 'o1', 'amount': 100}, {'id': 'o2', 'amount': 250}]");
  await produce(refund, "[{'id': 'r1', 'order_id': 'o1', 'reason': 'late'}]");
  await produce(other, "[{'who': 'ops'}]");
  await produce(order, "[{'id': 'o3', 'amount': 7}]");
  await produce(refund, "[{'id': 'r2', 'order_id': 'o3', 'reason': None}]");
  writeFileSync(
    pipeline.env.ROUTES_FILE!,
    JSON.stringify([
      {
        topics: [topic],
        table: `${dataset}.orders`,
        valueFormat: 'avro',
        valueSubject: `${topic}-acme.shop.Order`,
        when: { recordName: 'acme.shop.Order' },
      },
      {
        topics: [topic],
        table: `${dataset}.refunds`,
        valueFormat: 'avro',
        valueSubject: `${topic}-acme.shop.Refund`,
        when: { recordName: 'acme.shop.Refund' },
      },
    ]),
  );
  pipeline.env.SCHEMA_REGISTRY_URL = registryUrl;

  const run = await runJob(pipeline.env);
  expect(run.code).toBe(0);
  expect(run.summary).toMatchObject({ stopReason: 'caught_up', rowsWritten: 5, deadLettered: 1 });
  const [orders] = await clients.bigquery.query({
    query: `SELECT id, amount, _kafka_offset AS o FROM \`${dataset}.orders\` ORDER BY id`,
  });
  expect(JSON.parse(JSON.stringify(orders))).toEqual([
    { id: 'o1', amount: 100, o: 0 },
    { id: 'o2', amount: 250, o: 1 },
    { id: 'o3', amount: 7, o: 4 },
  ]);
  const [refunds] = await clients.bigquery.query({
    query: `SELECT id, order_id, reason, _kafka_offset AS o FROM \`${dataset}.refunds\` ORDER BY id`,
  });
  expect(JSON.parse(JSON.stringify(refunds))).toEqual([
    { id: 'r1', order_id: 'o1', reason: 'late', o: 2 },
    { id: 'r2', order_id: 'o3', reason: null, o: 5 },
  ]);
  expect(await offsetsOf(dataset, 'orders_dead_letters')).toEqual(['0:3']);
  const verify = await runVerify(pipeline.env);
  expect(verify.code).toBe(0);
  expect(verify.verdicts).toEqual([
    expect.objectContaining({ ok: true, ledgerRows: 5, deadLetters: 1, tableRows: 5 }),
  ]);

  // Then more of each type, drained under kills at the points of a flush and at random: exactly once.
  for (let round = 0; round < 3; round++) {
    await produce(order, `[{'id': 'k${round}-%d' % i, 'amount': i} for i in range(12)]`);
    await produce(refund, `[{'id': 'q${round}-%d' % i, 'order_id': 'o1', 'reason': None} for i in range(8)]`);
    await produce(other, "[{'who': 'cron'}]");
  }
  const killed = {
    ...pipeline.env,
    BATCH_MAX_RECORDS: '5',
    LEASE_TTL_SECONDS: '3',
    DRAIN_BUDGET_SECONDS: '20',
  };
  for (const point of ['after-append', 'after-intent', 'after-batch-commit', 'mid-commit']) {
    await waitFor('leases to expire', () => leasesFree(clients, pipeline), 30_000);
    await startJob({ ...killed, KBD_FAULT_POINT: point }).exited;
  }
  for (let kills = 0; kills < 3; kills++) {
    await waitFor('leases to expire', () => leasesFree(clients, pipeline), 30_000);
    const job = startJob(killed);
    await new Promise((resolve) => setTimeout(resolve, 500 + Math.random() * 1500));
    job.child.kill('SIGKILL');
    await job.exited;
  }
  await waitFor('leases to expire', () => leasesFree(clients, pipeline), 30_000);
  await waitFor(
    'a clean run to catch up',
    async () => {
      const { code, summary } = await runJob(killed);
      expect(code).toBe(0);
      return summary.stopReason === 'caught_up' && summary.partitions.every((p) => p.lag === 0);
    },
    300_000,
  );
  const idsOf = async (table: string) => {
    const [rows] = await clients.bigquery.query({ query: `SELECT id FROM \`${dataset}.${table}\`` });
    return (rows as { id: string }[]).map((r) => r.id).sort();
  };
  const ids = (prefix: string, each: number) =>
    [0, 1, 2].flatMap((round) => Array.from({ length: each }, (_, i) => `${prefix}${round}-${i}`));
  expect(await idsOf('orders')).toEqual(['o1', 'o2', 'o3', ...ids('k', 12)].sort());
  expect(await idsOf('refunds')).toEqual(['r1', 'r2', ...ids('q', 8)].sort());
  const letters = await offsetsOf(dataset, 'orders_dead_letters');
  expect(letters).toHaveLength(4);
  expect(new Set(letters).size).toBe(4);
  const after = await runVerify(pipeline.env);
  expect(after.code).toBe(0);
  expect(after.verdicts).toEqual([
    expect.objectContaining({ ok: true, ledgerRows: 5 + 60, deadLetters: 4, tableRows: 65, duplicates: 0 }),
  ]);
}, 600_000);

test('by a JSON field in merge mode, a route without `when` taking the rest', async () => {
  const pipeline = await routedPipeline(1, [], { BQ_WRITE_MODE: 'merge' });
  const { dataset, topic } = pipeline;
  const file = schemaFile(pipeline);
  writeFileSync(
    pipeline.env.ROUTES_FILE!,
    JSON.stringify([
      { topics: [topic], table: `${dataset}.big`, schemaFile: file, when: { field: { n: 1000 } } },
      { topics: [topic], table: `${dataset}.rest`, schemaFile: file },
    ]),
  );
  const values = [1, 1000, 2, 1000, 3].map((n, i) => JSON.stringify({ id: `v${i}`, n }));
  await kcatProduce(topic, 0, values, 'none');
  for (let round = 0; round < 2; round++) {
    // The second run reads nothing new: the checkpoint moved past both tables' rows.
    const run = await runJob(pipeline.env);
    expect(run.code).toBe(0);
    expect(run.summary).toMatchObject({ stopReason: 'caught_up', rowsWritten: round === 0 ? 5 : 0 });
  }
  expect(await offsetsOf(dataset, 'big')).toEqual(['0:1', '0:3']);
  expect(await offsetsOf(dataset, 'rest')).toEqual(['0:0', '0:2', '0:4']);
  const verify = await runVerify(pipeline.env);
  expect(verify.code).toBe(0);
  expect(verify.verdicts).toEqual([expect.objectContaining({ ok: true, ledgerRows: 5, tableRows: 5 })]);
}, 300_000);
