import { expect, test } from 'vitest';
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

  // The zombie's epoch never committed after the second run's first commit.
  const ledger = await ledgerOf(clients, pipeline, 0);
  const firstOfSecond = ledger.findIndex((e) => e.epoch > ledger[0]!.epoch);
  expect(ledger.slice(firstOfSecond).every((e) => e.epoch > ledger[0]!.epoch)).toBe(true);
  const offsets = new Set((await tableOffsets(clients, pipeline)).get(0));
  expect(offsets.size).toBe(4000);
});

test('SIGTERM: a run in a large backlog exits 0 within 10 s with stopReason signal; the next continues (G4)', async () => {
  const pipeline = await createPipeline(clients, 2, { BATCH_MAX_RECORDS: '50' });
  await produce(
    pipeline.topic,
    Array.from({ length: 30_000 }, (_, i) => ({
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
      to: 15_000,
    });
  }
  const table = await tableOffsets(clients, pipeline);
  expect(new Set(table.get(0)).size + new Set(table.get(1)).size).toBe(30_000);
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
    Array.from({ length: 40_000 }, (_, i) => ({
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
  expect(partition.lag).toBe(40_000 - partition.to);
  expect(partition.lag).toBeGreaterThan(0);
  expect((await checkpointsOf(clients, pipeline)).get(0)).toBe(partition.to);
  console.log(`budget: stopped after ${durationMs} ms with ${partition.to} of 40000 drained`);
});
