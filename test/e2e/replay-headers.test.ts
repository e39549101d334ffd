/**
 * A replayed dead letter is the record as the drain saw it (#64): records written by kcat (librdkafka)
 * with keys and headers (a name repeated), refused by a rule, replayed after the rule is fixed: each
 * replayed row equals, column by column but `_ingested_at`, the row a clean run of the same records writes
 * into another table, through a transform that reads the headers and the key, with the `_kafka_headers` and
 * `_kafka_key_text` columns. A letter whose key was too large for Pub/Sub's attributes stays in the
 * subscription with its reason, and the replay exits 1 saying how many stayed.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { createPipeline, e2eClients, errorsOf, type Pipeline, runCli, runJob } from '../support/job.js';
import { run } from '../support/producers.js';
import { stackEnv, uniqueName } from '../support/stack.js';

const clients = await e2eClients();

function module(body: string): string {
  const file = join(tmpdir(), `${uniqueName('module')}.mjs`);
  writeFileSync(file, body);
  return file;
}
const strict = module(
  "export function validate(row) { return row.n % 2 === 0 ? true : 'n ' + row.n + ' is odd'; }",
);
const fixed = module('export function validate() { return true; }');
const transform = module(
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

describe.each(['storage-write', 'merge', 'load'])('%s mode', (mode) => {
  test('replayed rows equal a clean run’s, headers and key included; a letter that cannot be replayed whole stays (exit 1)', async () => {
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
    expect(drained.summary).toMatchObject({ rowsWritten: 4, deadLettered: 4 });

    const replay = await runCli(['replay-dead-letters', '--subscription', pipeline.deadLetterSubscription], {
      ...pipeline.env,
      RULES_MODULE: fixed,
    });
    expect(replay.stdout).toContain('replayed 3, still failing 1');
    expect(replay.stdout).toMatch(/its key was too large for a Pub\/Sub attribute/);
    expect(replay.stdout).toContain('1 letters fail again and stay in the subscription');
    expect(replay.code).toBe(1);

    // The same records drained by a clean run (the rule already fixed) into a table of another pipeline.
    const clean = await createPipeline(clients, 1, { ...settings, RULES_MODULE: fixed });
    clean.env.KAFKA_TOPICS = pipeline.topic;
    const cleanRun = await runJob(clean.env);
    expect(cleanRun.code, errorsOf(cleanRun.lines)).toBe(0);
    expect(cleanRun.summary).toMatchObject({ rowsWritten: 8, deadLettered: 0 });

    const replayed = await rowsOf(pipeline);
    const expected = await rowsOf(clean);
    expect([...replayed.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
    for (const [offset, row] of replayed) expect(row, `offset ${offset}`).toBe(expected.get(offset));
    expect(JSON.parse(replayed.get(1)!)).toMatchObject({ note: 'web/x,y/k-1', _kafka_key_text: 'k-1' });
  });
});
