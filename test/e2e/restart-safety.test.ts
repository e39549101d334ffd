import { expect, test } from 'vitest';
import { processState } from '../support/crash-matrix.js';
import {
  checkpointsOf,
  createPipeline,
  e2eClients,
  ledgerOf,
  runJob,
  startJob,
  tableOffsets,
  waitFor,
} from '../support/job.js';
import { produce } from '../support/kafka.js';

const clients = await e2eClients();

test('zombie: a run frozen past its lease TTL cannot move the checkpoint after another run took over (G3)', async () => {
  const pipeline = await createPipeline(clients, 1, { LEASE_TTL_SECONDS: '3', BATCH_MAX_RECORDS: '20' });
  await produce(
    pipeline.topic,
    Array.from({ length: 4000 }, (_, i) => ({ partition: 0, value: JSON.stringify({ id: `r${i}`, n: i }) })),
  );

  const zombie = startJob(pipeline.env);
  await waitFor(
    'the first run to commit',
    async () => ((await checkpointsOf(clients, pipeline)).get(0) ?? 0) > 0,
  );
  zombie.child.kill('SIGSTOP');
  const frozenAt = (await checkpointsOf(clients, pipeline)).get(0)!;

  // Once its lease has expired, a second run takes the partition over and drains it to the end.
  const second = await waitFor(
    'a second run to take the lease over',
    async () => {
      const run = await runJob(pipeline.env);
      return run.summary.partitions[0]!.skipped === 'leased_elsewhere' ? undefined : run;
    },
    30_000,
  );
  expect(second.summary.stopReason).toBe('caught_up');
  const afterSecond = (await checkpointsOf(clients, pipeline)).get(0)!;
  expect(afterSecond).toBe(4000);
  expect(afterSecond).toBeGreaterThan(frozenAt);

  zombie.child.kill('SIGCONT');
  const { code } = await zombie.exited;
  expect(code).toBe(0);
  expect(zombie.summary()).toMatchObject({ partitions: [{ skipped: 'fenced' }] });
  expect((await checkpointsOf(clients, pipeline)).get(0)).toBe(afterSecond);

  // The zombie's epoch (the partition's first lease: 1) never committed after the second run's first
  // commit. (Older entries may have been rolled up; the recent ones are enough to see it.)
  const ledger = await ledgerOf(clients, pipeline, 0);
  const zombieEpoch = 1;
  const firstOfSecond = ledger.findIndex((e) => e.epoch > zombieEpoch);
  expect(firstOfSecond).toBeGreaterThanOrEqual(0);
  expect(ledger.slice(firstOfSecond).every((e) => e.epoch > zombieEpoch)).toBe(true);
  const offsets = new Set((await tableOffsets(clients, pipeline)).get(0));
  expect(offsets.size).toBe(4000);
});

test('SIGTERM: a run in a large backlog exits 0 within 10 s with stopReason signal; the next continues (G4)', async () => {
  const pipeline = await createPipeline(clients, 2, { BATCH_MAX_RECORDS: '50' });
  await produce(
    pipeline.topic,
    Array.from({ length: 10_000 }, (_, i) => ({
      partition: i % 2,
      value: JSON.stringify({ id: `r${i}`, n: i }),
    })),
  );

  const job = startJob(pipeline.env);
  await waitFor('the run to commit', async () =>
    [...(await checkpointsOf(clients, pipeline)).values()].some((o) => (o ?? 0) > 0),
  );
  const signalledAt = Date.now();
  job.child.kill('SIGTERM');
  const { code } = await job.exited;
  const exitMs = Date.now() - signalledAt;
  expect(code).toBe(0);
  expect(exitMs).toBeLessThan(10_000);
  const first = job.summary() as {
    stopReason: string;
    partitions: { partition: number; to: number; lag: number }[];
  };
  expect(first.stopReason).toBe('signal');
  expect(first.partitions.some((p) => p.lag > 0)).toBe(true);

  // Leases were released: the next run starts at once, where the first stopped.
  const next = await runJob({ ...pipeline.env, DRAIN_BUDGET_SECONDS: '120' });
  expect(next.code).toBe(0);
  expect(next.summary.stopReason).toBe('caught_up');
  for (const p of first.partitions) {
    expect(next.summary.partitions.find((q) => q.partition === p.partition)).toMatchObject({
      from: p.to,
      to: 5_000,
    });
  }
  const table = await tableOffsets(clients, pipeline);
  expect(new Set(table.get(0)).size + new Set(table.get(1)).size).toBe(10_000);
  console.log(`sigterm: exited ${exitMs} ms after SIGTERM`);
});

test('budget: a backlog larger than one run stops with stopReason budget near the budget (G4)', async () => {
  const pipeline = await createPipeline(clients, 1, {
    DRAIN_BUDGET_SECONDS: '5',
    LEASE_TTL_SECONDS: '5',
    BATCH_MAX_RECORDS: '20',
  });
  await produce(
    pipeline.topic,
    Array.from({ length: 10_000 }, (_, i) => ({
      partition: 0,
      value: JSON.stringify({ id: `r${i}`, n: i }),
    })),
  );

  const { code, summary } = await runJob(pipeline.env);
  expect(code).toBe(0);
  expect(summary.stopReason).toBe('budget');
  const durationMs = summary.durationMs as number;
  expect(durationMs).toBeGreaterThanOrEqual(5_000);
  expect(durationMs).toBeLessThan(5_000 + 6_000);
  const partition = summary.partitions[0] as { to: number; lag: number };
  expect(partition.lag).toBe(10_000 - partition.to);
  expect(partition.lag).toBeGreaterThan(0);
  expect((await checkpointsOf(clients, pipeline)).get(0)).toBe(partition.to);
  console.log(`budget: stopped after ${durationMs} ms with ${partition.to} of 10000 drained`);
});

test('storage-write zombie: frozen after recording its flush, rolled forward by the next run, it commits nothing twice when it wakes', async () => {
  const pipeline = await createPipeline(clients, 1, {
    BQ_WRITE_MODE: 'storage-write',
    LEASE_TTL_SECONDS: '3',
    BATCH_MAX_RECORDS: '50',
  });
  await produce(
    pipeline.topic,
    Array.from({ length: 600 }, (_, i) => ({
      partition: 0,
      value: i % 10 === 9 ? `{broken ${i}` : JSON.stringify({ id: `r${i}`, n: i }),
    })),
  );
  // The zombie stops itself right after its first intent is recorded, before it commits the streams.
  const zombie = startJob({ ...pipeline.env, KBD_FAULT_POINT: 'after-intent', KBD_FAULT_ACTION: 'stop' });
  const intent = await waitFor('the zombie to record a flush', async () => {
    const doc = await clients.firestore.doc(`pipelines/${pipeline.id}/partitions/${pipeline.topic}~0`).get();
    return doc.get('intent') ?? undefined;
  });
  await waitFor('the zombie to be frozen', async () => processState(zombie.child.pid!) === 'T');

  // Its lease lapses; the next run finds the recorded flush, commits its streams, and drains the rest.
  const second = await waitFor(
    'a run to take the partition over',
    async () => {
      const run = await runJob(pipeline.env);
      return run.summary.partitions[0]!.skipped === 'leased_elsewhere' ? undefined : run;
    },
    30_000,
  );
  expect(second.summary.stopReason).toBe('caught_up');
  expect(second.lines.some((l) => l.message === 'a flush recorded by an earlier run was finished')).toBe(
    true,
  );
  expect((await checkpointsOf(clients, pipeline)).get(0)).toBe(600);

  // The zombie wakes, commits its (already committed) streams, and is fenced at its checkpoint.
  zombie.child.kill('SIGCONT');
  const { code } = await zombie.exited;
  expect(code).toBe(0);
  expect(zombie.summary()).toMatchObject({ partitions: [{ skipped: 'fenced' }] });
  expect((await checkpointsOf(clients, pipeline)).get(0)).toBe(600);
  const rows = (await tableOffsets(clients, pipeline)).get(0)!;
  expect(rows.length).toBe(540);
  expect(new Set(rows).size).toBe(540);
  const [letters] = await clients.bigquery.query({
    query: `SELECT COUNT(*) AS n, COUNT(DISTINCT _kafka_offset) AS d FROM \`${pipeline.dataset}.${pipeline.table}_dead_letters\``,
  });
  expect(letters[0]).toMatchObject({ n: 60, d: 60 });
  expect((intent as { streams: string[] }).streams.length).toBeGreaterThan(0);
});
