/**
 * Runs the Pulumi program (infra/) under `pulumi.runtime.setMocks` with a configuration, and keeps every
 * resource it registers, for unit tests of wiring and least privilege. One program per test file: vitest
 * gives each file a module registry of its own.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as pulumi from '@pulumi/pulumi';
import { expect } from 'vitest';

export interface Registered {
  type: string;
  name: string;
  inputs: Record<string, any>;
  /** The provider it is made through (`urn::id`), when not the default one. */
  provider?: string;
}

/** The digest the mocked Artifact Registry answers for a built image. */
export const builtDigest = 'sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef';

// A folder of this file's own: test files run side by side, and one shared path was read half-written.
const schemaFile = join(mkdtempSync(join(tmpdir(), 'infra-test-')), 'schema.json');
writeFileSync(schemaFile, JSON.stringify([{ name: 'order_id', type: 'STRING', mode: 'REQUIRED' }]));

/** The configuration the tests deploy, with `overrides` (null removes a key); secrets are marked so. */
export async function runProgram(overrides: Record<string, string | null> = {}) {
  const resources: Registered[] = [];
  pulumi.runtime.setMocks(mocksKeeping(resources), 'kafka-bigquery-drain', 'test', false);
  const config: Record<string, string | null> = {
    'gcp:project': 'proj',
    'gcp:region': 'europe-west1',
    'kafka-bigquery-drain:pipelineId': 'orders',
    'kafka-bigquery-drain:kafkaBrokers': 'b1:9093,b2:9093',
    'kafka-bigquery-drain:kafkaTopics': 'orders',
    'kafka-bigquery-drain:kafkaSaslMechanism': 'scram-sha-512',
    'kafka-bigquery-drain:kafkaSaslUsername': 'drain',
    'kafka-bigquery-drain:kafkaSaslPassword': 'hunter2-secret-value',
    'kafka-bigquery-drain:kafkaSslCa':
      '-----BEGIN CERTIFICATE-----\nprivate-ca-pem\n-----END CERTIFICATE-----\n',
    'kafka-bigquery-drain:schemaFile': schemaFile,
    'kafka-bigquery-drain:image': 'europe-west1-docker.pkg.dev/proj/drain/kafka-bigquery-drain:1',
    'kafka-bigquery-drain:taskCount': '3',
    'kafka-bigquery-drain:budgetSeconds': '240',
    'kafka-bigquery-drain:statusInvokers': '["group:oncall@example.com"]',
    ...overrides,
  };
  pulumi.runtime.setAllConfig(
    Object.fromEntries(Object.entries(config).filter((e): e is [string, string] => e[1] !== null)),
    [
      'kafka-bigquery-drain:kafkaSaslUsername',
      'kafka-bigquery-drain:kafkaSaslPassword',
      'kafka-bigquery-drain:kafkaSslCa',
    ],
  );
  const program = await import('../../infra/index.js');
  // Every exported output resolves only once the resources it depends on are registered.
  await new Promise<void>((resolve) =>
    pulumi
      .all([program.jobName, program.schedulerJob, program.statusUrl, program.targetTable])
      .apply(() => resolve()),
  );
  return registered(resources, program);
}

/**
 * A program of a team's own under the same mocks: `build` makes its resources (components) and gives
 * outputs that resolve once they are registered.
 */
export async function runOwnProgram(build: () => Promise<pulumi.Output<unknown>[]>) {
  const resources: Registered[] = [];
  pulumi.runtime.setMocks(mocksKeeping(resources), 'team-program', 'prod', false);
  pulumi.runtime.setAllConfig({ 'gcp:project': 'proj' });
  const outputs = await build();
  await new Promise<void>((resolve) => pulumi.all(outputs).apply(() => resolve()));
  return registered(resources, outputs);
}

/** What a program under mocks registered: its resources, by type, and their URNs. */
async function registered<P>(resources: Registered[], program: P) {
  await new Promise((resolve) => setTimeout(resolve, 50));
  const ofType = (type: string) => resources.filter((r) => r.type === type);
  /** The one resource of a type, the operations job's aside (it repeats the drain's job and account). */
  const one = (type: string) => {
    const found = ofType(type).filter((r) => !r.name.startsWith('operations-'));
    expect(found, type).toHaveLength(1);
    return found[0]!;
  };
  /** Every resource's URN, as the mock engine made it (the program's own stack resource aside). */
  const monitor = pulumi.runtime.getMonitor() as unknown as {
    getRegisteredResources(): Map<string, unknown>;
  };
  const urns = [...monitor.getRegisteredResources().keys()]
    .filter((u) => !u.includes('pulumi:pulumi:Stack'))
    .sort();
  return { resources, ofType, one, program, urns };
}

/** The mocked cloud: it keeps every resource registered and answers as Google would for the few that matter. */
function mocksKeeping(resources: Registered[]): pulumi.runtime.Mocks {
  return {
    newResource(args) {
      resources.push({
        type: args.type,
        name: args.name,
        inputs: args.inputs,
        ...(args.provider === undefined ? {} : { provider: args.provider }),
      });
      const state: Record<string, unknown> = { ...args.inputs };
      if (args.type === 'gcp:serviceaccount/account:Account')
        state.email = `${args.inputs.accountId}@proj.iam.gserviceaccount.com`;
      if (args.type === 'gcp:cloudrunv2/service:Service')
        state.uri = `https://${args.inputs.name}.example.run.app`;
      if (args.type === 'gcp:projects/iAMCustomRole:IAMCustomRole')
        state.name = `projects/${args.inputs.project}/roles/${args.inputs.roleId}`;
      if (args.type === 'gcp:secretmanager/secretVersion:SecretVersion') state.version = '1';
      if (args.type === 'gcp:monitoring/slo:Slo')
        state.name = `projects/proj/services/${args.inputs.service}/serviceLevelObjectives/${args.inputs.sloId}`;
      return { id: `${args.name}-id`, state };
    },
    call(args) {
      if (args.token === 'gcp:organizations/getProject:getProject')
        return { number: '123456789', projectId: 'proj' };
      if (args.token === 'gcp:artifactregistry/getDockerImage:getDockerImage') {
        const { location, project, repositoryId, imageName } = args.inputs;
        const image = String(imageName).split(':')[0];
        return {
          ...args.inputs,
          selfLink: `${location}-docker.pkg.dev/${project}/${repositoryId}/${image}@${builtDigest}`,
        };
      }
      return args.inputs;
    },
  };
}
