/**
 * `npm run bench`: the same records, measured side by side in one run. Produces N records of about 1 KB
 * JSON to P partitions, then drains them (a) with a bare kafkajs consumer that does nothing, (b) with our
 * drain and a null sink, (c) with our drain into the BigQuery emulator once per write mode (storage-write
 * and insert-all on the same N records; merge on the first M, as the emulator's MERGE is quadratic), each
 * from offset 0 in a process of its own, and prints records/s, the ratios b/a and c/a, Firestore writes
 * per 10,000 records and peak RSS. Timing goals live here, never in tests.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PubSub } from '@google-cloud/pubsub';
import kafkajs from 'kafkajs';
import { stackEnv } from '../stack/stack-env.js';

const root = join(import.meta.dirname, '..');
const stack = stackEnv() as unknown as Record<string, string>;
const records = Number(process.env.BENCH_RECORDS ?? 20_000);
const partitions = Number(process.env.BENCH_PARTITIONS ?? 4);
const batch = process.env.BENCH_BATCH ?? '500';
/** Merge mode on the emulator joins every staged row with every target row: it gets fewer records. */
const mergeRecords = Number(process.env.BENCH_MERGE_RECORDS ?? 1_000);
const run = `bench-${Date.now().toString(36)}`;

async function produce(topic: string, count: number): Promise<void> {
  const kafka = new kafkajs.Kafka({ brokers: [stack.KAFKA_BROKERS!], logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  const pad = 'x'.repeat(960);
  for (let i = 0; i < count; i += 1000) {
    const messages = Array.from({ length: Math.min(1000, count - i) }, (_, k) => ({
      key: `k${i + k}`,
      value: JSON.stringify({ id: `r${i + k}`, n: i + k, note: pad }),
    }));
    await producer.send({ topic, messages });
  }
  await producer.disconnect();
}

interface Result {
  variant: string;
  records: number;
  ms: number;
  peakRssMb: number;
  firestoreWrites?: number;
  commits?: number;
}

function variant(
  name: string,
  topic: string,
  count: number,
  pipeline: string,
  extra: Record<string, string> = {},
): Result {
  const schemaFile = join(tmpdir(), `${run}.schema.json`);
  writeFileSync(
    schemaFile,
    JSON.stringify([
      { name: 'id', type: 'STRING' },
      { name: 'n', type: 'INT64' },
      { name: 'note', type: 'STRING' },
    ]),
  );
  const out = execFileSync(
    process.execPath,
    ['--import', 'tsx', join(root, 'bench', 'variant.ts'), name, topic, String(count)],
    {
      env: {
        ...process.env,
        ...stack,
        METADATA_SERVER_DETECTION: 'none',
        PIPELINE_ID: pipeline,
        KAFKA_TOPICS: topic,
        BQ_DATASET: pipeline.replaceAll('-', '_'),
        BQ_TABLE: 'events',
        BQ_SCHEMA_FILE: schemaFile,
        DEAD_LETTER_TOPIC: `${run}-dlq`,
        DRAIN_BUDGET_SECONDS: '600',
        BATCH_MAX_RECORDS: batch,
        ...extra,
      },
      encoding: 'utf8',
    },
  );
  return JSON.parse(out.trim().split('\n').at(-1)!) as Result;
}

const rate = (r: Result) => Math.round((r.records / r.ms) * 1000);

const topic = `${run}-n`;
const topicDouble = `${run}-2n`;
console.log(
  `producing ${records} records (~1 KB JSON) to ${partitions} partitions, and ${2 * records} to another topic...`,
);
await produce(topic, records);
await produce(topicDouble, 2 * records);
const topicMerge = `${run}-m`;
await produce(topicMerge, mergeRecords);
await new PubSub({
  projectId: stack.GOOGLE_CLOUD_PROJECT,
  apiEndpoint: stack.PUBSUB_EMULATOR_HOST,
}).createTopic(`${run}-dlq`);

const a = variant('raw', topic, records, `${run}-a`);
const b = variant('null', topic, records, `${run}-b`);
const c = variant('bigquery', topic, records, `${run}-c`, { BQ_WRITE_MODE: 'storage-write' });
const cInsert = variant('bigquery', topic, records, `${run}-ci`, { BQ_WRITE_MODE: 'insert-all' });
const cMerge = variant('bigquery', topicMerge, mergeRecords, `${run}-cm`, { BQ_WRITE_MODE: 'merge' });
const modes = new Map<Result, string>([
  [c, 'storage-write'],
  [cInsert, 'insert-all'],
  [cMerge, 'merge'],
]);
const a2 = variant('raw', topicDouble, 2 * records, `${run}-a2`);
const b2 = variant('null', topicDouble, 2 * records, `${run}-b2`);

console.table(
  [a, b, c, cInsert, cMerge, a2, b2].map((r) => ({
    variant:
      r.variant === 'bigquery'
        ? `(c) drain → BigQuery emulator, ${modes.get(r)}`
        : { raw: '(a) raw kafkajs', null: '(b) drain, null sink' }[r.variant],
    records: r.records,
    seconds: (r.ms / 1000).toFixed(2),
    'records/s': rate(r),
    'firestore writes / 10k':
      r.firestoreWrites === undefined ? '' : Math.round((r.firestoreWrites / r.records) * 10_000),
    commits: r.commits ?? '',
    'peak RSS MB': r.peakRssMb,
  })),
);
console.log(
  `b/a = ${(rate(b) / rate(a)).toFixed(2)}   c/a = ${(rate(c) / rate(a)).toFixed(2)} (storage-write)   (target b/a >= 0.8; whole runs, start-up included)`,
);
console.log(
  `rows/s into the emulator by write mode: storage-write ${rate(c)}, insert-all ${rate(cInsert)} (${records} records each), merge ${rate(cMerge)} (${mergeRecords} records)`,
);
// Start-up (clients, leases, group join) is a fixed cost per run; the second N records show the steady rate.
const marginal = (one: Result, two: Result) =>
  Math.round(((two.records - one.records) / Math.max(1, two.ms - one.ms)) * 1000);
console.log(
  `steady state (the extra ${records} records of the 2N runs): raw ${marginal(a, a2)}/s, drain null sink ${marginal(b, b2)}/s, b/a = ${(marginal(b, b2) / marginal(a, a2)).toFixed(2)}`,
);
console.log(
  `peak RSS, null sink: ${b.peakRssMb} MB for ${records} records, ${b2.peakRssMb} MB for ${2 * records} (bounded by the batch, not the input, if these are close)`,
);
console.log(
  `batch: BATCH_MAX_RECORDS=${batch}; each variant reads from offset 0 in its own process, start-up (group join, leases) included`,
);
