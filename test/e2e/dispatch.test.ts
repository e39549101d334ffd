/**
 * `dispatch --json` against a real pipeline (the first step of issue #66: the decision, no launch yet):
 * before any run the rate is unknown and the least is asked; a run teaches the rate; a quiet pipeline
 * asks for nothing; a backlog larger than one task drains in a run asks for several, within the
 * partitions.
 */
import { expect, test } from 'vitest';
import { createPipeline, e2eClients, errorsOf, runCli, runJob } from '../support/job.js';
import { produce } from '../support/kafka.js';

const clients = await e2eClients();

async function dispatchLine(env: Record<string, string>, args: string[] = []) {
  const result = await runCli(['dispatch', '--json', ...args], env);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout.trim().split('\n').at(-1)!) as {
    event: string;
    backlog: number;
    partitions: number;
    runningTasks: number;
    rate: number | null;
    tasks: number;
    reason: string;
  };
}

const records = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({
    partition: i % 16,
    value: JSON.stringify({ id: `r${from + i}`, n: i }),
  }));

test('no rate yet: the least; quiet: nothing; a backlog beyond one task: several, within the partitions', async () => {
  const pipeline = await createPipeline(clients, 16, { BQ_WRITE_MODE: 'storage-write' });
  await produce(pipeline.topic, records(3_200));

  const first = await dispatchLine(pipeline.env, ['--min-tasks', '2']);
  console.log(`dispatch before any run: ${JSON.stringify(first)}`);
  expect(first).toMatchObject({
    event: 'dispatch',
    backlog: 3_200,
    partitions: 16,
    runningTasks: 0,
    rate: null,
    tasks: 2,
  });
  expect(first.reason).toContain('no run has taught the rate yet');

  const run = await runJob(pipeline.env);
  expect(run.code, errorsOf(run.lines)).toBe(0);
  expect(run.summary).toMatchObject({ recordsRead: 3_200, stopReason: 'caught_up' });

  const quiet = await dispatchLine(pipeline.env);
  console.log(`dispatch after the run: ${JSON.stringify(quiet)}`);
  expect(quiet).toMatchObject({ backlog: 0, tasks: 0, reason: 'nothing waits' });
  expect(quiet.rate).toBeGreaterThan(0);

  // What waits now is more than one task drains in a run of 5 s at the rate the run showed.
  await produce(pipeline.topic, records(40_000, 3_200));
  const busy = await dispatchLine({ ...pipeline.env, DRAIN_BUDGET_SECONDS: '5' }, ['--max-tasks', '12']);
  console.log(`dispatch with a backlog: ${JSON.stringify(busy)}`);
  expect(busy.backlog).toBe(40_000);
  const wanted = Math.min(12, Math.max(1, Math.ceil(40_000 / (busy.rate! * 5))));
  expect(busy.tasks).toBeGreaterThan(1);
  expect(Math.abs(busy.tasks - wanted)).toBeLessThanOrEqual(1); // the line's rate is rounded
  expect(busy.reason).toMatch(/^40000 records wait; a task drains \d+\/s for 5 s: \d+ task\(s\)$/);
});
