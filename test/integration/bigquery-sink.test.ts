import { afterAll, expect, test } from 'vitest';
import { createMemoryLogger } from '../../functions/drain/logger.js';
import type { RowToWrite } from '../../functions/drain/types.js';
import { toRow } from '../../functions/records/records.js';
import { createInsertAllSink, ensureTargetTable } from '../../functions/sinks/bigquery-sink.js';
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
async function insertAllSink(maxRowsPerRequest: number) {
  const dataset = uniqueName('sink');
  const table = await ensureTargetTable(
    clients.bigquery,
    { dataset, table: 'target', location: null },
    userFields,
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
