/**
 * A transform end to end (TRANSFORM_MODULE), records written by kcat (librdkafka) with keys and headers:
 * it renames a field, derives one from a header and the key, drops test records (counted `filtered` in the
 * summary, the ledger and `verify`, no dead letter) and throws on one (a `transform` dead letter carrying its
 * message); in the default mode and in load mode. And UNKNOWN_FIELDS=json keeping the fields a table lacks,
 * FIELD_NAMES=sanitize mapping names BigQuery refuses.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import {
  createPipeline,
  deadLetterOffsets,
  e2eClients,
  errorsOf,
  runJob,
  runVerify,
} from '../support/job.js';
import { run } from '../support/producers.js';
import { stackEnv, uniqueName } from '../support/stack.js';

const clients = await e2eClients();

const transformModule = join(tmpdir(), `${uniqueName('transform')}.mjs`);
writeFileSync(
  transformModule,
  `export function transform(order, context) {
  if (order.test) return null;
  if (order.amount_cents === undefined) throw new Error('amount_cents missing in ' + order.order_id);
  return {
    id: order.order_id,
    n: order.amount_cents / 100,
    note: (context.headers.region ?? 'none') + '/' + (context.keyText ?? 'no key') + '@' + context.offset,
  };
}
`,
);

describe.each(['storage-write', 'load'])('%s mode', (mode) => {
  test('renamed, derived from a header and the key, test records filtered, a throw a transform dead letter', async () => {
    const pipeline = await createPipeline(clients, 1, {
      BQ_WRITE_MODE: mode,
      TRANSFORM_MODULE: transformModule,
    });
    const kcat = (key: string, headers: string[], value: object) =>
      run(
        'kcat',
        [
          ...['-b', stackEnv().KAFKA_BROKERS, '-P', '-t', pipeline.topic, '-p', '0', '-K', '\t'],
          ...headers.flatMap((h) => ['-H', h]),
        ],
        `${key}\t${JSON.stringify(value)}\n`,
      );
    await kcat('c-1', ['region=eu'], { order_id: 'o1', amount_cents: 1200 });
    await kcat('c-2', [], { order_id: 'o2', amount_cents: 300, test: true });
    await kcat('c-3', ['region=us'], { order_id: 'o3' });
    await kcat('c-4', ['region=ap'], { order_id: 'o4', amount_cents: 4500 });
    await kcat('c-5', [], { order_id: 'o5', test: true });

    const drained = await runJob(pipeline.env);
    expect(drained.code, errorsOf(drained.lines)).toBe(0);
    expect(drained.summary).toMatchObject({
      stopReason: 'caught_up',
      recordsRead: 5,
      rowsWritten: 2,
      deadLettered: 1,
      filtered: 2,
    });
    expect(drained.summary.partitions[0]).toMatchObject({ filtered: 2 });

    const [rows] = await clients.bigquery.query({
      query: `SELECT id, n, note, _kafka_offset AS o FROM \`${pipeline.dataset}.${pipeline.table}\` ORDER BY o`,
    });
    expect(rows).toEqual([
      { id: 'o1', n: 12, note: 'eu/c-1@0', o: 0 },
      { id: 'o4', n: 45, note: 'ap/c-4@3', o: 3 },
    ]);
    const { messages } = await deadLetterOffsets(clients, pipeline);
    expect(
      messages.map((m) => [m.attributes.source_offset, m.attributes.error_kind, m.attributes.error_message]),
    ).toEqual([['2', 'transform', 'transform threw: amount_cents missing in o3']]);

    const ledger = await clients.firestore
      .collection(`pipelines/${pipeline.id}/partitions/${pipeline.topic}~0/ledger`)
      .get();
    expect(ledger.docs.reduce((n, d) => n + ((d.get('filtered') as number | undefined) ?? 0), 0)).toBe(2);
    const verify = await runVerify(pipeline.env);
    expect(verify.code, JSON.stringify(verify.verdicts)).toBe(0);
    expect(verify.verdicts[0]).toMatchObject({ filtered: 2, ledgerRows: 2, tableRows: 2, deadLetters: 1 });
  });
});

test('UNKNOWN_FIELDS=json: the next run adds _extra, and fields the table lacks land in it exactly, as kcat wrote them', async () => {
  const pipeline = await createPipeline(clients, 1, { BQ_WRITE_MODE: 'storage-write' });
  const kcat = (lines: string[]) =>
    run(
      'kcat',
      ['-b', stackEnv().KAFKA_BROKERS, '-P', '-t', pipeline.topic, '-p', '0'],
      `${lines.join('\n')}\n`,
    );
  await kcat(['{"id":"r0","n":0}']);
  // The table made without _extra (UNKNOWN_FIELDS=reject, the default).
  expect((await runJob(pipeline.env)).code).toBe(0);
  await kcat([
    '{"id":"r1","n":1,"coupon":{"code":"X-1","pct":12.5},"tags":["a","b"],"big":9007199254740993}',
    '{"id":"r2","n":2}',
    '{"id":"r3","n":3,"note":"known","flag":true,"nothing":null}',
  ]);
  const kept = await runJob({ ...pipeline.env, UNKNOWN_FIELDS: 'json' });
  expect(kept.code, errorsOf(kept.lines)).toBe(0);
  expect(kept.summary).toMatchObject({ stopReason: 'caught_up', rowsWritten: 3, deadLettered: 0 });
  const [rows] = await clients.bigquery.query({
    query: `SELECT id, n, note, TO_JSON_STRING(_extra) AS extra
      FROM \`${pipeline.dataset}.${pipeline.table}\` ORDER BY id`,
  });
  expect(rows).toEqual([
    { id: 'r0', n: 0, note: null, extra: 'null' },
    {
      id: 'r1',
      n: 1,
      note: null,
      // Every digit of an integer beyond 2^53, as kcat wrote it (the emulator's JSON_VALUE reads it through
      // a double, so the text is what is compared).
      extra: expect.stringMatching(/"coupon":\{"code":"X-1","pct":12.5\}.*"big":9007199254740993/),
    },
    { id: 'r2', n: 2, note: null, extra: 'null' },
    { id: 'r3', n: 3, note: 'known', extra: expect.stringMatching(/"flag":true/) },
  ]);
  expect(JSON.parse(rows[1].extra as string)).toMatchObject({ tags: ['a', 'b'] });
  expect(JSON.parse(rows[3].extra as string)).toEqual({ flag: true, nothing: null });
});

test('FIELD_NAMES=sanitize: names BigQuery refuses mapped at every depth; two fields onto one name a dead letter', async () => {
  const schemaFile = join(tmpdir(), `${uniqueName('names')}.schema.json`);
  writeFileSync(
    schemaFile,
    JSON.stringify([
      { name: 'id', type: 'STRING', mode: 'REQUIRED' },
      { name: 'user_id', type: 'STRING' },
      { name: '_1st', type: 'INT64' },
      { name: 'order', type: 'RECORD', fields: [{ name: 'unit_price', type: 'NUMERIC' }] },
    ]),
  );
  const pipeline = await createPipeline(clients, 1, { BQ_SCHEMA_FILE: schemaFile, FIELD_NAMES: 'sanitize' });
  await run(
    'kcat',
    ['-b', stackEnv().KAFKA_BROKERS, '-P', '-t', pipeline.topic, '-p', '0'],
    [
      '{"id":"a","user-id":"u-1","1st":7,"order":{"unit-price":"12.50"}}',
      '{"id":"b","user-id":"u-2","user_id":"u-3"}',
      '{"id":"c","user_id":"u-4"}',
    ].join('\n') + '\n',
  );
  const drained = await runJob(pipeline.env);
  expect(drained.code, errorsOf(drained.lines)).toBe(0);
  expect(drained.summary).toMatchObject({ stopReason: 'caught_up', rowsWritten: 2, deadLettered: 1 });
  const [rows] = await clients.bigquery.query({
    query: `SELECT id, user_id, _1st, CAST(\`order\`.unit_price AS STRING) AS price FROM \`${pipeline.dataset}.${pipeline.table}\` ORDER BY id`,
  });
  expect(rows).toEqual([
    { id: 'a', user_id: 'u-1', _1st: 7, price: '12.5' },
    { id: 'c', user_id: 'u-4', _1st: null, price: null },
  ]);
  const { messages } = await deadLetterOffsets(clients, pipeline);
  expect(
    messages.map((m) => [m.attributes.source_offset, m.attributes.error_kind, m.attributes.error_message]),
  ).toEqual([
    [
      '1',
      'schema',
      'fields "user-id" and "user_id" both map to the column name "user_id" (FIELD_NAMES=sanitize)',
    ],
  ]);
});
