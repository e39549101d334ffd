/**
 * A second pipeline in a project that runs one already: its stack adopts the project's Firestore database
 * and an existing dataset instead of making them (either would fail `pulumi up`), and every name it gives a
 * Google resource is its own.
 */
import { beforeAll, expect, test } from 'vitest';
import { runProgram } from '../support/pulumi-program.js';

let program: Awaited<ReturnType<typeof runProgram>>;
beforeAll(async () => {
  program = await runProgram({
    'kafka-bigquery-drain:pipelineId': 'payments',
    'kafka-bigquery-drain:kafkaTopics': 'payments',
    'kafka-bigquery-drain:dataset': 'shop',
    'kafka-bigquery-drain:table': 'payments',
    'kafka-bigquery-drain:existingDatasets': '["shop"]',
    'kafka-bigquery-drain:firestoreDatabase': 'existing',
  });
});

test('no Firestore database and no dataset is made: the project’s and the existing one are used', () => {
  expect(program.ofType('gcp:firestore/database:Database')).toEqual([]);
  expect(program.ofType('gcp:bigquery/dataset:Dataset')).toEqual([]);
  const tables = program.ofType('gcp:bigquery/table:Table');
  expect(tables.map((t) => [t.inputs.datasetId, t.inputs.tableId]).sort()).toEqual([
    ['shop', 'payments'],
    ['shop', 'payments_dead_letters'],
  ]);
  const editors = program
    .ofType('gcp:bigquery/datasetIamMember:DatasetIamMember')
    .map((g) => [g.inputs.datasetId, g.inputs.member]);
  expect(editors.sort()).toEqual([
    ['shop', 'serviceAccount:payments-drain@proj.iam.gserviceaccount.com'],
    ['shop', 'serviceAccount:payments-ops@proj.iam.gserviceaccount.com'],
  ]);
  const job = program.ofType('gcp:cloudrunv2/job:Job').find((j) => j.inputs.name === 'payments-drain')!;
  const env: { name: string; value?: string }[] = job.inputs.template.template.containers[0].envs;
  expect(env.find((e) => e.name === 'BQ_DATASET')?.value).toBe('shop');
  expect(env.find((e) => e.name === 'PIPELINE_ID')?.value).toBe('payments');
});

test("every Google-side name is the pipeline's own", () => {
  // IAM members name nothing: they refer to what others named.
  const named = program.resources
    .filter((r) => !/Iam|IAM/.test(r.type))
    .flatMap((r) => {
      const i = r.inputs;
      return [i.name, i.accountId, i.secretId, i.repositoryId, i.serviceId, i.displayName]
        .filter(
          (n): n is string => typeof n === 'string' && n !== '' && !r.type.startsWith('gcp:projects/service'),
        )
        .map((n) => `${r.type} ${n}`);
    });
  expect(named.length).toBeGreaterThan(20);
  for (const entry of named) expect(entry, entry).toMatch(/payments/);
});
