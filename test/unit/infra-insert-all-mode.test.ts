/** The Pulumi program in insert-all mode: the error table is fed from the dead-letter topic by Pub/Sub. */
import { beforeAll, expect, test } from 'vitest';
import { runProgram } from '../support/pulumi-program.js';

let program: Awaited<ReturnType<typeof runProgram>>;
beforeAll(async () => {
  program = await runProgram({ 'kafka-bigquery-drain:writeMode': 'insert-all' });
});

test('insert-all mode: a BigQuery subscription writes the error table, as Pub/Sub-shaped rows', () => {
  const job = program.one('gcp:cloudrunv2/job:Job');
  const envs = job.inputs.template.template.containers[0].envs as { name: string; value?: string }[];
  expect(envs.find((e) => e.name === 'BQ_WRITE_MODE')?.value).toBe('insert-all');
  const errors = program
    .ofType('gcp:bigquery/table:Table')
    .find((t) => t.inputs.tableId === 'events_dead_letters')!;
  expect(JSON.parse(errors.inputs.schema).map((f: { name: string }) => f.name)).toContain('attributes');
  const subscription = program
    .ofType('gcp:pubsub/subscription:Subscription')
    .find((s) => s.inputs.bigqueryConfig);
  expect(subscription!.inputs).toMatchObject({
    topic: 'orders-dead-letters',
    bigqueryConfig: { writeMetadata: true },
  });
  // Pub/Sub's service agent may edit the error table, and nothing else.
  const agent = program.one('gcp:bigquery/iamMember:IamMember');
  expect(agent.inputs).toMatchObject({ tableId: 'events_dead_letters', role: 'roles/bigquery.dataEditor' });
});
