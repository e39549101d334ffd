/**
 * unknownFields evolve's caps out of range are refused at `pulumi preview`, naming the setting. One program
 * a file: Pulumi's mocks run a program once per process.
 */
import { expect, test } from 'vitest';
import { runProgram } from '../support/pulumi-program.js';

test('an evolveColumnsMax out of range is refused, naming it', async () => {
  await expect(
    runProgram({
      'kafka-bigquery-drain:unknownFields': 'evolve',
      'kafka-bigquery-drain:evolveColumnsMax': '0',
    }),
  ).rejects.toThrow(/evolveColumnsMax must be 1 to 10000, not 0/);
});
