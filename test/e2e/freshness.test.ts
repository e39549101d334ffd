import { expect, test } from 'vitest';
import { createPipeline, e2eClients, runCli, runJob } from '../support/job.js';
import { pythonProduce } from '../support/producers.js';

const clients = await e2eClients();

type Line = Record<string, unknown>;
interface Latency {
  count: number;
  p50: number | null;
  p99: number | null;
  max: number | null;
}

/**
 * `count` records per partition from offset `from`, produced by confluent-kafka with the CreateTime
 * `timestamp` (a producer's clock, as Kafka keeps it), as JSON of the pipeline's schema.
 */
async function produceAt(topic: string, partition: number, from: number, count: number, timestamp: number) {
  await pythonProduce({
    topic,
    format: 'raw',
    partition,
    timestamp,
    values: `[('{"id":"p${partition}-%d","n":%d}' % (i, i)).encode().hex() for i in range(${from}, ${from + count})]`,
  });
}

const partitionsOf = (summary: Line) => summary.partitions as Line[];

test('an hour-old backlog: freshness about 3,600 s while records wait, 0 once drained; latency an hour, then seconds', async () => {
  const pipeline = await createPipeline(clients, 2, { BATCH_MAX_RECORDS: '20' });
  const hourAgo = Date.now() - 3_600_000;
  for (const partition of [0, 1]) await produceAt(pipeline.topic, partition, 0, 10_000, hourAgo);

  const started = Date.now();
  const short = await runJob({ ...pipeline.env, DRAIN_BUDGET_SECONDS: '5', LEASE_TTL_SECONDS: '5' });
  const took = (Date.now() - started) / 1000;
  expect(short.summary.stopReason).toBe('budget');
  const waiting = partitionsOf(short.summary).filter((p) => (p.lag as number) > 0);
  expect(waiting.length).toBeGreaterThan(0);
  for (const p of waiting) {
    // The record at the checkpoint is an hour old by its CreateTime, plus this test's seconds so far.
    expect(p.freshnessSeconds).toBeGreaterThanOrEqual(3_600);
    expect(p.freshnessSeconds).toBeLessThanOrEqual(3_600 + (Date.now() - hourAgo - 3_600_000) / 1000 + 1);
  }
  expect(short.summary.freshnessSeconds).toBe(Math.max(...waiting.map((p) => p.freshnessSeconds as number)));
  const latency = short.summary.latencyMs as Latency;
  expect(latency.count).toBe(short.summary.recordsRead);
  expect(latency.count).toBeGreaterThan(0);
  // Every record committed was an hour old: the median within 0.5% (the sketch) of an hour and the run.
  expect(latency.p50!).toBeGreaterThanOrEqual(3_600_000 * 0.995);
  expect(latency.p50!).toBeLessThanOrEqual((3_600 + took + 60) * 1000);
  expect(latency.max!).toBeGreaterThanOrEqual(latency.p99!);
  // The console's lines before the summary: the table's freshness, and each stale partition's.
  expect(short.lines.find((l) => l.event === 'table_freshness')).toMatchObject({
    table: `${pipeline.dataset}.events`,
    freshnessSeconds: short.summary.freshnessSeconds,
  });
  const staleLines = short.lines.filter((l) => l.event === 'partition_freshness');
  expect(staleLines.map((l) => l.partition).sort()).toEqual(waiting.map((p) => p.partition).sort());
  expect(short.lines.at(-1)!.event).toBe('run_summary');

  const drained = await runJob({ ...pipeline.env, DRAIN_BUDGET_SECONDS: '300', BATCH_MAX_RECORDS: '500' });
  expect(drained.summary.stopReason).toBe('caught_up');
  expect(drained.summary.freshnessSeconds).toBe(0);
  expect(partitionsOf(drained.summary).map((p) => p.freshnessSeconds)).toEqual([0, 0]);
  expect(drained.lines.filter((l) => l.event === 'partition_freshness')).toEqual([]);

  const now = Date.now();
  for (const partition of [0, 1]) await produceAt(pipeline.topic, partition, 10_000, 5, now);
  const fresh = await runJob(pipeline.env);
  const freshLatency = fresh.summary.latencyMs as Latency;
  expect(freshLatency.count).toBe(10);
  expect(freshLatency.p50!).toBeLessThan(60_000);
  expect(freshLatency.max!).toBeLessThanOrEqual(Date.now() - now + 1_000);
  expect(fresh.summary.freshnessSeconds).toBe(0);
});

test('a paused partition grows stale while the others stay at 0; status --json gives the live age; the run document keeps it', async () => {
  const pipeline = await createPipeline(clients, 2);
  const twoMinutesAgo = Date.now() - 120_000;
  for (const partition of [0, 1]) await produceAt(pipeline.topic, partition, 0, 5, twoMinutesAgo);
  expect((await runJob(pipeline.env)).code).toBe(0);
  const paused = await runCli(
    ['pause', '--topic', pipeline.topic, '--partition', '0', '--reason', 'upstream fix'],
    pipeline.env,
  );
  expect(paused.code).toBe(0);
  for (const partition of [0, 1]) await produceAt(pipeline.topic, partition, 5, 5, twoMinutesAgo);

  const first = await runJob(pipeline.env);
  const at = (summary: Line, partition: number) =>
    partitionsOf(summary).find((p) => p.partition === partition)!;
  expect(at(first.summary, 0)).toMatchObject({ skipped: 'paused', to: 5, lag: 5 });
  const age = at(first.summary, 0).freshnessSeconds as number;
  expect(age).toBeGreaterThanOrEqual(120);
  expect(at(first.summary, 1)).toMatchObject({ to: 10, lag: 0, freshnessSeconds: 0 });
  expect(first.summary.freshnessSeconds).toBe(age);
  expect(first.lines.filter((l) => l.event === 'partition_freshness')).toEqual([
    expect.objectContaining({ partition: 0, skipped: 'paused', freshnessSeconds: age }),
  ]);

  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const second = await runJob(pipeline.env);
  expect(at(second.summary, 0).freshnessSeconds).toBeGreaterThanOrEqual(age + 2);
  expect(at(second.summary, 1).freshnessSeconds).toBe(0);

  // The run's document keeps every partition's figure.
  const run = clients.firestore
    .collection('pipelines')
    .doc(pipeline.id)
    .collection('runs')
    .doc(second.summary.runId as string);
  expect((await run.get()).data()).toMatchObject({
    freshnessSeconds: at(second.summary, 0).freshnessSeconds,
  });
  const chunk = (await run.collection('partitions').doc('0000').get()).data() as { partitions: Line[] };
  expect(chunk.partitions.map((p) => [p.partition, p.freshnessSeconds])).toEqual([
    [0, at(second.summary, 0).freshnessSeconds],
    [1, 0],
  ]);

  // Between runs, status reads the age of what waits, live.
  const before = Date.now();
  const status = await runCli(['status', '--json'], pipeline.env);
  expect(status.code).toBe(0);
  const live = JSON.parse(status.stdout) as Line[];
  const liveAge = live.find((p) => p.partition === 0)!.freshnessSeconds as number;
  expect(liveAge).toBeGreaterThanOrEqual(Math.floor((before - twoMinutesAgo) / 1000));
  expect(liveAge).toBeLessThanOrEqual(Math.ceil((Date.now() - twoMinutesAgo) / 1000));
  expect(live.find((p) => p.partition === 1)).toMatchObject({ lag: 0, freshnessSeconds: 0 });
});
