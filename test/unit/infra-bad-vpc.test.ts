/** A VPC setting that cannot be deployed stops the program at once, naming the setting. */
import { expect, test } from 'vitest';
import { runProgram } from '../support/pulumi-program.js';

test('vpcEgress other than private-ranges-only or all-traffic is refused', async () => {
  await expect(
    runProgram({ 'kafka-bigquery-drain:network': 'default', 'kafka-bigquery-drain:vpcEgress': 'everything' }),
  ).rejects.toThrow(/vpcEgress must be private-ranges-only or all-traffic, not everything/);
});
