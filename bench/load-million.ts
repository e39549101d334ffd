/**
 * The `load` bench of issue #67 (part of `npm run bench`; alone: `npm run bench:load`): a backlog of
 * BENCH_LOAD_RECORDS (1,000,000 by default; 0 skips it) `small` records of about 200 bytes over 8
 * partitions, drained by one run allowed one load job (LOAD_JOBS_PER_TABLE_PER_DAY=1, one run a day), within
 * a 600 s budget, by the job as its image runs it (the bundle, the ENTRYPOINT's node flags). Printed: the
 * rows loaded and the load jobs the ledger names, rows twice (must be 0), the run's time, its records/s and
 * MB/s, and the process's peak RSS (VmHWM, read from /proc while it runs; the aim is ≤ 256 MB).
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PubSub } from '@google-cloud/pubsub';
import { stackEnv } from '../stack/stack-env.js';
import { stackClients } from '../test/support/stack.js';
import { runImage } from './image-run.js';
import { produce } from './produce.js';
import { small } from './shapes.js';

const records = Number(process.env.BENCH_LOAD_RECORDS ?? 1_000_000);
const partitions = 8;

export async function loadMillion(): Promise<string[]> {
  if (records === 0) return [];
  const stack = stackEnv() as unknown as Record<string, string>;
  const run = `bench-load-${Date.now().toString(36)}`;
  const schemaFile = join(tmpdir(), `${run}.schema.json`);
  writeFileSync(schemaFile, JSON.stringify(small.schema));
  const bytes = Buffer.byteLength(small.value(records >> 1));
  console.log(`load bench: producing ${records} records of ~${bytes} B to ${partitions} partitions...`);
  await produce(stack.KAFKA_BROKERS!, run, records, partitions, small.value);
  await new PubSub({
    projectId: stack.GOOGLE_CLOUD_PROJECT,
    apiEndpoint: stack.PUBSUB_EMULATOR_HOST,
  }).createTopic(`${run}-dlq`);
  const dataset = run.replaceAll('-', '_');
  const started = Date.now();
  const result = await runImage({
    ...stack,
    METADATA_SERVER_DETECTION: 'none',
    PIPELINE_ID: run,
    KAFKA_TOPICS: run,
    BQ_DATASET: dataset,
    BQ_TABLE: 'events',
    BQ_SCHEMA_FILE: schemaFile,
    DEAD_LETTER_TOPIC: `${run}-dlq`,
    BQ_WRITE_MODE: 'load',
    LOAD_JOBS_PER_TABLE_PER_DAY: '1',
    SCHEDULE_PERIOD_SECONDS: '86400',
    DRAIN_BUDGET_SECONDS: '600',
    ...(process.env.BENCH_BATCH_MAX_BYTES ? { BATCH_MAX_BYTES: process.env.BENCH_BATCH_MAX_BYTES } : {}),
  });
  const seconds = (Date.now() - started) / 1000;
  const clients = await stackClients();
  try {
    const [[counts]] = (await clients.bigquery.query({
      query: `SELECT COUNT(*) AS n, COUNT(DISTINCT _kafka_partition * 100000000 + _kafka_offset) AS d FROM \`${dataset}.events\``,
    })) as unknown as [{ n: number; d: number }[]];
    const jobs = new Set<string>();
    for (let p = 0; p < partitions; p++) {
      const ledger = await clients.firestore
        .collection(`pipelines/${run}/partitions/${run}~${p}/ledger`)
        .get();
      for (const entry of ledger.docs)
        for (const job of (entry.get('streams') as string[] | undefined) ?? []) jobs.add(job);
    }
    const rows = Number(counts!.n);
    const line =
      `load, one job allowed, ${records} records of ~${bytes} B over ${partitions} partitions: exit ${result.code} ` +
      `(${result.summary?.stopReason ?? 'no summary'}, ${result.summary?.recordsRead ?? '?'} records committed by the run), ${rows} rows loaded in ${jobs.size} job(s) (${rows / Math.max(1, jobs.size)} a job), ` +
      `${rows - Number(counts!.d)} twice, ${seconds.toFixed(1)} s whole (${Math.round(rows / seconds)} records/s, ` +
      `${((rows * bytes) / seconds / 1e6).toFixed(2)} MB/s of JSON), peak RSS ${result.peakRssMb} MB (aim ≤ 256 MB), CPU ${result.cpuSeconds.toFixed(1)} s (${((result.cpuSeconds * 1e6) / Math.max(1, rows)).toFixed(1)} µs a record)`;
    if (result.code !== 0) console.log(result.tail.join('\n'));
    console.log(`the run's log: ${result.log}`);
    return [line];
  } finally {
    await clients.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`)
  for (const line of await loadMillion()) console.log(line);
