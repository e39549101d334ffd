/**
 * The storage-write sink against the patched emulator, read back with Google's own BigQuery client: every
 * type the schema allows lands as it was sent, rows are invisible until the commit, a stream commits once,
 * a stream's state is known, and dead letters land in the error table keyed by origin.
 */
import { afterAll, describe, expect, test } from 'vitest';
import { createMemoryLogger } from '../../functions/kernel/logger.js';
import type { KafkaRecord, RowToWrite } from '../../functions/kernel/records.js';
import { createStorageWriteSink } from '../../functions/modes/storage-write/storage-write-sink.js';
import { isDeadLetter, toRow } from '../../functions/records/records.js';
import { type SchemaField, targetTableSchema } from '../../functions/schema/table-schema.js';
import { ensureTargetTable } from '../../functions/sinks/bigquery-tables.js';
import type { EncodedRow, StreamSink } from '../../functions/sinks/contracts.js';
import { stackClients, stackEnv, stackWriter, uniqueName } from '../support/stack.js';

/** The rows encoded as the writer encodes a batch. */
async function encodeAll(sink: StreamSink, rows: readonly RowToWrite[]): Promise<EncodedRow[]> {
  const encoding = await sink.startEncoding();
  for (const row of rows) encoding.add(row);
  return encoding.finish();
}

const clients = await stackClients();
const env = stackEnv() as unknown as Record<string, string>;
const sinks: { close(): void }[] = [];
afterAll(async () => {
  for (const s of sinks) s.close();
  await clients.close();
});

const userFields: SchemaField[] = [
  { name: 'id', type: 'STRING', mode: 'REQUIRED' },
  { name: 'i', type: 'INT64' },
  { name: 'big', type: 'INT64' },
  { name: 'f', type: 'FLOAT64' },
  { name: 'b', type: 'BOOL' },
  { name: 'n', type: 'NUMERIC' },
  { name: 'bn', type: 'BIGNUMERIC' },
  { name: 'bytes', type: 'BYTES' },
  { name: 'd', type: 'DATE' },
  { name: 't', type: 'TIME' },
  { name: 'dt', type: 'DATETIME' },
  { name: 'ts', type: 'TIMESTAMP' },
  { name: 'j', type: 'JSON' },
  { name: 'g', type: 'GEOGRAPHY' },
  { name: 'tags', type: 'STRING', mode: 'REPEATED' },
  {
    name: 'item',
    type: 'RECORD',
    fields: [
      { name: 'sku', type: 'STRING' },
      { name: 'qty', type: 'INT64' },
    ],
  },
];

async function sinkOn(fields: SchemaField[]) {
  const dataset = uniqueName('sw_sink');
  const table = 'events';
  await ensureTargetTable(clients.bigquery, { dataset, table, location: null }, fields);
  const sink = createStorageWriteSink({
    bigquery: clients.bigquery,
    writer: await stackWriter().then((w) => () => w),
    project: env.GOOGLE_CLOUD_PROJECT!,
    dataset,
    table,
    location: null,
    schema: targetTableSchema(fields),
    logger: createMemoryLogger(),
  });
  sinks.push(sink);
  const query = async (sql: string) => (await clients.bigquery.query({ query: sql, wrapIntegers: true }))[0];
  return { sink, dataset, table, query };
}

function record(offset: number, value: unknown, key: string | null = null): KafkaRecord {
  return {
    topic: 'orders',
    partition: 0,
    offset,
    timestamp: Date.UTC(2026, 0, 31, 12, 0, 0, offset),
    key: key === null ? null : Buffer.from(key),
    value: Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)),
    headers: { source: 'test' },
  };
}

function rowsOf(records: KafkaRecord[], fields: SchemaField[]): RowToWrite[] {
  return records.map((r) => {
    const result = toRow(r, new Date('2026-02-01T00:00:00Z'), { fields, unknownFields: 'reject' });
    if (isDeadLetter(result)) throw new Error(result.message);
    return result;
  });
}

describe('storage-write sink', () => {
  test('the Storage Write client is made only when warmed up (a run with records to read) or written through; the flush lands', async () => {
    const fields = userFields.filter((f) => ['id', 'i'].includes(f.name));
    const dataset = uniqueName('sw_warm');
    await ensureTargetTable(clients.bigquery, { dataset, table: 'events', location: null }, fields);
    const writer = await stackWriter();
    let made = 0;
    const sink = createStorageWriteSink({
      bigquery: clients.bigquery,
      writer: () => {
        made += 1;
        return writer;
      },
      project: env.GOOGLE_CLOUD_PROJECT!,
      dataset,
      table: 'events',
      location: null,
      schema: targetTableSchema(fields),
      logger: createMemoryLogger(),
    });
    sinks.push(sink);
    await sink.heldInRange({ topic: 't', partition: 0 }, 0, 10); // what a replay asks first
    expect(made).toBe(0);
    expect(writer.getClient().bigQueryWriteStub).toBeUndefined(); // nothing loaded
    await sink.warmUp();
    expect(made).toBe(1);
    const stub = (await writer.getClient().bigQueryWriteStub) as unknown as {
      getChannel(): { getConnectivityState(connect: boolean): number };
    };
    expect(stub.getChannel().getConnectivityState(false)).toBe(2); // READY, with no call made
    const { streams } = await sink.prepare(
      await encodeAll(sink, rowsOf([record(1, { id: 'warm', i: 1 })], fields)),
      [],
      new Date(),
    );
    await sink.commit(streams);
    const rows = (await clients.bigquery.query({ query: `SELECT id FROM \`${dataset}.events\`` }))[0];
    expect(rows).toEqual([{ id: 'warm' }]);
  });

  test('every type lands as it was sent, read back with the BigQuery client', async () => {
    const { sink, dataset, table, query } = await sinkOn(userFields);
    const sent = {
      id: 'all',
      i: 42,
      big: '9223372036854775807',
      f: 1.25,
      b: true,
      n: '12345678901234567890123456789.123456789',
      bn: '-1.5e3',
      bytes: Buffer.from([0, 1, 254, 255]).toString('base64'),
      d: '2024-02-29',
      t: '23:59:59.999999',
      dt: '2026-01-31T12:34:56.789',
      ts: '2026-01-31T13:00:00.123456+01:00',
      j: { a: [1, 2], b: 'x' },
      g: 'POINT(1 2)',
      tags: ['a', 'b'],
      item: { sku: 'k-1', qty: 3 },
    };
    const { streams } = await sink.prepare(
      await encodeAll(sink, rowsOf([record(7, sent, 'key-7')], userFields)),
      [],
      new Date(),
    );
    expect(streams).toHaveLength(1);
    await sink.commit(streams);
    const [row] = (await query(
      `SELECT *, CAST(big AS STRING) AS big_text, CAST(n AS STRING) AS n_text, CAST(bn AS STRING) AS bn_text,
              CAST(ts AS STRING) AS ts_text, TO_JSON_STRING(j) AS j_text, CAST(d AS STRING) AS d_text,
              CAST(t AS STRING) AS t_text, CAST(dt AS STRING) AS dt_text
       FROM \`${dataset}.${table}\``,
    )) as Record<string, any>[];
    expect(row).toBeDefined();
    expect(row!.id).toBe('all');
    expect(Number(row!.i.value ?? row!.i)).toBe(42);
    expect(row!.big_text).toBe('9223372036854775807');
    expect(row!.f).toBe(1.25);
    expect(row!.b).toBe(true);
    expect(row!.n_text).toBe('12345678901234567890123456789.123456789');
    expect(row!.bn_text).toBe('-1500');
    expect(Buffer.from(row!.bytes).equals(Buffer.from([0, 1, 254, 255]))).toBe(true);
    expect(row!.d_text).toBe('2024-02-29');
    expect(row!.t_text).toBe('23:59:59.999999');
    expect(row!.dt_text).toMatch(/^2026-01-31[T ]12:34:56\.789/);
    // BigQuery prints "2026-01-31 12:00:00.123456+00", the emulator "2026-01-31T12:00:00.123456Z": the same instant.
    expect(row!.ts_text).toMatch(/^2026-01-31[T ]12:00:00\.123456(Z|\+00)/);
    expect(JSON.parse(row!.j_text)).toEqual({ a: [1, 2], b: 'x' });
    expect(JSON.stringify(row!.g)).toMatch(/POINT\s*\(1 2\)/);
    expect(row!.tags).toEqual(['a', 'b']);
    expect(row!.item.sku).toBe('k-1');
    expect(Number(row!.item.qty.value ?? row!.item.qty)).toBe(3);
    // The metadata columns.
    expect(row!._kafka_topic).toBe('orders');
    expect(Number(row!._kafka_offset.value ?? row!._kafka_offset)).toBe(7);
    expect(Buffer.from(row!._kafka_key).toString()).toBe('key-7');
    expect(new Date(row!._kafka_timestamp.value).toISOString()).toBe('2026-01-31T12:00:00.007Z');
  });

  test('rows are invisible until the commit; a stream commits once; its state is known; gone is gone', async () => {
    const fields: SchemaField[] = [{ name: 'id', type: 'STRING', mode: 'REQUIRED' }];
    const { sink, dataset, table, query } = await sinkOn(fields);
    const count = async () =>
      Number((await query(`SELECT COUNT(*) AS c FROM \`${dataset}.${table}\``))[0].c.value ?? 0);
    const rows = rowsOf(
      [0, 1, 2].map((o) => record(o, { id: `r${o}` })),
      fields,
    );
    const [stream] = (await sink.prepare(await encodeAll(sink, rows), [], new Date())).streams;
    expect(await count()).toBe(0);
    expect(await sink.streamState(stream!)).toBe('pending');
    expect(await sink.heldInRange({ topic: 'orders', partition: 0 }, 0, 3)).toEqual({
      rows: 0,
      deadLetters: 0,
    });
    await sink.commit([stream!]);
    await sink.commit([stream!]); // a second commit (a zombie's, a recovery's) adds nothing
    expect(await count()).toBe(3);
    expect(await sink.streamState(stream!)).toBe('committed');
    expect(await sink.heldInRange({ topic: 'orders', partition: 0 }, 0, 3)).toEqual({
      rows: 3,
      deadLetters: 0,
    });
    expect(await sink.streamState(`${stream!.slice(0, stream!.indexOf('/streams/'))}/streams/nope`)).toBe(
      'gone',
    );
  });

  test('rows BigQuery refuses become rejected dead letters; the rest of the flush lands in the same stream', async () => {
    const fields: SchemaField[] = [
      { name: 'id', type: 'STRING', mode: 'REQUIRED' },
      { name: 'j', type: 'JSON' },
      { name: 'g', type: 'GEOGRAPHY' },
    ];
    const { sink, dataset, table, query } = await sinkOn(fields);
    const rows = rowsOf(
      [
        record(1, { id: 'a', j: { ok: true } }),
        record(2, { id: 'b', g: 'POLYGON((0 0, 2 2, 2 0, 0 2, 0 0))' }),
        record(3, { id: 'c', g: 'POINT(1 2)' }),
        record(4, { id: 'd', g: 'POLYGON((10 10, 10 12, 12 10, 12 12, 10 10))' }),
        record(5, { id: 'e' }),
      ],
      fields,
    );
    const { streams, rejected } = await sink.prepare(await encodeAll(sink, rows), [], new Date());
    expect(rejected.map((l) => [l.record.offset, l.kind, l.message])).toEqual([
      [2, 'rejected', 'BigQuery refused the row: Field g: invalid GEOGRAPHY: edge 0 crosses edge 2'],
      [4, 'rejected', 'BigQuery refused the row: Field g: invalid GEOGRAPHY: edge 1 crosses edge 3'],
    ]);
    expect(streams).toHaveLength(2); // the target table's and the error table's
    await sink.commit(streams);
    const landed = await query(`SELECT _kafka_offset FROM \`${dataset}.${table}\` ORDER BY _kafka_offset`);
    expect(landed.map((r: { _kafka_offset: { value: string } }) => Number(r._kafka_offset.value))).toEqual([
      1, 3, 5,
    ]);
    const letters = await query(
      `SELECT _kafka_offset, error_kind FROM \`${dataset}.${table}_dead_letters\` ORDER BY _kafka_offset`,
    );
    expect(
      letters.map((r: { _kafka_offset: { value: string }; error_kind: string }) => [
        Number(r._kafka_offset.value),
        r.error_kind,
      ]),
    ).toEqual([
      [2, 'rejected'],
      [4, 'rejected'],
    ]);
  });

  test('dead letters land in the error table in their own stream, with origin, kind and reason', async () => {
    const fields: SchemaField[] = [{ name: 'id', type: 'STRING', mode: 'REQUIRED' }];
    const { sink, dataset, table, query } = await sinkOn(fields);
    const bad = record(5, '{not json', 'k');
    const { streams } = await sink.prepare(
      await encodeAll(sink, rowsOf([record(4, { id: 'ok' })], fields)),
      [{ record: bad, kind: 'decode', message: 'value is not UTF-8 JSON' }],
      new Date(),
    );
    expect(streams).toHaveLength(2);
    await sink.commit(streams);
    const letters = await query(
      `SELECT _kafka_offset, error_kind, error_message, value, value_size, JSON_VALUE(headers, '$.source') AS source
       FROM \`${dataset}.${table}_dead_letters\``,
    );
    expect(letters).toHaveLength(1);
    expect(Number(letters[0]._kafka_offset.value)).toBe(5);
    expect(letters[0]).toMatchObject({
      error_kind: 'decode',
      error_message: 'value is not UTF-8 JSON',
      source: 'test',
    });
    expect(Buffer.from(letters[0].value).toString()).toBe('{not json');
    expect(await sink.heldInRange({ topic: 'orders', partition: 0 }, 4, 6)).toEqual({
      rows: 1,
      deadLetters: 1,
    });
  });

  test('a JSON record written straight from its text lands as the same row as through the general path', async () => {
    // The columns the one-pass path reads (the others make a record take the general path).
    const fields = userFields.filter((f) => !['bytes', 't', 'dt', 'j', 'g'].includes(f.name));
    const { sink, dataset, table, query } = await sinkOn(fields);
    const shape = { fields, unknownFields: 'reject' as const, metadata: { headers: false, keyText: false } };
    const value = JSON.stringify({
      id: 'é ✓',
      i: -123456789012345,
      big: 42,
      f: 1 / 3,
      b: false,
      n: '-99999999999999999999999999999.999999999',
      bn: '0.00000000000000000000000000000000000001',
      d: '1969-12-31',
      ts: '2026-01-31T13:00:00.123456Z',
      tags: ['a', ''],
      item: { sku: 'k-1', qty: 3 },
    });
    const at = new Date('2026-02-01T00:00:00Z');
    const encoding = await sink.startEncoding(shape);
    expect(encoding.addRecord?.(record(1, value, 'key-1'), at)).toBe(true);
    const general = toRow(record(2, value, 'key-1'), at, shape);
    if (isDeadLetter(general)) throw new Error(general.message);
    encoding.add(general);
    const { streams } = await sink.prepare(encoding.finish(), [], at);
    await sink.commit(streams);
    const rows = (await query(
      `SELECT * EXCEPT (_kafka_offset, _kafka_timestamp), CAST(n AS STRING) AS n_text, CAST(bn AS STRING) AS bn_text,
              CAST(ts AS STRING) AS ts_text, CAST(_kafka_timestamp AS STRING) AS kafka_ts, _kafka_offset
       FROM \`${dataset}.${table}\` ORDER BY _kafka_offset`,
    )) as Record<string, unknown>[];
    expect(rows.map((r) => r._kafka_offset?.toString())).toEqual(['1', '2']);
    const [direct, viaGeneral] = rows.map(({ _kafka_offset, kafka_ts, ...rest }) => ({
      ...rest,
      // Each record's own Kafka timestamp (its offset in milliseconds, by the helper).
      kafkaTs: String(kafka_ts).replace(/\.00[12]/, '.00x'),
    }));
    expect(JSON.parse(JSON.stringify(direct))).toEqual(JSON.parse(JSON.stringify(viaGeneral)));
    expect(direct).toMatchObject({ id: 'é ✓', b: false, n_text: '-99999999999999999999999999999.999999999' });
  });
});
