/**
 * A pipeline over 1,000 partitions (10 topics x 100) on the local broker, in the default write mode: a run
 * with a few records in every partition drains all of them within one run of the default budget, and an
 * idle run after it finishes caught up; every summary line stays far below Cloud Logging's 256 KB entry.
 * Timings are reported, not asserted (they live in the benchmark).
 */
import { expect, test } from 'vitest';
import { createPipeline, e2eClients, runJob, runVerify } from '../support/job.js';
import { createTopic, produce } from '../support/kafka.js';

const clients = await e2eClients();

test('1,000 partitions: a few records in each drain in one run; an idle run follows; the summary line stays small', async () => {
  const topics = Array.from({ length: 10 }, (_, t) => t);
  const pipeline = await createPipeline(clients, 1, {
    BQ_WRITE_MODE: 'storage-write',
    DRAIN_BUDGET_SECONDS: '240',
    LEASE_TTL_SECONDS: '',
  });
  const names = topics.map((t) => `${pipeline.topic}-${t}`);
  for (const name of names) await createTopic(name, 100);
  for (const name of names) {
    await produce(
      name,
      Array.from({ length: 300 }, (_, i) => ({
        partition: i % 100,
        value: JSON.stringify({ id: `${name}-${i}`, n: i }),
      })),
    );
  }
  const env = { ...pipeline.env, KAFKA_TOPICS: names.join(',') };

  const started = Date.now();
  const spread = await runJob(env);
  const spreadMs = Date.now() - started;
  expect(spread.code).toBe(0);
  expect(spread.summary).toMatchObject({
    stopReason: 'caught_up',
    recordsRead: 3_000,
    rowsWritten: 3_000,
    partitionCount: 1_000,
  });
  const spreadLine = JSON.stringify(spread.lines.at(-1));
  expect(spreadLine.length).toBeLessThan(64 * 1024);

  const idleStarted = Date.now();
  const idle = await runJob(env);
  const idleMs = Date.now() - idleStarted;
  expect(idle.summary).toMatchObject({
    stopReason: 'caught_up',
    recordsRead: 0,
    partitionCount: 1_000,
    lag: 0,
  });
  expect(JSON.stringify(idle.lines.at(-1)).length).toBeLessThan(64 * 1024);

  const verify = await runVerify(env);
  expect(verify.code).toBe(0);
  expect(verify.verdicts).toHaveLength(1_000);
  console.log(
    `1,000 partitions: spread run (3,000 records) ${spreadMs} ms, ${String(spread.summary.commits)} commits; idle run ${idleMs} ms; summary lines ${spreadLine.length} and ${JSON.stringify(idle.lines.at(-1)).length} bytes`,
  );
});
