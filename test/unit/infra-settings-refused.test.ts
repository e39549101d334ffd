/**
 * A wrong value of a setting passed to the job as it is (infra/settings-map.ts) is refused at `pulumi
 * preview` by the drain's own parser, naming the key and the variable. One program a file: Pulumi's mocks
 * run a program once per process.
 */
import { expect, test } from 'vitest';
import { runProgram } from '../support/pulumi-program.js';

test('batchMaxRecords "lots" stops the preview, naming the key and the variable', async () => {
  await expect(runProgram({ 'kafka-bigquery-drain:batchMaxRecords': 'lots' })).rejects.toThrow(
    /batchMaxRecords: BATCH_MAX_RECORDS: "lots" is not a whole number/,
  );
});
