/**
 * The Pulumi program in cdc mode: the target table is a change table (its primary key NOT ENFORCED,
 * clustered by it, its max staleness, no time partitioning), the error table is keyed by origin, and the
 * job is told the change format, key and staleness.
 */
import { beforeAll, expect, test } from 'vitest';
import { runProgram } from '../support/pulumi-program.js';

let program: Awaited<ReturnType<typeof runProgram>>;
beforeAll(async () => {
  program = await runProgram({
    'kafka-bigquery-drain:writeMode': 'cdc',
    'kafka-bigquery-drain:changeFormat': 'debezium',
    'kafka-bigquery-drain:primaryKey': '["id"]',
    'kafka-bigquery-drain:maxStaleness': '30m',
    'kafka-bigquery-drain:cdcSourceColumns': 'true',
  });
});

test('the target and error tables are change tables with their keys and staleness', () => {
  const tables = program.ofType('gcp:bigquery/table:Table');
  const target = tables.find((t) => t.inputs.tableId === 'events')!;
  expect(target.inputs.tableConstraints).toEqual({ primaryKey: { columns: ['id'] } });
  expect(target.inputs.clusterings).toEqual(['id']);
  expect(target.inputs.maxStaleness).toBe('0-0 0 0:30:0');
  expect(target.inputs.timePartitioning).toBeUndefined();
  const names = JSON.parse(target.inputs.schema).map((f: { name: string }) => f.name);
  expect(names).toEqual(
    expect.arrayContaining(['_cdc_op', '_cdc_source_ts', '_cdc_source_position', '_kafka_offset']),
  );
  const errors = tables.find((t) => t.inputs.tableId === 'events_dead_letters')!;
  expect(errors.inputs.tableConstraints).toEqual({
    primaryKey: { columns: ['_kafka_topic', '_kafka_partition', '_kafka_offset'] },
  });
  expect(errors.inputs.timePartitioning).toBeUndefined();
});

test('the job is told the mode, the format, the key and the staleness', () => {
  const job = program.one('gcp:cloudrunv2/job:Job');
  const envs = job.inputs.template.template.containers[0].envs as { name: string; value?: string }[];
  const env = (name: string) => envs.find((e) => e.name === name)?.value;
  expect(env('BQ_WRITE_MODE')).toBe('cdc');
  expect(env('CHANGE_FORMAT')).toBe('debezium');
  expect(env('BQ_PRIMARY_KEY')).toBe('id');
  expect(env('BQ_MAX_STALENESS')).toBe('30m');
  expect(env('CDC_SOURCE_COLUMNS')).toBe('true');
});
