import type { AddressInfo } from 'node:net';
import { getTestServer } from '@google-cloud/functions-framework/testing';
import { afterAll, expect, test } from 'vitest';
import { createPipeline, runJob } from '../support/job.js';
import { produce } from '../support/kafka.js';
import { pythonProduce } from '../support/producers.js';
import { stackClients } from '../support/stack.js';

const clients = await stackClients();
afterAll(() => clients.close());

test('the status function reports the checkpoints, lag and leases the drain left', async () => {
  const pipeline = await createPipeline(clients, 2);
  await produce(
    pipeline.topic,
    Array.from({ length: 30 }, (_, i) => ({ partition: i % 2, value: JSON.stringify({ id: `r${i}` }) })),
  );
  const { code } = await runJob(pipeline.env);
  expect(code).toBe(0);
  // A record ten minutes old by its producer's clock (confluent-kafka's CreateTime) waits on partition 1.
  const tenMinutesAgo = Date.now() - 600_000;
  await pythonProduce({
    topic: pipeline.topic,
    format: 'raw',
    partition: 1,
    timestamp: tenMinutesAgo,
    values: `["${Buffer.from('{"id":"late"}').toString('hex')}"]`,
  });

  // The function reads its configuration from the environment, as it does when deployed.
  Object.assign(process.env, pipeline.env);
  await import('../../functions/status/function.js');
  const server = getTestServer('status');
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const response = await fetch(`http://127.0.0.1:${port}/`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { pipeline: string; partitions: Record<string, unknown>[] };
    expect(body.pipeline).toBe(pipeline.id);
    expect(body.partitions).toEqual([
      expect.objectContaining({
        topic: pipeline.topic,
        partition: 0,
        checkpoint: 15,
        highWatermark: 15,
        lag: 0,
        freshnessSeconds: 0,
        leaseOwner: null,
        openAlerts: [],
      }),
      expect.objectContaining({
        topic: pipeline.topic,
        partition: 1,
        checkpoint: 15,
        highWatermark: 16,
        lag: 1,
        leaseOwner: null,
      }),
    ]);
    // The live age of the record waiting: ten minutes and the few seconds this test took.
    const waiting = body.partitions[1]!.freshnessSeconds as number;
    expect(waiting).toBeGreaterThanOrEqual(600);
    expect(waiting).toBeLessThan(600 + (Date.now() - tenMinutesAgo - 600_000) / 1000 + 2);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
