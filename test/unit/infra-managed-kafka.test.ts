/**
 * The Pulumi program for Google's Managed Service for Apache Kafka: OAUTHBEARER with the job's own account
 * (no Kafka secret at all), `roles/managedkafka.client` for that account, and Direct VPC egress so that the
 * job and the status service reach the cluster's private addresses.
 */
import { beforeAll, expect, test } from 'vitest';
import { runProgram } from '../support/pulumi-program.js';

let program: Awaited<ReturnType<typeof runProgram>>;
beforeAll(async () => {
  program = await runProgram({
    'kafka-bigquery-drain:kafkaBrokers': 'bootstrap.orders.europe-west1.managedkafka.proj.cloud.goog:9092',
    'kafka-bigquery-drain:kafkaSaslMechanism': 'oauthbearer',
    'kafka-bigquery-drain:kafkaSaslUsername': null,
    'kafka-bigquery-drain:kafkaSaslPassword': null,
    'kafka-bigquery-drain:kafkaSslCa': null,
    'kafka-bigquery-drain:managedKafkaProject': 'kafka-proj',
    'kafka-bigquery-drain:network': 'projects/net-proj/global/networks/shared',
    'kafka-bigquery-drain:subnetwork': 'projects/net-proj/regions/europe-west1/subnetworks/drain',
    'kafka-bigquery-drain:networkTags': '["kafka-client"]',
  });
});

const envOf = () => {
  const job = program.one('gcp:cloudrunv2/job:Job');
  return job.inputs.template.template.containers[0].envs as {
    name: string;
    value?: string;
    valueSource?: unknown;
  }[];
};

test('OAUTHBEARER with Google credentials: the settings reach the job, and no Kafka secret exists', () => {
  const env = Object.fromEntries(envOf().map((e) => [e.name, e.value]));
  expect(env).toMatchObject({
    KAFKA_BROKERS: 'bootstrap.orders.europe-west1.managedkafka.proj.cloud.goog:9092',
    KAFKA_SASL_MECHANISM: 'oauthbearer',
    KAFKA_OAUTH_PROVIDER: 'google',
    KAFKA_SSL: 'true',
  });
  expect(Object.keys(env)).not.toContain('KAFKA_SASL_USERNAME');
  expect(Object.keys(env)).not.toContain('KAFKA_SASL_PASSWORD');
  expect(envOf().filter((e) => e.valueSource !== undefined)).toEqual([]);
  // The one secret is the mounted schema file (the configured image carries none of this pipeline's).
  expect(program.ofType('gcp:secretmanager/secret:Secret').map((s) => s.inputs.secretId)).toEqual([
    'orders-bq-schema-file',
  ]);
});

test("the pipeline's two accounts (the job's, the operator commands'), and only they, are Managed Kafka clients of the cluster's project", () => {
  const grants = program
    .ofType('gcp:projects/iAMMember:IAMMember')
    .filter((g) => g.inputs.role === 'roles/managedkafka.client');
  expect(grants.map((g) => [g.inputs.project, g.inputs.member])).toEqual([
    ['kafka-proj', 'serviceAccount:orders-drain@proj.iam.gserviceaccount.com'],
    ['kafka-proj', 'serviceAccount:orders-ops@proj.iam.gserviceaccount.com'],
  ]);
  // Nothing broader came with it.
  for (const account of ['orders-drain', 'orders-ops']) {
    const roles = program
      .ofType('gcp:projects/iAMMember:IAMMember')
      .filter((g) => g.inputs.member === `serviceAccount:${account}@proj.iam.gserviceaccount.com`)
      .map((g) => g.inputs.role)
      .sort();
    expect(roles).toEqual(['roles/bigquery.jobUser', 'roles/datastore.user', 'roles/managedkafka.client']);
  }
});

test('Direct VPC egress, private ranges only, for the job and for the status service that reads Kafka too', () => {
  const expected = {
    egress: 'PRIVATE_RANGES_ONLY',
    networkInterfaces: [
      {
        network: 'projects/net-proj/global/networks/shared',
        subnetwork: 'projects/net-proj/regions/europe-west1/subnetworks/drain',
        tags: ['kafka-client'],
      },
    ],
  };
  expect(program.one('gcp:cloudrunv2/job:Job').inputs.template.template.vpcAccess).toEqual(expected);
  expect(program.one('gcp:cloudrunv2/service:Service').inputs.template.vpcAccess).toEqual(expected);
});

test("Managed Kafka's API is enabled with the others; no Secret Manager without a secret", () => {
  const services = program.ofType('gcp:projects/service:Service').map((s) => s.inputs.service);
  expect(services).toContain('managedkafka.googleapis.com');
  expect(services).not.toContain('secretmanager.googleapis.com');
});
