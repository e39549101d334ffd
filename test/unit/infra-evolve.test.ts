/**
 * The Pulumi program with unknownFields evolve: the job is told the rule and its caps (a cap out of range
 * is refused at `pulumi preview`: infra-evolve-refused.test.ts). (That a deploy leaves the columns the drain added, the target table's
 * `ignoreChanges: ["schema"]`, is not visible through Pulumi's mocks: pipeline-data.ts says it.)
 */
import { expect, test } from 'vitest';
import { runProgram } from '../support/pulumi-program.js';

test('unknownFields evolve: the job gets the rule and its caps', async () => {
  const program = await runProgram({
    'kafka-bigquery-drain:unknownFields': 'evolve',
    'kafka-bigquery-drain:evolveColumnsPerRun': '5',
  });
  const envs = program.one('gcp:cloudrunv2/job:Job').inputs.template.template.containers[0].envs as {
    name: string;
    value?: string;
  }[];
  const value = (name: string) => envs.find((e) => e.name === name)?.value;
  expect(value('UNKNOWN_FIELDS')).toBe('evolve');
  expect(value('EVOLVE_COLUMNS_PER_RUN')).toBe('5');
  expect(value('EVOLVE_COLUMNS_MAX')).toBe('300');
});
