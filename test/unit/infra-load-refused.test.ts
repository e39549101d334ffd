/**
 * The Pulumi program in load mode refuses, at `pulumi preview`, a schedule and task count the day's load
 * jobs cannot serve (less than one load a run), as the drain would refuse it at start. One program a file:
 * Pulumi's mocks run a program once per process.
 */
import { expect, test } from 'vitest';
import { runProgram } from '../support/pulumi-program.js';

test('load mode: a schedule the day’s loads cannot serve is refused, naming the setting', async () => {
  await expect(
    runProgram({
      'kafka-bigquery-drain:writeMode': 'load',
      'kafka-bigquery-drain:schedule': '* * * * *',
      'kafka-bigquery-drain:taskCount': '2',
    }),
  ).rejects.toThrow(/loadJobsPerTablePerDay: 1000 loads a table a day over 1440 runs/);
});
