/**
 * The demo drain: on the local stack, produce a few thousand order events (a handful malformed) to a
 * four-partition topic, run the real job once, and show what landed. Run it again: only what is new is
 * drained, from the checkpoints the last run left.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { v1 } from '@google-cloud/pubsub';
import kafkajs from 'kafkajs';
import { terminalWidth } from '../functions/cli/text-table.js';
import { createGoogleClients } from '../functions/google/clients.js';
import type { RunSummary } from '../functions/kernel/summary.js';
import { stackEnv } from '../stack/stack-env.js';
import { checkpointLines, deadLetterLines, summaryLines, type TableRow, tableLines } from './demo-tables.js';

const root = join(import.meta.dirname, '..');
const stack = stackEnv() as unknown as Record<string, string>;

const pipeline = 'demo';
const topic = 'demo-orders';
const partitions = 4;
const deadLetterTopic = 'demo-dead-letters';
const deadLetterSubscription = 'demo-dead-letters-inspect';
// Modest on purpose: the demo runs the same way on a fresh machine (merge mode, if chosen, is slow on the emulator).
const records = Number(process.env.DEMO_RECORDS ?? 600);

const clients = createGoogleClients({
  project: stack.GOOGLE_CLOUD_PROJECT!,
  emulators: { firestore: stack.FIRESTORE_EMULATOR_HOST!, pubsub: stack.PUBSUB_EMULATOR_HOST! },
  bigquery: {
    apiEndpoint: stack.BIGQUERY_API_ENDPOINT!,
    location: null,
    storageEndpoint: stack.BIGQUERY_STORAGE_ENDPOINT ?? null,
  },
});

async function prepare(): Promise<void> {
  // The BigQuery emulator keeps its tables in memory: after a restart (the test suite restarts it) the
  // demo's checkpoints in Firestore describe rows it no longer has. Start the demo pipeline afresh then.
  const [tableExists] = await clients.bigquery.dataset('demo').table('orders').exists();
  const state = clients.firestore.collection('pipelines').doc(pipeline);
  if (!tableExists && !(await state.collection('partitions').limit(1).get()).empty) {
    await clients.firestore.recursiveDelete(state);
    console.log(
      'the BigQuery emulator restarted since the last demo (it keeps tables in memory): starting afresh',
    );
  }
  const kafka = new kafkajs.Kafka({ brokers: [stack.KAFKA_BROKERS!], logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true });
  await admin.disconnect();
  const [exists] = await clients.pubsub.topic(deadLetterTopic).exists();
  if (!exists) await clients.pubsub.createTopic(deadLetterTopic);
  const [subExists] = await clients.pubsub.subscription(deadLetterSubscription).exists();
  if (!subExists) await clients.pubsub.topic(deadLetterTopic).createSubscription(deadLetterSubscription);

  const producer = kafka.producer();
  await producer.connect();
  const run = Date.now().toString(36);
  const messages = Array.from({ length: records }, (_, i) => {
    const order = {
      order_id: `${run}-${i}`,
      amount: (Math.round(Math.random() * 100_000) / 100).toFixed(2),
      currency: ['EUR', 'USD', 'JPY'][i % 3],
      placed_at: new Date().toISOString(),
      items: [{ sku: `sku-${i % 17}`, quantity: 1 + (i % 3) }],
    };
    // A handful of bad records: broken JSON, and a field the table does not have.
    const value =
      i % 499 === 7
        ? `{"order_id": "${run}-${i}", "amount": `
        : i % 997 === 11
          ? JSON.stringify({ ...order, coupon: 'X' })
          : JSON.stringify(order);
    return { key: `customer-${i % 101}`, value };
  });
  for (let i = 0; i < messages.length; i += 1000)
    await producer.send({ topic, messages: messages.slice(i, i + 1000) });
  await producer.disconnect();
  console.log(`produced ${records} records to ${topic} (${partitions} partitions)`);
}

const jobEnv = {
  ...process.env,
  ...stack,
  METADATA_SERVER_DETECTION: 'none',
  PIPELINE_ID: pipeline,
  KAFKA_TOPICS: topic,
  BQ_DATASET: 'demo',
  BQ_TABLE: 'orders',
  BQ_SCHEMA_FILE: join(root, 'demo', 'orders.schema.json'),
  DEAD_LETTER_TOPIC: deadLetterTopic,
  DRAIN_BUDGET_SECONDS: '120',
  LEASE_TTL_SECONDS: '30',
};

function runDrain(): Promise<RunSummary | undefined> {
  console.log('running: kafka-bigquery-drain run   (BQ_WRITE_MODE=storage-write, the default: exactly once)');
  const child = spawn(process.execPath, [join(root, 'bin', 'kafka-bigquery-drain.mjs'), 'run'], {
    env: jobEnv,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  return new Promise((resolve) => {
    child.on('exit', (code) => {
      const summary = out
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .findLast((line): line is RunSummary & Record<string, unknown> => line.event === 'run_summary');
      console.log(`job exited with code ${code}`);
      resolve(summary);
    });
  });
}

async function show(summary: RunSummary | undefined): Promise<void> {
  const width = terminalWidth(false);
  const print = (lines: string[]) => console.log(`\n${lines.join('\n')}`);
  if (summary) print(summaryLines(summary, width));
  const [rows] = await clients.bigquery.query({
    query:
      'SELECT _kafka_partition AS kafka_partition, COUNT(*) AS rows_in_table, MIN(_kafka_offset) AS min_offset, MAX(_kafka_offset) AS max_offset FROM `demo.orders` GROUP BY 1 ORDER BY 1',
  });
  print(tableLines('demo.orders', rows as TableRow[], width));

  const subscriber = new v1.SubscriberClient({
    apiEndpoint: clients.pubsub.options.servicePath,
    port: Number(clients.pubsub.options.port),
    sslCreds: clients.pubsub.options.sslCreds,
  });
  const subscription = `projects/${stack.GOOGLE_CLOUD_PROJECT}/subscriptions/${deadLetterSubscription}`;
  const [pulled] = await subscriber.pull({ subscription, maxMessages: 1000, returnImmediately: true });
  const letters = pulled.receivedMessages ?? [];
  if (letters.length > 0)
    await subscriber.acknowledge({ subscription, ackIds: letters.map((m) => m.ackId!) });
  await subscriber.close();
  const attribute = (m: (typeof letters)[number], name: string) => m.message?.attributes?.[name] ?? '';
  print(
    deadLetterLines(
      deadLetterTopic,
      letters.map((m) => ({
        partition: attribute(m, 'source_partition'),
        offset: attribute(m, 'source_offset'),
        kind: attribute(m, 'error_kind'),
        reason: attribute(m, 'error_message'),
      })),
      width,
    ),
  );

  const path = `pipelines/${pipeline}/partitions`;
  const docs = await clients.firestore.collection(path).get();
  print(
    checkpointLines(
      path,
      docs.docs.map((d) => ({
        partition: d.id,
        nextOffset: d.get('nextOffset'),
        rowsWritten: d.get('rowsWritten'),
        deadLettered: d.get('deadLettered'),
      })),
      width,
    ),
  );
}

function verify(): Promise<number | null> {
  console.log('\nrunning: kafka-bigquery-drain verify   (continuity ledger against the table)');
  const child = spawn(process.execPath, [join(root, 'bin', 'kafka-bigquery-drain.mjs'), 'verify'], {
    env: jobEnv,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  return new Promise((resolve) => child.on('exit', resolve));
}

await prepare();
const summary = await runDrain();
await show(summary);
const verified = await verify();
await clients.close();
console.log(`
next: run \`npm run demo\` again: it produces ${records} more and drains only those, from the checkpoints.
      Stop it with Ctrl-C mid-run and start it again: nothing lost, nothing written twice (docs/guarantees.md).`);
process.exit(summary?.stopReason === 'error' || summary === undefined || verified !== 0 ? 1 : 0);
