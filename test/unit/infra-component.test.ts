/**
 * A team's own Pulumi program, outside this repository (a temporary folder with its own schema file),
 * with three `DrainPipeline`s: two writing a dataset that exists (`shop`), one its own. Under mocks: one
 * Firestore database, every name unique, each job's environment exactly its own pipeline's.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as pulumi from '@pulumi/pulumi';
import { beforeAll, expect, test } from 'vitest';
import { DrainPipeline, type DrainPipelineArgs, PipelinesOverview } from '../../infra/component.js';
import { runOwnProgram } from '../support/pulumi-program.js';

const folder = mkdtempSync(join(tmpdir(), 'team-program-'));
const schemaFile = join(folder, 'payments.schema.json');
writeFileSync(schemaFile, JSON.stringify([{ name: 'payment_id', type: 'STRING', mode: 'REQUIRED' }]));
const image = 'europe-west1-docker.pkg.dev/acme-data/drain/kafka-bigquery-drain@sha256:abc';

let program: Awaited<ReturnType<typeof runOwnProgram>>;
beforeAll(async () => {
  program = await runOwnProgram(async () => {
    const common = {
      project: 'proj',
      region: 'europe-west1',
      kafkaBrokers: 'b1:9092',
      schemaFile,
      image,
      kafkaSsl: false,
    } satisfies Partial<DrainPipelineArgs>;
    const pipelines = [
      new DrainPipeline('payments', {
        ...common,
        pipelineId: 'payments',
        kafkaTopics: 'payments',
        dataset: 'shop',
        table: 'payments',
        existingDatasets: ['shop'],
        batchMaxRecords: 2000,
        kafkaSaslMechanism: 'plain',
        kafkaSaslUsername: 'key',
        kafkaSaslPassword: pulumi.secret('secret'),
      }),
      new DrainPipeline('refunds', {
        ...common,
        pipelineId: 'refunds',
        kafkaTopics: 'refunds',
        dataset: 'shop',
        table: 'refunds',
        existingDatasets: ['shop'],
        firestoreDatabase: 'existing',
        writeMode: 'merge',
      }),
      new DrainPipeline('clicks', {
        ...common,
        pipelineId: 'clicks',
        kafkaTopics: 'clicks',
        dataset: 'web',
        table: 'clicks',
        firestoreDatabase: 'existing',
        startPosition: 'latest',
        // Follows the log: executions back to back, freshness in seconds (issue #68).
        drainUntil: 'budget',
      }),
    ];
    const overview = new PipelinesOverview('overview', { pipelines });
    return [...pipelines.map((p) => p.outputs.jobName), overview.dashboard.dashboardJson];
  });
});

const jobEnv = (job: string) => {
  const found = program.ofType('gcp:cloudrunv2/job:Job').find((j) => j.inputs.name === job)!;
  const list: { name: string; value?: string }[] = found.inputs.template.template.containers[0].envs;
  return Object.fromEntries(list.map((e) => [e.name, e.value ?? '(secret)']));
};

test('one Firestore database; the existing dataset adopted, the other made', () => {
  expect(program.ofType('gcp:firestore/database:Database')).toHaveLength(1);
  expect(program.ofType('gcp:bigquery/dataset:Dataset').map((d) => d.inputs.datasetId)).toEqual(['web']);
  const tables = program
    .ofType('gcp:bigquery/table:Table')
    .map((t) => `${t.inputs.datasetId}.${t.inputs.tableId}`);
  expect(tables.sort()).toEqual([
    'shop.payments',
    'shop.payments_dead_letters',
    'shop.refunds',
    'shop.refunds_dead_letters',
    'web.clicks',
    'web.clicks_dead_letters',
  ]);
});

test('every resource name and every Google-side name is unique', () => {
  const urns = program.urns;
  expect(new Set(urns).size).toBe(urns.length);
  const logical = program.resources.map((r) => `${r.type}::${r.name}`);
  expect(new Set(logical).size).toBe(logical.length);
  const googleNames = program.resources
    .filter((r) => !/Iam|IAM|projects\/service/.test(r.type))
    .flatMap((r) =>
      [r.inputs.name, r.inputs.accountId, r.inputs.secretId, r.inputs.repositoryId, r.inputs.serviceId]
        .filter((n): n is string => typeof n === 'string' && n !== '(default)')
        .map((n) => `${r.type} ${n}`),
    );
  expect(googleNames.length).toBeGreaterThan(30);
  expect(new Set(googleNames).size).toBe(googleNames.length);
});

test("each job's environment is exactly its own pipeline's", () => {
  const payments = jobEnv('payments-drain');
  expect(payments).toMatchObject({
    PIPELINE_ID: 'payments',
    KAFKA_TOPICS: 'payments',
    BQ_DATASET: 'shop',
    BQ_TABLE: 'payments',
    BQ_WRITE_MODE: 'storage-write',
    DEAD_LETTER_TOPIC: 'payments-dead-letters',
    BATCH_MAX_RECORDS: '2000',
    KAFKA_SASL_PASSWORD: '(secret)',
  });
  expect(jobEnv('refunds-drain')).toMatchObject({
    PIPELINE_ID: 'refunds',
    BQ_TABLE: 'refunds',
    BQ_WRITE_MODE: 'merge',
    DEAD_LETTER_TOPIC: 'refunds-dead-letters',
  });
  expect(jobEnv('refunds-drain').BATCH_MAX_RECORDS).toBeUndefined();
  expect(jobEnv('clicks-drain')).toMatchObject({
    PIPELINE_ID: 'clicks',
    BQ_DATASET: 'web',
    START_POSITION: 'latest',
  });
  expect(jobEnv('clicks-drain').KAFKA_SASL_PASSWORD).toBeUndefined();
  // Following the log, every 5 minutes: each run 330 s, the next starting 30 s before this one stops.
  expect(jobEnv('clicks-drain')).toMatchObject({ DRAIN_UNTIL: 'budget', DRAIN_BUDGET_SECONDS: '330' });
  // The operations jobs follow their own pipeline's.
  expect(jobEnv('payments-ops')).toEqual(jobEnv('payments-drain'));
  expect(jobEnv('clicks-ops')).toEqual(jobEnv('clicks-drain'));
});

test('a wrong argument is refused naming the pipeline and the key', async () => {
  expect(
    () =>
      new DrainPipeline('broken', {
        project: 'proj',
        pipelineId: 'broken',
        kafkaBrokers: 'b:1',
        kafkaTopics: 't',
        schemaFile,
        image,
        taskCount: 'three' as unknown as number,
      }),
  ).toThrow(/DrainPipeline broken: argument taskCount must be a number/);
});

test('one overview across the pipelines, freshness per pipeline first; each keeps its own dashboard', () => {
  const dashboards = program.ofType('gcp:monitoring/dashboard:Dashboard');
  expect(dashboards).toHaveLength(4);
  const overview = JSON.parse(dashboards.find((d) => d.name === 'overview-dashboard')!.inputs.dashboardJson);
  expect(overview.displayName).toBe('kafka-bigquery-drain: payments, refunds, clicks');
  const titles: string[] = overview.mosaicLayout.tiles.map(
    (t: { widget: { title: string } }) => t.widget.title,
  );
  expect(titles.slice(0, 3)).toEqual([
    'payments: freshness at run ends (max; target 600 s)',
    'refunds: freshness at run ends (max; target 600 s)',
    'clicks: freshness at run ends (max; target 60 s)',
  ]);
  const filters: string[] = overview.mosaicLayout.tiles.map(
    (t: {
      widget: { xyChart: { dataSets: { timeSeriesQuery: { timeSeriesFilter: { filter: string } } }[] } };
    }) => t.widget.xyChart.dataSets[0]!.timeSeriesQuery.timeSeriesFilter.filter,
  );
  expect(filters[0]).toContain('kbd_payments_freshness');
  expect(filters[2]).toContain('kbd_clicks_freshness');
  expect(filters.some((f) => f.includes('select_slo_budget_fraction') && f.includes('kbd-refunds'))).toBe(
    true,
  );
  // Tiles never overlap.
  const spots = overview.mosaicLayout.tiles.map((t: { xPos: number; yPos: number }) => `${t.xPos},${t.yPos}`);
  expect(new Set(spots).size).toBe(spots.length);
});

test("one image serves them all: each job reads its own schema file, mounted from the team's folder", () => {
  const images = program
    .ofType('gcp:cloudrunv2/job:Job')
    .map((j) => j.inputs.template.template.containers[0].image);
  expect(new Set(images)).toEqual(new Set([image]));
  expect(program.ofType('command:local:Command')).toEqual([]); // nothing built
  expect(jobEnv('payments-drain').BQ_SCHEMA_FILE).toBe('/config/bq-schema-file/schema.json');
  const versions = program
    .ofType('gcp:secretmanager/secretVersion:SecretVersion')
    .filter((v) => v.name.endsWith('BQ_SCHEMA_FILE-v'));
  expect(versions.map((v) => v.name).sort()).toEqual([
    'clicks-drain-BQ_SCHEMA_FILE-v',
    'payments-drain-BQ_SCHEMA_FILE-v',
    'refunds-drain-BQ_SCHEMA_FILE-v',
  ]);
  // Marked secret by the provider: the mocks see `{ value }`.
  const text = (data: unknown) => (typeof data === 'string' ? data : (data as { value: string }).value);
  for (const v of versions)
    expect(JSON.parse(text(v.inputs.secretData))).toEqual([
      { name: 'payment_id', type: 'STRING', mode: 'REQUIRED' },
    ]);
});

test('a pipeline id too long for its accounts is refused', () => {
  expect(
    () =>
      new DrainPipeline('long', {
        project: 'proj',
        pipelineId: 'orders-europe-west-production',
        kafkaBrokers: 'b:1',
        kafkaTopics: 't',
        schemaFile,
        image,
      }),
  ).toThrow(/pipelineId "orders-europe-west-production" is over 24 characters/);
});

test('the dispatcher bounds are checked as the drain checks them, naming the key', async () => {
  const base = {
    project: 'proj',
    pipelineId: 'bounded',
    kafkaBrokers: 'b:1',
    kafkaTopics: 't',
    schemaFile,
    image,
  };
  expect(() => new DrainPipeline('a', { ...base, dispatchMinTasks: 2 })).toThrow(
    /dispatchMinTasks: is set without dispatchMaxTasks/,
  );
  expect(() => new DrainPipeline('b', { ...base, dispatchMinTasks: 5, dispatchMaxTasks: 4 })).toThrow(
    /dispatchMinTasks: DISPATCH_MIN_TASKS: \(5\) is above DISPATCH_MAX_TASKS \(4\)/,
  );
  // load, hourly, 96 loads a table a day: 4 tasks get one each, 5 would not.
  expect(
    () =>
      new DrainPipeline('c', {
        ...base,
        writeMode: 'load',
        schedule: '0 * * * *',
        loadJobsPerTablePerDay: 96,
        dispatchMaxTasks: 5,
      }),
  ).toThrow(/dispatchMaxTasks: DISPATCH_MAX_TASKS: \(5\) is too many for load mode/);
  // Back to back executions and the dispatcher's count of running tasks do not go together.
  expect(() => new DrainPipeline('d', { ...base, drainUntil: 'budget', dispatchMaxTasks: 4 })).toThrow(
    /drainUntil budget.*dispatchMaxTasks/,
  );
});
