/**
 * The Pulumi program in merge mode, with the optional metadata columns on: the drain writes the error table
 * itself (no subscription feeds it), and the target table has the columns.
 */
import { beforeAll, expect, test } from 'vitest';
import { runProgram } from '../support/pulumi-program.js';

let program: Awaited<ReturnType<typeof runProgram>>;
beforeAll(async () => {
  program = await runProgram({
    'kafka-bigquery-drain:writeMode': 'merge',
    'kafka-bigquery-drain:headersColumn': 'true',
    'kafka-bigquery-drain:keyTextColumn': 'true',
  });
});

test('merge mode: the error table has the drain schema, keyed by origin, and no BigQuery subscription or grant', () => {
  const job = program.one('gcp:cloudrunv2/job:Job');
  const envs = job.inputs.template.template.containers[0].envs as { name: string; value?: string }[];
  expect(envs.find((e) => e.name === 'BQ_WRITE_MODE')?.value).toBe('merge');
  const errors = program
    .ofType('gcp:bigquery/table:Table')
    .find((t) => t.inputs.tableId === 'events_dead_letters')!;
  const names = JSON.parse(errors.inputs.schema).map((f: { name: string }) => f.name);
  expect(names).toEqual(
    expect.arrayContaining(['_kafka_topic', '_kafka_partition', '_kafka_offset', 'value', 'error_kind']),
  );
  expect(names).not.toContain('attributes');
  expect(errors.inputs.timePartitioning).toMatchObject({ field: '_kafka_timestamp' });
  expect(errors.inputs.clusterings).toEqual(['_kafka_topic', '_kafka_partition', '_kafka_offset']);
  expect(
    program.ofType('gcp:pubsub/subscription:Subscription').filter((s) => s.inputs.bigqueryConfig),
  ).toEqual([]);
  expect(program.ofType('gcp:bigquery/iamMember:IamMember')).toEqual([]);
});

test('the optional metadata columns, switched on, are in the target table and the job is told', () => {
  const target = program.ofType('gcp:bigquery/table:Table').find((t) => t.inputs.tableId === 'events')!;
  const fields = JSON.parse(target.inputs.schema) as { name: string; mode?: string; fields?: unknown[] }[];
  expect(fields.find((f) => f.name === '_kafka_headers')).toMatchObject({ mode: 'REPEATED' });
  expect(fields.map((f) => f.name)).toContain('_kafka_key_text');
  const job = program.one('gcp:cloudrunv2/job:Job');
  const envs = job.inputs.template.template.containers[0].envs as { name: string; value?: string }[];
  expect(envs.find((e) => e.name === 'BQ_HEADERS_COLUMN')?.value).toBe('true');
  expect(envs.find((e) => e.name === 'BQ_KEY_TEXT_COLUMN')?.value).toBe('true');
});
