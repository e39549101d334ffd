/**
 * The follow-the-log bench of issue #68 (part of `npm run bench`; alone: `npm run bench:follow`): a steady
 * producer (kafkajs, BENCH_FOLLOW_PARTITIONS partitions, 4 by default: 40 is wider than a run's lease group
 * of 16, issue #78; `small` records of ~180 bytes) at each rate of BENCH_FOLLOW_RATES
 * (records/s; `100,1000,5000` by default) for BENCH_FOLLOW_SECONDS (300 at 1,000/s, 90 at the others, by
 * default), storage-write, DRAIN_UNTIL=budget, runs of the image's job fired on a schedule (every
 * BENCH_FOLLOW_PERIOD seconds, 60 by default, each with the period and a 15 s handover as its budget: they
 * overlap as infra makes them). Printed per rate: each run's own `latencyMs` p50/p99 (Kafka → committed),
 * rows once (must be all), the handover gap a partition sees (its last commit under one run to its first
 * under the next, from the ledger), write streams opened an hour, and CPU per record against a default
 * (`end`) run draining the same records as one backlog.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PubSub } from '@google-cloud/pubsub';
import kafkajs from 'kafkajs';
import { stackEnv } from '../stack/stack-env.js';
import { createTopic } from '../test/support/kafka.js';
import { stackClients } from '../test/support/stack.js';
import { runImage } from './image-run.js';
import { small } from './shapes.js';

const partitions = Number(process.env.BENCH_FOLLOW_PARTITIONS ?? 4);
const period = Number(process.env.BENCH_FOLLOW_PERIOD ?? 60);
const handover = 15;
const rates = (process.env.BENCH_FOLLOW_RATES ?? '100,1000,5000').split(',').map(Number);
const secondsAt = (rate: number) => Number(process.env.BENCH_FOLLOW_SECONDS ?? (rate === 1000 ? 300 : 90));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Writes `rate` records a second for `seconds`, a tenth each 100 ms, round robin; how many it wrote. */
async function steadyProducer(brokers: string, topic: string, rate: number, seconds: number) {
  const kafka = new kafkajs.Kafka({ brokers: [brokers], logLevel: kafkajs.logLevel.NOTHING });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  let written = 0;
  const began = Date.now();
  while (Date.now() - began < seconds * 1000) {
    const due = Math.floor(((Date.now() - began) / 1000) * rate);
    if (due > written) {
      const messages = Array.from({ length: due - written }, (_, k) => ({
        partition: (written + k) % partitions,
        value: small.value(written + k),
      }));
      await producer.send({ topic, messages });
      written = due;
    }
    await sleep(100);
  }
  await producer.disconnect();
  return written;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? 0;

async function atRate(rate: number): Promise<string> {
  const stack = stackEnv() as unknown as Record<string, string>;
  const run = `bench-follow-${rate}-${Date.now().toString(36)}`;
  const seconds = secondsAt(rate);
  const schemaFile = join(tmpdir(), `${run}.schema.json`);
  writeFileSync(schemaFile, JSON.stringify(small.schema));
  await createTopic(run, partitions);
  await new PubSub({
    projectId: stack.GOOGLE_CLOUD_PROJECT,
    apiEndpoint: stack.PUBSUB_EMULATOR_HOST,
  }).createTopic(`${run}-dlq`);
  const env = (pipeline: string, more: Record<string, string>) => ({
    ...stack,
    METADATA_SERVER_DETECTION: 'none',
    PIPELINE_ID: pipeline,
    KAFKA_TOPICS: run,
    BQ_DATASET: pipeline.replaceAll('-', '_'),
    BQ_TABLE: 'events',
    BQ_SCHEMA_FILE: schemaFile,
    DEAD_LETTER_TOPIC: `${run}-dlq`,
    BQ_WRITE_MODE: 'storage-write',
    LEASE_TTL_SECONDS: '20',
    ...more,
  });
  const follow = env(run, { DRAIN_UNTIL: 'budget', DRAIN_BUDGET_SECONDS: String(period + handover) });
  const producing = steadyProducer(stack.KAFKA_BROKERS!, run, rate, seconds);
  const runs: Promise<Awaited<ReturnType<typeof runImage>>>[] = [];
  for (let at = 0; at < seconds; at += period) {
    runs.push(runImage({ ...follow, CLOUD_RUN_EXECUTION: `${run}-e${runs.length}` }));
    await sleep(period * 1000);
  }
  const produced = await producing;
  const followed = await Promise.all(runs);
  // What the last run left lingering at its budget, as one backlog.
  const rest = await runImage({ ...follow, DRAIN_UNTIL: 'end', CLOUD_RUN_EXECUTION: `${run}-rest` });
  // The same records as one backlog in the default mode, for CPU a record.
  const backlog = await runImage(env(`${run}-end`, { DRAIN_BUDGET_SECONDS: '600' }));

  const clients = await stackClients();
  try {
    const [[counts]] = (await clients.bigquery.query({
      query: `SELECT COUNT(*) AS n, COUNT(DISTINCT _kafka_partition * 100000000 + _kafka_offset) AS d FROM \`${run.replaceAll('-', '_')}.events\``,
    })) as unknown as [{ n: number; d: number }[]];
    // The handover: per partition, per change of owner, the gap between the two commits; streams opened.
    const gaps: number[] = [];
    const streams = new Set<string>();
    for (let p = 0; p < partitions; p++) {
      const ledger = await clients.firestore
        .collection(`pipelines/${run}/partitions/${run}~${p}/ledger`)
        .orderBy('from')
        .get();
      const entries = ledger.docs
        // A roll-up stands for many older commits (one per 200 of a partition): no handover in it.
        .filter((d) => d.get('records') > 0 && d.get('rollup') !== true)
        .map((d) => ({
          owner: d.get('owner') as string,
          at: (d.get('committedAt') as { toMillis(): number }).toMillis(),
          streams: (d.get('streams') as string[] | undefined) ?? [],
        }));
      for (const e of entries) for (const s of e.streams) streams.add(s);
      for (let i = 1; i < entries.length; i++)
        if (entries[i]!.owner !== entries[i - 1]!.owner) gaps.push(entries[i]!.at - entries[i - 1]!.at);
    }
    const read = followed.reduce((n, r) => n + (r.summary?.recordsRead ?? 0), 0);
    // Partitions a follower skipped (issue #78: past its first lease group, as "past the end").
    const skipped = followed.reduce(
      (n, r) => n + (r.summary?.partitions ?? []).filter((p) => p.skipped !== undefined).length,
      0,
    );
    const cpu = followed.reduce((n, r) => n + r.cpuSeconds, 0);
    const perRun = followed.map(
      (r) =>
        `${r.summary?.stopReason}: ${r.summary?.recordsRead} read, p50 ${((r.summary?.latencyMs?.p50 ?? 0) / 1000).toFixed(2)} s, p99 ${((r.summary?.latencyMs?.p99 ?? 0) / 1000).toFixed(2)} s`,
    );
    return (
      `follow at ${rate} records/s on ${partitions} partitions for ${seconds} s (runs every ${period} s, budget ${period + handover} s): ${produced} produced, ` +
      `${skipped} partitions skipped by the followers, ` +
      `${Number(counts!.n)} rows, ${Number(counts!.n) - Number(counts!.d)} twice; runs [${perRun.join('; ')}], the last run's rest ${rest.summary?.recordsRead}; ` +
      `handover gap per partition: median ${(median(gaps) / 1000).toFixed(1)} s, max ${(Math.max(0, ...gaps) / 1000).toFixed(1)} s; ` +
      `${streams.size} write streams, ${Math.round((streams.size / seconds) * 3600)} an hour; ` +
      `CPU ${((cpu * 1e6) / Math.max(1, read)).toFixed(1)} µs a record following (${cpu.toFixed(1)} s over ${followed.length} runs, idle waits included) ` +
      `vs ${((backlog.cpuSeconds * 1e6) / Math.max(1, backlog.summary?.recordsRead ?? 1)).toFixed(1)} µs draining them as one backlog`
    );
  } finally {
    await clients.close();
  }
}

export async function followLog(): Promise<string[]> {
  const lines: string[] = [];
  for (const rate of rates) if (rate > 0) lines.push(await atRate(rate));
  return lines;
}

if (import.meta.url === `file://${process.argv[1]}`) for (const line of await followLog()) console.log(line);
