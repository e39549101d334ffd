/** Direct VPC egress with all traffic through the VPC (a fixed NAT address, say), from a network alone. */
import { expect, test } from 'vitest';
import { runProgram } from '../support/pulumi-program.js';

test('vpcEgress all-traffic: the job sends everything through the network named', async () => {
  const program = await runProgram({
    'kafka-bigquery-drain:network': 'default',
    'kafka-bigquery-drain:vpcEgress': 'all-traffic',
  });
  expect(program.one('gcp:cloudrunv2/job:Job').inputs.template.template.vpcAccess).toEqual({
    egress: 'ALL_TRAFFIC',
    networkInterfaces: [{ network: 'default' }],
  });
  // SCRAM (the default config of these tests) grants no Managed Kafka role.
  const roles = program.ofType('gcp:projects/iAMMember:IAMMember').map((g) => g.inputs.role);
  expect(roles).not.toContain('roles/managedkafka.client');
});
