/**
 * Every setting a deployment may set reaches a job's (or the dispatcher's) environment: generated from infra/settings-map.ts,
 * each setting with a Pulumi key is given (as a component argument) to one of four pipelines of one
 * program (storage-write with everything the values and Kafka take, cdc, load, and one with a routes file
 * and Managed Kafka's OAUTHBEARER), and the test fails when any such setting's variable is in no job's
 * environment. Secrets arrive as Secret Manager references, PEMs as mounted files.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as pulumi from '@pulumi/pulumi';
import { beforeAll, expect, test } from 'vitest';
import type { SettingName } from '../../functions/config/settings.js';
import { DrainPipeline } from '../../infra/component.js';
import { type Deployed, deployedSettings } from '../../infra/settings-map.js';
import { runOwnProgram } from '../support/pulumi-program.js';

const folder = mkdtempSync(join(tmpdir(), 'every-setting-'));
const schemaFile = join(folder, 'events.schema.json');
writeFileSync(schemaFile, JSON.stringify([{ name: 'id', type: 'STRING', mode: 'REQUIRED' }]));
const routesFile = join(folder, 'routes.json');
writeFileSync(
  routesFile,
  JSON.stringify([{ topics: ['a'], table: 'routed.a', schemaFile: 'events.schema.json' }]),
);
const image = 'europe-west1-docker.pkg.dev/proj/drain/kafka-bigquery-drain@sha256:abc';
const pem = (what: string) => pulumi.secret(`-----BEGIN ${what}-----\nx\n-----END ${what}-----\n`);

let envNames: Set<string>;
let program: Awaited<ReturnType<typeof runOwnProgram>>;
beforeAll(async () => {
  const common = { project: 'proj', region: 'europe-west1', kafkaBrokers: 'b:9092', image };
  const jobs: DrainPipeline[] = [];
  program = await runOwnProgram(async () => {
    jobs.push(
      new DrainPipeline('everything', {
        ...common,
        pipelineId: 'everything',
        kafkaTopics: 'events',
        kafkaSaslMechanism: 'scram-sha-512',
        kafkaSaslUsername: pulumi.secret('user'),
        kafkaSaslPassword: pulumi.secret('password'),
        kafkaSsl: true,
        kafkaSslCa: pem('CERTIFICATE'),
        kafkaSslClientCert: pem('CERTIFICATE'),
        kafkaSslClientKey: pem('PRIVATE KEY'),
        logLevel: 'debug',
        startPosition: 'latest',
        retentionGapPolicy: 'skip',
        dataset: 'ds',
        table: 'events',
        schemaFile,
        partitionField: '_kafka_timestamp',
        partitionType: 'HOUR',
        partitionExpirationDays: 30,
        requirePartitionFilter: true,
        clustering: ['id'],
        headersColumn: true,
        keyTextColumn: true,
        budgetSeconds: 200,
        drainUntil: 'budget',
        flushLingerMs: 2000,
        batchMaxRecords: 1000,
        batchMaxBytes: 1048576,
        leaseTtlSeconds: 30,
        idleAlertSeconds: 600,
        stallAlertSeconds: 900,
        backlogAlertRecords: 5000,
        valueFormat: 'avro',
        valueSubject: 'events-value',
        schemaRegistryUrl: 'https://registry.example.com',
        schemaRegistryUsername: pulumi.secret('key'),
        schemaRegistryPassword: pulumi.secret('secret'),
        schemaRegistryAuth: 'basic',
        unknownFields: 'evolve',
        evolveColumnsPerRun: 5,
        evolveColumnsMax: 100,
        fieldNames: 'sanitize',
        tombstones: 'dead-letter',
      }),
      new DrainPipeline('changes', {
        ...common,
        pipelineId: 'changes',
        kafkaTopics: 'changes',
        kafkaSsl: false,
        schemaFile,
        firestoreDatabase: 'existing',
        writeMode: 'cdc',
        changeFormat: 'upsert',
        primaryKey: ['id'],
        maxStaleness: '30m',
        cdcSourceColumns: true,
      }),
      new DrainPipeline('loads', {
        ...common,
        pipelineId: 'loads',
        kafkaTopics: 'loads',
        kafkaSsl: false,
        schemaFile,
        firestoreDatabase: 'existing',
        writeMode: 'load',
        loadJobsPerTablePerDay: 1200,
        dispatchMinTasks: 2,
        dispatchMaxTasks: 4,
      }),
      new DrainPipeline('routed', {
        ...common,
        pipelineId: 'routed',
        routesFile,
        firestoreDatabase: 'existing',
        kafkaSaslMechanism: 'oauthbearer',
        kafkaOauthProvider: 'google',
      }),
    );
    return jobs.map((j) => j.outputs.jobName);
  });
  // The jobs' environments, and the services' (the dispatcher's bounds are its own).
  envNames = new Set(
    [
      ...program.ofType('gcp:cloudrunv2/job:Job').map((j) => j.inputs.template.template.containers[0]),
      ...program.ofType('gcp:cloudrunv2/service:Service').map((s) => s.inputs.template.containers[0]),
    ].flatMap((c) => (c.envs as { name: string }[]).map((e) => e.name)),
  );
});

const deployable = (Object.entries(deployedSettings) as [SettingName, Deployed][]).filter(
  (entry): entry is [SettingName, Extract<Deployed, { pulumi: string }>] => 'pulumi' in entry[1],
);

test.each(
  deployable.map(([variable, d]) => [variable, d.pulumi]),
)('%s (%s) reaches a job or service', (variable) => {
  expect([...envNames]).toContain(variable);
});

test("with image set, a routes file's folder is mounted: every file at its path, read by both accounts", () => {
  const job = program.ofType('gcp:cloudrunv2/job:Job').find((j) => j.inputs.name === 'routed-drain')!;
  const task = job.inputs.template.template;
  const env = Object.fromEntries(
    (task.containers[0].envs as { name: string; value?: string }[]).map((e) => [e.name, e.value]),
  );
  expect(env.ROUTES_FILE).toBe('/config/routes/routes.json');
  const volume = (
    task.volumes as { name: string; secret: { secret: string; items: { path: string }[] } }[]
  ).find((v) => v.name === 'routes')!;
  expect(volume.secret.secret).toBe('routed-routes');
  expect(volume.secret.items.map((i) => i.path)).toEqual(['events.schema.json', 'routes.json']);
  expect(task.containers[0].volumeMounts).toContainEqual({ name: 'routes', mountPath: '/config/routes' });
  const readers = program
    .ofType('gcp:secretmanager/secretIamMember:SecretIamMember')
    .filter((g) => g.inputs.secretId === 'routed-drain-routes-id')
    .map((g) => g.inputs.member)
    .sort();
  expect(readers).toEqual([
    'serviceAccount:routed-drain@proj.iam.gserviceaccount.com',
    'serviceAccount:routed-ops@proj.iam.gserviceaccount.com',
  ]);
});
