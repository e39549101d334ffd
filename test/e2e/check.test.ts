import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { createPipeline, e2eClients, type Pipeline, runCli } from '../support/job.js';
import { kcatProduce } from '../support/producers.js';
import { pullAll } from '../support/pubsub.js';

const clients = await e2eClients();

interface Report {
  ok: boolean;
  checks: { name: string; ok: boolean; detail: string }[];
  dryRun: { records: number; rows: number; deadLetters: Record<string, number>; tombstones: number };
}

async function check(env: Record<string, string>, args: string[] = []) {
  const started = Date.now();
  const { code, stdout, stderr } = await runCli(['check', '--json', ...args], env);
  const seconds = (Date.now() - started) / 1000;
  return { code, seconds, stderr, report: stdout.trim() === '' ? undefined : (JSON.parse(stdout) as Report) };
}

const failed = (report: Report | undefined) => report?.checks.filter((c) => !c.ok) ?? [];

/** A pipeline in the default mode with 2 partitions of 6 records each: 4 of them bad. */
async function goodPipeline(): Promise<Pipeline> {
  const pipeline = await createPipeline(clients, 2, { BQ_WRITE_MODE: 'storage-write' });
  for (const partition of [0, 1]) {
    await kcatProduce(
      pipeline.topic,
      partition,
      [
        JSON.stringify({ id: `a${partition}`, n: 1 }),
        JSON.stringify({ id: `b${partition}`, n: 2, note: 'x' }),
        `{"id": "c${partition}", "n": `, // broken JSON: decode
        JSON.stringify({ id: `d${partition}`, n: 'four' }), // not an INT64: schema
        JSON.stringify({ id: `e${partition}`, n: 5 }),
        JSON.stringify({ id: `f${partition}`, n: 6 }),
      ],
      'none',
    );
  }
  return pipeline;
}

describe('kafka-bigquery-drain check', () => {
  test('a good pipeline: every check passes, the dry run counts exactly, and nothing is left anywhere', async () => {
    const pipeline = await goodPipeline();
    const { code, report, stderr } = await check(pipeline.env, ['--records', '5']);
    expect(code, stderr).toBe(0);
    expect(report!.ok).toBe(true);
    expect(report!.checks.map((c) => c.name)).toEqual([
      'kafka',
      `topics (${pipeline.dataset}.events)`,
      `table ${pipeline.dataset}.events`,
      'firestore',
      'pubsub dead letters',
      'dry run',
    ]);
    expect(report!.checks.find((c) => c.name.startsWith('topics'))!.detail).toContain('2 partitions');
    expect(report!.checks.find((c) => c.name.startsWith('table'))!.detail).toContain('would be made');
    // 5 a partition of 6: the last record of each is not read
    expect(report!.dryRun).toMatchObject({
      records: 10,
      rows: 6,
      deadLetters: { decode: 2, schema: 2 },
      tombstones: 0,
    });

    // Nothing was made, written or published.
    const [datasetExists] = await clients.bigquery.dataset(pipeline.dataset).exists();
    expect(datasetExists).toBe(false);
    const state = await clients.firestore.collection('pipelines').doc(pipeline.id).listCollections();
    for (const collection of state) expect((await collection.get()).size, collection.id).toBe(0);
    expect(await pullAll(clients, pipeline.deadLetterSubscription)).toEqual([]);

    // On a terminal-less pipe without --json: one line a check, each marked, none wider than 120.
    const human = await runCli(['check'], pipeline.env);
    expect(human.code).toBe(0);
    const lines = human.stdout.trimEnd().split('\n');
    expect(lines.filter((l) => l.startsWith('✓ ')).length).toBe(6);
    expect(lines).toContain('dry run: 12 records: 8 rows, 4 dead letters, 0 tombstones skipped');
    for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(120);
  }, 120_000);

  test('a wrong broker port, a missing topic, a missing dead-letter topic: exit 1 within 30 s naming it', async () => {
    const pipeline = await goodPipeline();
    const cases: [Record<string, string>, string, RegExp][] = [
      [{ KAFKA_BROKERS: '127.0.0.1:19' }, 'kafka', /127\.0\.0\.1:19|ECONNREFUSED|Kafka/],
      [
        { KAFKA_TOPICS: `${pipeline.topic}-nope` },
        `topics (${pipeline.dataset}.events)`,
        /-nope not on the broker/,
      ],
      [
        { DEAD_LETTER_TOPIC: 'no-such-dead-letters' },
        'pubsub dead letters',
        /no-such-dead-letters does not exist/,
      ],
    ];
    for (const [env, name, says] of cases) {
      const { code, seconds, report } = await check({ ...pipeline.env, ...env });
      expect(code, name).toBe(1);
      expect(seconds, name).toBeLessThan(30);
      expect(
        failed(report).map((c) => c.name),
        name,
      ).toEqual([name]);
      expect(failed(report)[0]!.detail, name).toMatch(says);
    }
  }, 180_000);

  test('a registry subject that does not exist, and a schema file an existing table cannot follow: exit 1', async () => {
    const pipeline = await goodPipeline();
    const noSubject = await check({
      ...pipeline.env,
      BQ_SCHEMA_FILE: '',
      VALUE_FORMAT: 'avro',
      VALUE_SUBJECT: `${pipeline.topic}-missing-value`,
    });
    expect(noSubject.code).toBe(1);
    expect(noSubject.seconds).toBeLessThan(30);
    expect(failed(noSubject.report).map((c) => c.name)).toEqual([`registry (${pipeline.dataset}.events)`]);
    expect(failed(noSubject.report)[0]!.detail).toContain(`${pipeline.topic}-missing-value`);

    await clients.bigquery.createDataset(pipeline.dataset);
    await clients.bigquery.dataset(pipeline.dataset).createTable('events', {
      schema: {
        fields: [
          { name: 'id', type: 'STRING', mode: 'REQUIRED' },
          { name: 'n', type: 'STRING' },
        ],
      },
    });
    const conflicting = await check(pipeline.env);
    expect(conflicting.code).toBe(1);
    expect(conflicting.seconds).toBeLessThan(30);
    const table = failed(conflicting.report);
    expect(table.map((c) => c.name)).toEqual([`table ${pipeline.dataset}.events`]);
    expect(table[0]!.detail).toContain('column n changes type from STRING to INT64');
  }, 120_000);

  test('cdc mode: the partition count is looked at, never recorded; a changed count fails the check', async () => {
    const pipeline = await goodPipeline();
    const cdc = { ...pipeline.env, BQ_WRITE_MODE: 'cdc', CHANGE_FORMAT: 'upsert', BQ_PRIMARY_KEY: 'id' };
    const first = await check(cdc);
    expect(first.code, first.stderr).toBe(0);
    expect(first.report!.checks.find((c) => c.name === 'write mode')).toMatchObject({ ok: true });
    // The records judged as changes, as the cdc writer judges them: each upserts the row of its id.
    expect(first.report!.dryRun).toMatchObject({
      records: 12,
      rows: 8,
      deadLetters: { decode: 2, schema: 2 },
    });
    const known = clients.firestore.collection('pipelines').doc(pipeline.id).collection('cdc-topics');
    expect((await known.get()).size).toBe(0);

    // As if the pipeline had first drained the topic when it had one partition.
    await known.doc(pipeline.topic).create({ topic: pipeline.topic, partitions: 1, since: new Date() });
    const changed = await check(cdc);
    expect(changed.code).toBe(1);
    expect(failed(changed.report).map((c) => c.name)).toEqual(['write mode']);
    expect(failed(changed.report)[0]!.detail).toContain(`topic ${pipeline.topic} had 1 partitions`);
  }, 120_000);

  test('a bad variable: exit 2 naming it, nothing checked', async () => {
    const pipeline = await createPipeline(clients, 1);
    const badNumber = await runCli(['check'], { ...pipeline.env, BATCH_MAX_RECORDS: 'many' });
    expect(badNumber.code).toBe(2);
    expect(badNumber.stderr).toContain('BATCH_MAX_RECORDS');
    const schemaFile = join(tmpdir(), `${pipeline.id}-bad.schema.json`);
    writeFileSync(schemaFile, '{ not json');
    const badFile = await runCli(['check'], { ...pipeline.env, BQ_SCHEMA_FILE: schemaFile });
    expect(badFile.code).toBe(2);
    expect(badFile.stderr).toContain('BQ_SCHEMA_FILE');
  }, 60_000);
});
