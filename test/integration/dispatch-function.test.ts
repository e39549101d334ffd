/**
 * The `dispatch` HTTP function as Cloud Scheduler calls it, against real Kafka, Firestore and BigQuery
 * emulators, launching through the official Cloud Run client to a fake of its transport
 * (test/support/fake-cloud-run.ts) whose executions are real task processes: the function asks
 * `jobs.run` for the tasks it decided (`overrides.taskCount`), counts the tasks of an execution not yet
 * completed (`executions.list`) and launches none while they cover the backlog, and launches nothing once
 * all is drained. A refused permission answers 503, naming it.
 */
import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { getTestServer } from '@google-cloud/functions-framework/testing';
import { afterAll, expect, test } from 'vitest';
import { type FakeExecution, startFakeCloudRun } from '../support/fake-cloud-run.js';
import { createPipeline, tableOffsets, waitFor } from '../support/job.js';
import { produce } from '../support/kafka.js';
import { stackClients } from '../support/stack.js';
import { cliEntry } from '../support/test-cli.js';

const clients = await stackClients();
afterAll(() => clients.close());

/** The execution's tasks as Cloud Run starts them: the real `run`, each with its index and the count. */
function runTasks(env: Record<string, string>) {
  return (execution: FakeExecution) => {
    for (let index = 0; index < execution.taskCount; index++) {
      const child = spawn(process.execPath, [cliEntry(), 'run'], {
        env: {
          PATH: process.env.PATH ?? '',
          ...env,
          CLOUD_RUN_TASK_INDEX: String(index),
          CLOUD_RUN_TASK_COUNT: String(execution.taskCount),
          CLOUD_RUN_EXECUTION: execution.name.split('/').at(-1)!,
        },
        stdio: 'ignore',
      });
      child.on('exit', (code) => {
        if (code === 0) execution.succeededCount++;
        else execution.failedCount++;
        execution.completed = execution.succeededCount + execution.failedCount === execution.taskCount;
      });
    }
  };
}

async function call(): Promise<{ status: number; body: Record<string, unknown> }> {
  const server = getTestServer('dispatch');
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const response = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST' });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  } finally {
    server.close();
  }
}

test('the scheduler calls it: an execution of the tasks decided, none while it runs, none when drained', async () => {
  const pipeline = await createPipeline(clients, 4, { BQ_WRITE_MODE: 'storage-write' });
  const job = `projects/acme-data/locations/europe-west1/jobs/${pipeline.id}-drain`;
  // A short budget: a task done with its own share waits a quarter of it for others' before it ends.
  const env = {
    ...pipeline.env,
    DRAIN_BUDGET_SECONDS: '12',
    DISPATCH_MAX_TASKS: '3',
    DISPATCH_MIN_TASKS: '2',
    DISPATCH_JOB: job,
  };
  const cloudRun = await startFakeCloudRun(runTasks(env));
  try {
    await produce(
      pipeline.topic,
      Array.from({ length: 8_000 }, (_, i) => ({ partition: i % 4, value: JSON.stringify({ id: `r${i}` }) })),
    );
    // The function reads its configuration from the environment, as it does when deployed.
    Object.assign(process.env, env, { CLOUD_RUN_ADMIN_ENDPOINT: cloudRun.endpoint });
    await import('../../functions/dispatch/function.js');

    const first = await call();
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({ event: 'dispatch', backlog: 8_000, runningTasks: 0, tasks: 2 });
    expect(first.body.execution).toBe(`${job}/executions/${pipeline.id}-drain-00001`);
    expect(cloudRun.runs).toEqual([{ name: job, taskCount: 2 }]);

    // Its tasks have not finished: the function counts them and launches none.
    const during = await call();
    expect(during.body).toMatchObject({ runningTasks: 2, tasks: 0 });
    expect(during.body.reason).toContain('2 still run: none launched');
    expect(cloudRun.runs).toHaveLength(1);

    await waitFor('the execution to complete', async () => cloudRun.executions[0]!.completed, 60_000);
    expect(cloudRun.executions[0]).toMatchObject({ succeededCount: 2, failedCount: 0 });
    const after = await call();
    expect(after.body).toMatchObject({ backlog: 0, runningTasks: 0, tasks: 0, reason: 'nothing waits' });
    expect(cloudRun.runs).toHaveLength(1);
    const offsets = await tableOffsets(clients, pipeline);
    for (let p = 0; p < 4; p++) expect(offsets.get(p)).toEqual(Array.from({ length: 2_000 }, (_, i) => i));
  } finally {
    await cloudRun.close();
  }
});

test('a permission Cloud Run refuses answers 503 naming it; no DISPATCH_MAX_TASKS answers 500', async () => {
  const denied = await startFakeCloudRun(() => {}, true);
  try {
    process.env.CLOUD_RUN_ADMIN_ENDPOINT = denied.endpoint;
    const refused = await call();
    expect(refused.status).toBe(503);
    expect(refused.body.error).toContain("Permission 'run.executions.list' denied");
    delete process.env.DISPATCH_MAX_TASKS;
    const unset = await call();
    expect(unset.status).toBe(500);
    expect(unset.body.error).toBe(
      'configuration error: DISPATCH_MAX_TASKS: must be set for the dispatcher (the most tasks it may launch)',
    );
  } finally {
    await denied.close();
  }
});
