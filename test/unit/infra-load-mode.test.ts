/**
 * The Pulumi program in load mode: the job is told the mode, its share of the table's daily load jobs and
 * the schedule's period (which size the loads a run may submit); the drain writes the error table itself;
 * a schedule the day's loads cannot serve is refused at `pulumi preview` (infra-load-refused.test.ts).
 */
import { expect, test } from 'vitest';
import { runProgram } from '../support/pulumi-program.js';

const envsOf = (program: Awaited<ReturnType<typeof runProgram>>) =>
  program.one('gcp:cloudrunv2/job:Job').inputs.template.template.containers[0].envs as {
    name: string;
    value?: string;
  }[];

test('load mode: the job gets the mode, the day’s loads and the period; no BigQuery subscription feeds the error table; unknown fields kept in _extra', async () => {
  const program = await runProgram({
    'kafka-bigquery-drain:writeMode': 'load',
    'kafka-bigquery-drain:schedule': '*/15 * * * *',
    'kafka-bigquery-drain:loadJobsPerTablePerDay': '1200',
    'kafka-bigquery-drain:unknownFields': 'json',
  });
  const envs = envsOf(program);
  const value = (name: string) => envs.find((e) => e.name === name)?.value;
  expect(value('BQ_WRITE_MODE')).toBe('load');
  expect(value('LOAD_JOBS_PER_TABLE_PER_DAY')).toBe('1200');
  expect(value('SCHEDULE_PERIOD_SECONDS')).toBe('900');
  // UNKNOWN_FIELDS=json: the job is told, and the table is made with its `_extra` JSON column.
  expect(value('UNKNOWN_FIELDS')).toBe('json');
  const target = program.ofType('gcp:bigquery/table:Table').find((t) => t.inputs.tableId === 'events')!;
  expect(JSON.parse(target.inputs.schema)).toContainEqual({ name: '_extra', type: 'JSON', mode: 'NULLABLE' });
  expect(
    program.ofType('gcp:pubsub/subscription:Subscription').filter((s) => s.inputs.bigqueryConfig),
  ).toEqual([]);
  expect(program.ofType('gcp:bigquery/table:Table').map((t) => t.inputs.tableId)).toContain(
    'events_dead_letters',
  );
});
