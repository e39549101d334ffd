/**
 * The operations job under Pulumi mocks: the pipeline's image, environment, secrets and network, an
 * account of its own granted exactly infra/permissions.ts's operationsGrants (and the drain's account
 * exactly drainGrants: it gains nothing), operators allowed to run it with arguments and nothing else, and
 * ready commands among the stack's outputs.
 */
import * as pulumi from '@pulumi/pulumi';
import { beforeAll, describe, expect, test } from 'vitest';
import { drainGrants, type Grant, operationsGrants } from '../../infra/permissions.js';
import { runProgram } from '../support/pulumi-program.js';

let program: Awaited<ReturnType<typeof runProgram>>;
beforeAll(async () => {
  program = await runProgram({ 'kafka-bigquery-drain:operators': '["group:data-oncall@example.com"]' });
});

const jobs = () => program.ofType('gcp:cloudrunv2/job:Job');
const drainJob = () => jobs().find((j) => j.inputs.name === 'orders-drain')!;
const opsJob = () => jobs().find((j) => j.inputs.name === 'orders-ops')!;

/** Every grant to an account, as `role on resource-kind resource-name`. */
function grantsTo(account: string): string[] {
  const member = `serviceAccount:${account}@proj.iam.gserviceaccount.com`;
  return program.resources
    .filter((r) => /Iam|IAM/.test(r.type) && r.inputs.member === member)
    .map((r) => {
      const on = r.inputs.datasetId
        ? `dataset ${r.inputs.datasetId}`
        : r.inputs.subscription
          ? `subscription ${r.inputs.subscription}`
          : r.inputs.topic
            ? `topic ${r.inputs.topic}`
            : r.inputs.secretId
              ? 'secret'
              : `project ${r.inputs.project}`;
      return `${r.inputs.role} on ${on}`;
    })
    .sort();
}

/** What a table of grants comes to for this program (one dataset, three secrets and the mounted schema, no Managed Kafka). */
function expected(grants: readonly Grant[]): string[] {
  const on: Record<Grant['on'], string[]> = {
    project: ['project proj'],
    'each dataset': ['dataset kafka_drain'],
    'dead-letter topic': ['topic orders-dead-letters'],
    'alert topic': ['topic orders-alerts'],
    'dead-letter subscription': ['subscription orders-dead-letters-pull'],
    'each secret': ['secret', 'secret', 'secret', 'secret'],
    'managed kafka project': [],
    'drain job': ['job orders-drain'],
  };
  return grants.flatMap((g) => on[g.on].map((resource) => `${g.role} on ${resource}`)).sort();
}

describe('the operations job', () => {
  test("runs the drain's image with its environment, secrets and network, once, never retried", () => {
    const drain = drainJob().inputs.template.template;
    const ops = opsJob().inputs.template;
    expect(ops).toMatchObject({ taskCount: 1, parallelism: 1 });
    expect(ops.template.maxRetries).toBe(0);
    expect(ops.template.serviceAccount).toBe('orders-ops@proj.iam.gserviceaccount.com');
    expect(ops.template.containers[0].image).toBe(drain.containers[0].image);
    expect(ops.template.containers[0].args).toEqual(['status']);
    expect(ops.template.containers[0].envs).toEqual(drain.containers[0].envs);
    expect(ops.template.containers[0].envs.map((e: { name: string }) => e.name)).toEqual(
      expect.arrayContaining(['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD', 'KAFKA_SSL_CA_FILE']),
    );
    expect(ops.template.volumes).toEqual(drain.volumes);
    expect(ops.template.containers[0].volumeMounts).toEqual(drain.containers[0].volumeMounts);
  });

  test('its account holds exactly the operations grants; the drain account exactly its own', () => {
    const datasets = program.ofType('gcp:bigquery/dataset:Dataset').map((d) => d.inputs.datasetId);
    expect(datasets).toEqual(['kafka_drain']);
    expect(grantsTo('orders-ops')).toEqual(expected(operationsGrants));
    expect(grantsTo('orders-drain')).toEqual(expected(drainGrants));
    // The operations account may pull the dead letters; the drain's may not.
    expect(grantsTo('orders-drain').join('\n')).not.toContain('subscriber');
  });

  test('operators may run the operations job with arguments, and nothing else of the pipeline', () => {
    const grants = program.resources.filter((r) => r.inputs.member === 'group:data-oncall@example.com');
    expect(grants.map((g) => [g.type, g.inputs.role, g.inputs.name])).toEqual([
      ['gcp:cloudrunv2/jobIamMember:JobIamMember', 'roles/run.developer', 'orders-ops'],
    ]);
  });

  test('the outputs are ready commands: each an execution of the operations job, and where its output is', async () => {
    const commands = await new Promise<Record<string, string>>((resolve) =>
      pulumi.output(program.program.operatorCommands).apply((c) => resolve(c as Record<string, string>)),
    );
    expect(commands.status).toBe(
      'gcloud run jobs execute orders-ops --region europe-west1 --args=status --wait',
    );
    expect(commands.replayDeadLetters).toBe(
      'gcloud run jobs execute orders-ops --region europe-west1 --args=replay-dead-letters,--subscription,orders-dead-letters-pull --wait',
    );
    expect(commands.pauseSchedule).toBe(
      'gcloud scheduler jobs pause orders-drain-schedule --location europe-west1',
    );
    expect(commands.logs).toContain('resource.labels.job_name=orders-ops');
    expect(commands.logs).toContain('run.googleapis.com/execution_name');
    const check = await new Promise<string>((resolve) => program.program.checkOnce.apply(resolve));
    expect(check).toContain('gcloud run jobs execute orders-drain ');
  });
});
