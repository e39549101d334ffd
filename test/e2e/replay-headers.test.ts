import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import {
  createPipeline,
  e2eClients,
  errorsOf,
  moduleFile,
  type Pipeline,
  runCli,
  runJob,
} from '../support/job.js';
import { run } from '../support/producers.js';
import { stackEnv } from '../support/stack.js';

const clients = await e2eClients();

const strict = moduleFile(
  "export function validate(row) { return row.n % 2 === 0 ? true : 'n ' + row.n + ' is odd'; }",
);
const fixed = moduleFile('export function validate() { return true; }');
const transform = moduleFile(
  `export function transform(order, context) {
  return { ...order, note: context.headers.source + '/' + context.headers.trace + '/' + context.keyText };
}
`,
);
const longKey = `k-${'x'.repeat(1_500)}`;

/** kcat, as a producer no one here wrote: one keyed record, the same headers on each (trace twice). */
async function produce(topic: string): Promise<void> {
  const lines = Array.from(
    { length: 8 },
    (_, n) => `${n === 7 ? longKey : `k-${n}`}\t${JSON.stringify({ id: `r${n}`, n })}`,
  );
  await run(
    'kcat',
    [
      ...['-b', stackEnv().KAFKA_BROKERS, '-P', '-t', topic, '-p', '0', '-K', '\t'],
      ...['-H', 'source=web', '-H', 'trace=x', '-H', 'trace=y'],
    ],
    `${lines.join('\n')}\n`,
  );
  // Offset 8: a header too large for a Pub/Sub attribute (its letter says `kafka_headers_missing`).
  await run(
    'kcat',
    [
      ...['-b', stackEnv().KAFKA_BROKERS, '-P', '-t', topic, '-p', '0', '-K', '\t'],
      ...['-H', 'source=batch', '-H', 'trace=z', '-H', `blob=${'b'.repeat(1_200)}`],
    ],
    `k-8\t${JSON.stringify({ id: 'r8', n: 9 })}\n`,
  );
}

const columns = [
  'id',
  'n',
  'note',
  '_kafka_topic',
  '_kafka_partition',
  '_kafka_offset',
  '_kafka_timestamp',
  '_kafka_key',
  '_kafka_key_text',
  '_kafka_headers',
];

/** Every column but `_ingested_at`, by offset, as JSON text. */
async function rowsOf(pipeline: Pipeline): Promise<Map<number, string>> {
  const [rows] = await clients.bigquery.query({
    query: `SELECT ${columns.join(', ')} FROM \`${pipeline.dataset}.${pipeline.table}\``,
  });
  return new Map(rows.map((r: Record<string, unknown>) => [Number(r._kafka_offset), JSON.stringify(r)]));
}

describe.each([
  ['storage-write', true],
  ['merge', true],
  ['load', true],
  ['insert-all', false],
])('%s mode', (mode, errorTableKeepsLetters) => {
  test('replayed rows equal a clean run’s, headers and key included, those too large for Pub/Sub taken from the error table', async () => {
    const settings = {
      BQ_WRITE_MODE: mode,
      TRANSFORM_MODULE: transform,
      BQ_HEADERS_COLUMN: 'true',
      BQ_KEY_TEXT_COLUMN: 'true',
    };
    const pipeline = await createPipeline(clients, 1, { ...settings, RULES_MODULE: strict });
    await produce(pipeline.topic);
    const drained = await runJob(pipeline.env);
    expect(drained.code, errorsOf(drained.lines)).toBe(0);
    // Offsets 1, 3, 5, 7 (its key 1,502 bytes) and 8 (a 1,200-byte header) refused by the rule.
    expect(drained.summary).toMatchObject({ rowsWritten: 4, deadLettered: 5 });

    const replay = await runCli(['replay-dead-letters', '--subscription', pipeline.deadLetterSubscription], {
      ...pipeline.env,
      RULES_MODULE: fixed,
    });
    if (errorTableKeepsLetters) {
      expect(replay.stdout, replay.stderr).toContain('replayed 5, still failing 0');
      expect(replay.code, replay.stdout + replay.stderr).toBe(0);
    } else {
      // insert-all: the error table is what Pub/Sub had; the two letters stay, each with its reason.
      expect(replay.stdout).toContain('replayed 3, still failing 2');
      expect(replay.stdout).toMatch(/its key was too large for a Pub\/Sub attribute .*insert-all mode/);
      expect(replay.stdout).toMatch(/its headers were too large for a Pub\/Sub attribute .*insert-all mode/);
      expect(replay.stdout).toContain('2 letters fail again and stay in the subscription');
      expect(replay.code).toBe(1);
    }

    // The same records drained by a clean run (the rule already fixed) into a table of another pipeline.
    const clean = await createPipeline(clients, 1, { ...settings, RULES_MODULE: fixed });
    clean.env.KAFKA_TOPICS = pipeline.topic;
    const cleanRun = await runJob(clean.env);
    expect(cleanRun.code, errorsOf(cleanRun.lines)).toBe(0);
    expect(cleanRun.summary).toMatchObject({ rowsWritten: 9, deadLettered: 0 });

    const replayed = await rowsOf(pipeline);
    const expected = await rowsOf(clean);
    expect([...replayed.keys()].sort()).toEqual(
      errorTableKeepsLetters ? [0, 1, 2, 3, 4, 5, 6, 7, 8] : [0, 1, 2, 3, 4, 5, 6],
    );
    for (const [offset, row] of replayed) expect(row, `offset ${offset}`).toBe(expected.get(offset));
    expect(JSON.parse(replayed.get(1)!)).toMatchObject({ note: 'web/x,y/k-1', _kafka_key_text: 'k-1' });
    if (errorTableKeepsLetters) {
      expect(JSON.parse(replayed.get(7)!)).toMatchObject({ _kafka_key_text: longKey });
      expect(JSON.parse(replayed.get(8)!)).toMatchObject({ note: 'batch/z/k-8' });
    }
  });
});

describe.each(['storage-write', 'merge'])('%s mode, routes chosen by a header', (mode) => {
  test('a replayed letter goes back to the table its header chose', async () => {
    const pipeline = await createPipeline(clients, 1, { BQ_WRITE_MODE: mode });
    const { dataset, topic } = pipeline;
    const routesFile = join(tmpdir(), `${pipeline.id}.routes.json`);
    const schemaFile = pipeline.env.BQ_SCHEMA_FILE;
    const routes = (rulesModule: string) =>
      writeFileSync(
        routesFile,
        JSON.stringify(
          ['order', 'refund'].map((kind) => ({
            topics: [topic],
            table: `${dataset}.${kind}s`,
            schemaFile,
            rulesModule,
            when: { header: { kind } },
          })),
        ),
      );
    routes(strict);
    for (const key of ['KAFKA_TOPICS', 'BQ_TABLE', 'BQ_SCHEMA_FILE']) delete pipeline.env[key];
    pipeline.env.ROUTES_FILE = routesFile;
    // kcat: orders at offsets 0-3, refunds at 4-7, each kind in its `kind` header.
    for (const [kind, from] of [
      ['order', 0],
      ['refund', 4],
    ] as const) {
      const lines = Array.from({ length: 4 }, (_, i) => JSON.stringify({ id: `${kind}-${i}`, n: from + i }));
      await run(
        'kcat',
        ['-b', stackEnv().KAFKA_BROKERS, '-P', '-t', topic, '-p', '0', '-H', `kind=${kind}`],
        `${lines.join('\n')}\n`,
      );
    }
    const drained = await runJob(pipeline.env);
    expect(drained.code, errorsOf(drained.lines)).toBe(0);
    expect(drained.summary).toMatchObject({ rowsWritten: 4, deadLettered: 4 });

    routes(fixed);
    const replay = await runCli(
      ['replay-dead-letters', '--subscription', pipeline.deadLetterSubscription],
      pipeline.env,
    );
    expect(replay.stdout, replay.stderr).toContain('replayed 4, still failing 0');
    expect(replay.code).toBe(0);
    const offsetsIn = async (table: string) => {
      const [rows] = await clients.bigquery.query({
        query: `SELECT _kafka_offset AS o FROM \`${dataset}.${table}\` ORDER BY o`,
      });
      return rows.map((r: { o: number }) => Number(r.o));
    };
    expect(await offsetsIn('orders')).toEqual([0, 1, 2, 3]);
    expect(await offsetsIn('refunds')).toEqual([4, 5, 6, 7]);
  });
});
