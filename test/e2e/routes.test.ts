/**
 * Routes end to end (#14): one pipeline, three topics over two tables (one topic by name, two by regex),
 * default write mode. One table's BigQuery writes fail (a loopback proxy answers 503 to every request about
 * it): the other table's partitions drain all the same, the failing ones raise `stalled` and lose nothing;
 * once BigQuery is back, the next run catches up, and a topic created meanwhile that matches the regex is
 * drained by it without any change of configuration. `verify` and `status` report per table.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { e2eClients, errorsOf, runCli, runJob, runVerify, schemaFields, waitFor } from '../support/job.js';
import { createTopic, produce } from '../support/kafka.js';
import { kcatProduce } from '../support/producers.js';
import { pullAll } from '../support/pubsub.js';
import { stackEnv, uniqueName } from '../support/stack.js';

const clients = await e2eClients();
let proxy: FaultProxy | undefined;
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
});

const records = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) => ({
    partition: 0,
    value: JSON.stringify({ id: `r${from + i}`, n: from + i }),
  }));

/** `topic:offset` of every row of a table, sorted. */
async function rowsOf(dataset: string, table: string): Promise<string[]> {
  const [rows] = await clients.bigquery.query({
    query: `SELECT _kafka_topic AS t, _kafka_partition AS p, _kafka_offset AS o FROM \`${dataset}.${table}\``,
  });
  return rows.map((r: { t: string; p: number; o: number }) => `${r.t}:${r.p}:${r.o}`).sort();
}

const expected = (topic: string, partitions: number, count: number) =>
  Array.from({ length: partitions }, (_, p) => Array.from({ length: count }, (_, o) => `${topic}:${p}:${o}`))
    .flat()
    .sort();

test('three topics over two tables; one table failing stalls only its partitions; a new topic joins its route', async () => {
  const id = uniqueName('routes').replaceAll('_', '-');
  const dataset = id.replaceAll('-', '_');
  const orders = `${id}-orders`;
  const [pay1, pay2, pay3] = [`${id}-pay-1`, `${id}-pay-2`, `${id}-pay-3`];
  await createTopic(orders, 2);
  await createTopic(pay1, 1);
  await createTopic(pay2, 1);
  const schemaFile = join(tmpdir(), `${id}.schema.json`);
  writeFileSync(schemaFile, JSON.stringify(schemaFields));
  const routesFile = join(tmpdir(), `${id}.routes.json`);
  writeFileSync(
    routesFile,
    JSON.stringify([
      { topics: [orders], table: `${dataset}.orders`, schemaFile },
      // Regex topics are resolved against the broker's topic list at the start of every run.
      { topics: [`/${id}-pay-\\d+/`], table: `${dataset}.payments`, schemaFile },
    ]),
  );
  const deadLetterTopic = `${id}-dlq`;
  await clients.pubsub.createTopic(deadLetterTopic);
  const alertTopic = `${id}-alerts`;
  const [alerts] = await clients.pubsub.createTopic(alertTopic);
  const [alertSub] = await alerts.createSubscription(`${alertTopic}-sub`);
  const stack = stackEnv() as unknown as Record<string, string>;
  const env: Record<string, string> = {
    ...stack,
    PIPELINE_ID: id,
    ROUTES_FILE: routesFile,
    DEAD_LETTER_TOPIC: deadLetterTopic,
    ALERT_TOPIC: alertTopic,
    STALL_ALERT_SECONDS: '1',
    METADATA_SERVER_DETECTION: 'none',
    BQ_WRITE_MODE: 'storage-write',
    DRAIN_BUDGET_SECONDS: '30',
    LEASE_TTL_SECONDS: '5',
  };
  const alertsSeen: string[] = [];
  const pullAlerts = async () => {
    for (const m of await pullAll(clients, alertSub.name)) {
      const alert = JSON.parse(m.data.toString()) as {
        kind: string;
        state: string;
        topic: string;
        partition: number;
      };
      alertsSeen.push(`${alert.kind}:${alert.state}:${alert.topic}:${alert.partition}`);
    }
    return alertsSeen;
  };

  await produce(orders, [...records(0, 10), ...records(10, 10).map((r) => ({ ...r, partition: 1 }))]);
  await produce(pay1, records(0, 10));
  await produce(pay2, records(0, 10));

  // 1. Everything drains, each topic into its route's table.
  const first = await runJob(env);
  expect(first.code).toBe(0);
  expect(first.summary).toMatchObject({ stopReason: 'caught_up', rowsWritten: 40, partitionCount: 4 });
  expect(first.summary.tables).toEqual([
    expect.objectContaining({ table: `${dataset}.orders`, rowsWritten: 20, partitionCount: 2 }),
    expect.objectContaining({ table: `${dataset}.payments`, rowsWritten: 20, partitionCount: 2 }),
  ]);
  expect(first.summary.partitions.map((p) => `${p.topic}:${p.table}`)).toEqual([
    `${orders}:${dataset}.orders`,
    `${orders}:${dataset}.orders`,
    `${pay1}:${dataset}.payments`,
    `${pay2}:${dataset}.payments`,
  ]);
  expect(await rowsOf(dataset, 'orders')).toEqual(expected(orders, 2, 10));
  expect(await rowsOf(dataset, 'payments')).toEqual(
    [...expected(pay1, 1, 10), ...expected(pay2, 1, 10)].sort(),
  );

  // 2. BigQuery fails every request about the payments table (503); orders go on.
  await produce(orders, [...records(10, 5), ...records(20, 5).map((r) => ({ ...r, partition: 1 }))]);
  await produce(pay1, records(10, 5));
  await produce(pay2, records(10, 5));
  const lastProgress = Date.now();
  await waitFor('the stall threshold to pass', async () => Date.now() > lastProgress + 1_200);
  proxy = await startFaultProxy(stack.BIGQUERY_API_ENDPOINT!, ({ url, body }) =>
    `${url} ${body}`.includes('payments') ? { status: 503 } : 'pass',
  );
  const failing = { ...env, BIGQUERY_API_ENDPOINT: proxy.url, DRAIN_BUDGET_SECONDS: '15' };
  const second = await runJob(failing);
  // The payments writes are retried (a 503 is transient) until the budget ends the run; nothing of them
  // is committed. The orders route is not held up by them: it is caught up long before.
  expect(second.code, errorsOf(second.lines)).toBe(0);
  expect(second.summary.tables).toEqual([
    expect.objectContaining({ table: `${dataset}.orders`, stopReason: 'caught_up', rowsWritten: 10, lag: 0 }),
    expect.objectContaining({ table: `${dataset}.payments`, stopReason: 'budget', rowsWritten: 0, lag: 10 }),
  ]);
  expect(second.lines).toContainEqual(
    expect.objectContaining({
      message: 'the BigQuery target is not ready; writes will try again',
      table: `${dataset}.payments`,
    }),
  );
  expect(proxy.counts.get('503')).toBeGreaterThan(0);
  expect(await rowsOf(dataset, 'orders')).toEqual(
    [...expected(orders, 1, 15), ...expected(orders, 2, 15).filter((r) => r.includes(':1:'))].sort(),
  );
  expect(await rowsOf(dataset, 'payments')).toHaveLength(20); // nothing new, nothing lost
  const checkpoints = async () => {
    const docs = await clients.firestore.collection(`pipelines/${id}/partitions`).get();
    return Object.fromEntries(docs.docs.map((d) => [d.id, d.get('nextOffset') as number]));
  };
  expect(await checkpoints()).toEqual({
    [`${orders}~0`]: 15,
    [`${orders}~1`]: 15,
    [`${pay1}~0`]: 10,
    [`${pay2}~0`]: 10,
  });
  expect(await pullAlerts()).toEqual(
    expect.arrayContaining([`stalled:open:${pay1}:0`, `stalled:open:${pay2}:0`]),
  );
  expect(alertsSeen.filter((a) => a.includes(orders))).toEqual([]);

  // 3. BigQuery is back; a new topic matching the regex has appeared: the next run drains it too.
  await createTopic(pay3, 1);
  // Produced by a client no one here wrote: kcat, lz4-compressed.
  await kcatProduce(
    pay3,
    0,
    records(0, 7).map((r) => r.value),
    'lz4',
  );
  const third = await runJob(env);
  expect(third.code).toBe(0);
  expect(third.summary.partitions.map((p) => `${p.topic}:${p.table}`)).toContain(
    `${pay3}:${dataset}.payments`,
  );
  expect(await rowsOf(dataset, 'payments')).toEqual(
    [...expected(pay1, 1, 15), ...expected(pay2, 1, 15), ...expected(pay3, 1, 7)].sort(),
  );
  expect(await pullAlerts()).toEqual(
    expect.arrayContaining([`stalled:resolved:${pay1}:0`, `stalled:resolved:${pay2}:0`]),
  );

  // verify and status, per table.
  const verify = await runVerify(env);
  expect(verify.code).toBe(0);
  expect(new Set(verify.verdicts.map((v) => `${v.topic}:${v.table}`))).toEqual(
    new Set([
      `${orders}:${dataset}.orders`,
      `${pay1}:${dataset}.payments`,
      `${pay2}:${dataset}.payments`,
      `${pay3}:${dataset}.payments`,
    ]),
  );
  const table = await runCli(['verify'], env);
  expect(table.stdout).toContain(`verify ${dataset}.orders: 2 partitions, clean`);
  expect(table.stdout).toContain(`verify ${dataset}.payments: 3 partitions, clean`);
  const status = await runCli(['status', '--json'], env);
  expect(status.code).toBe(0);
  const partitions = JSON.parse(status.stdout) as { topic: string; table: string; lag: number }[];
  expect(partitions.map((p) => [p.topic, p.table, p.lag])).toEqual([
    [orders, `${dataset}.orders`, 0],
    [orders, `${dataset}.orders`, 0],
    [pay1, `${dataset}.payments`, 0],
    [pay2, `${dataset}.payments`, 0],
    [pay3, `${dataset}.payments`, 0],
  ]);
});
