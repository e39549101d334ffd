import { afterAll, expect, test } from 'vitest';
import { compileRowText } from '../../functions/encoders/row-text.js';
import { createMemoryLogger } from '../../functions/kernel/logger.js';
import type { RowToWrite, TextRow } from '../../functions/kernel/records.js';
import { type RowShape, rowKey, toRow } from '../../functions/records/records.js';
import type { SchemaField } from '../../functions/schema/table-schema.js';
import { ensureTargetTable } from '../../functions/sinks/bigquery-tables.js';
import { createInsertAllSink } from '../../functions/sinks/insert-all-sink.js';
import { record } from '../support/memory-ports.js';
import { stackClients, uniqueName } from '../support/stack.js';

const clients = await stackClients();
afterAll(() => clients.close());

const userFields = [
  { name: 'id', type: 'STRING', mode: 'REQUIRED' as const },
  { name: 'n', type: 'INT64', mode: 'NULLABLE' as const },
  { name: 'tags', type: 'STRING', mode: 'REPEATED' as const },
  { name: 'meta', type: 'RECORD', mode: 'NULLABLE' as const, fields: [{ name: 'source', type: 'STRING' }] },
];

/** A new target table in a dataset of its own, and an insert-all sink into it. */
async function insertAllSink(maxRowsPerRequest: number, fields: readonly SchemaField[] = userFields) {
  const dataset = uniqueName('sink');
  const table = await ensureTargetTable(
    clients.bigquery,
    { dataset, table: 'target', location: null },
    fields,
  );
  const sink = createInsertAllSink(table, {
    maxRowsPerRequest,
    maxBytesPerRequest: 5_000_000,
    retry: { attempts: 3, initialDelayMs: 1, maxDelayMs: 5 },
    logger: createMemoryLogger(),
  });
  return { dataset, sink };
}

test('the target table is created with metadata columns, partitioning and clustering', async () => {
  const dataset = uniqueName('sink');
  const table = await ensureTargetTable(
    clients.bigquery,
    { dataset, table: 'target', location: null },
    userFields,
  );
  await ensureTargetTable(clients.bigquery, { dataset, table: 'target', location: null }, userFields);
  const [metadata] = await table.getMetadata();
  expect(metadata.schema.fields.map((f: { name: string }) => f.name)).toEqual([
    'id',
    'n',
    'tags',
    'meta',
    '_kafka_topic',
    '_kafka_partition',
    '_kafka_offset',
    '_kafka_timestamp',
    '_kafka_key',
    '_ingested_at',
  ]);
  // The emulator keeps what was asked for, even though it does not prune by it.
  expect(metadata.timePartitioning).toMatchObject({ type: 'DAY', field: '_kafka_timestamp' });
  expect(metadata.clustering).toEqual({ fields: ['_kafka_topic', '_kafka_partition', '_kafka_offset'] });
});

test('insert-all writes rows in several requests and returns one result per row, rejections included', async () => {
  const { dataset, sink } = await insertAllSink(7);
  const rows = Array.from({ length: 20 }, (_, i) =>
    toRow(
      record(
        'orders',
        0,
        i,
        i === 13
          ? { id: 'x', no_such_column: 1 }
          : { id: `id${i}`, n: i, tags: ['a'], meta: { source: 's' } },
      ),
      new Date(),
    ),
  ) as RowToWrite[];
  const results = await sink.write(rows);

  expect(results.filter((r) => r.ok)).toHaveLength(19);
  expect(results[13]).toMatchObject({ ok: false, reason: expect.stringContaining('no_such_column') });
  const [out] = await clients.bigquery.query({
    query: `SELECT COUNT(*) AS c, COUNT(DISTINCT _kafka_offset) AS d, MIN(_kafka_offset) AS lo, MAX(_kafka_offset) AS hi FROM \`${dataset}.target\``,
  });
  expect(out[0]).toEqual({ c: 19, d: 19, lo: 0, hi: 19 });
});

test("insert-all writes a value holding the client's URL template `{{projectId}}` as it is", async () => {
  const { dataset, sink } = await insertAllSink(500);
  const value = {
    id: 'a {{projectId}} b',
    tags: ['{{projectId}}'],
    meta: { source: '{{projectId}}{{projectId}}' },
  };
  const results = await sink.write([toRow(record('orders', 0, 0, value), new Date()) as RowToWrite]);
  expect(results).toEqual([{ ok: true }]);
  const [out] = await clients.bigquery.query({
    query: `SELECT id, tags, meta.source AS source FROM \`${dataset}.target\``,
  });
  expect(out).toEqual([{ id: value.id, tags: value.tags, source: value.meta.source }]);
});

test("rows made from their records' JSON text land as the general path's rows do; read back with the BigQuery client", async () => {
  const fields: SchemaField[] = [
    { name: 'id', type: 'STRING', mode: 'REQUIRED' },
    { name: 'n', type: 'INT64' },
    { name: 'f', type: 'FLOAT64' },
    { name: 'ok', type: 'BOOL' },
    { name: 'amount', type: 'NUMERIC' },
    { name: 'day', type: 'DATE' },
    { name: 'at', type: 'TIMESTAMP' },
    { name: 'tags', type: 'STRING', mode: 'REPEATED' },
    {
      name: 'meta',
      type: 'RECORD',
      fields: [
        { name: 'source', type: 'STRING' },
        { name: 'w', type: 'FLOAT64' },
      ],
    },
    {
      name: 'lines',
      type: 'RECORD',
      mode: 'REPEATED',
      fields: [
        { name: 'sku', type: 'STRING' },
        { name: 'units', type: 'INT64' },
      ],
    },
  ];
  const shape: RowShape = { fields, unknownFields: 'reject' };
  const values = [
    '{"id":"a","n":-123456789012345,"f":0.1,"ok":true,"amount":"-12345678901234567890123456789.123456789","day":"2024-02-29","at":"2026-01-31T13:00:00.123456Z","tags":["x","","ü ✓"],"meta":{"source":"s","w":1e21},"lines":[{"sku":"k1","units":2},{"sku":"k2"}]}',
    ' { "id" : "b" , "tags" : [ ] , "meta" : { } , "lines" : [ ] } ',
    '{"id":"c","n":null,"f":5e-324,"ok":false,"amount":"0.5","day":"0001-01-01","at":"1969-12-31 23:59:59.999999Z","meta":null}',
    '{"id":"{{projectId}}","f":123456789.123456789,"at":"2026-01-31T13:00:00.123456789Z"}',
  ];
  const ingestedAt = new Date('2026-12-02T10:00:00.000Z');
  const records = values.map((v, i) => ({
    ...record('orders', 0, i, v),
    key: i % 2 === 0 ? null : Buffer.from(`k${i}`),
  }));
  const rowText = compileRowText(shape)!;
  const texts: TextRow[] = records.map((r) => ({
    rowKey: rowKey(r),
    record: r,
    json: rowText(r, ingestedAt)!,
  }));
  // Every one of them made from its text (none left to the general path), and valid JSON.
  expect(texts.filter((t) => t.json === undefined)).toEqual([]);
  for (const t of texts) JSON.parse(t.json.toString());
  const objects = records.map((r) => toRow(r, ingestedAt, shape) as RowToWrite);

  const byText = await insertAllSink(500, fields);
  const byObject = await insertAllSink(500, fields);
  expect(await byText.sink.write(texts)).toEqual(texts.map(() => ({ ok: true })));
  expect(await byObject.sink.write(objects)).toEqual(objects.map(() => ({ ok: true })));
  const read = async (dataset: string) =>
    (
      await clients.bigquery.query({ query: `SELECT * FROM \`${dataset}.target\` ORDER BY _kafka_offset` })
    )[0];
  const [fromText, fromObject] = [await read(byText.dataset), await read(byObject.dataset)];
  expect(fromText).toHaveLength(4);
  expect(fromText).toEqual(fromObject);
  expect(fromText[0]).toMatchObject({
    id: 'a',
    tags: ['x', '', 'ü ✓'],
    lines: [{ sku: 'k1' }, { sku: 'k2' }],
  });
  expect(fromText[3]).toMatchObject({ id: '{{projectId}}' });
});
