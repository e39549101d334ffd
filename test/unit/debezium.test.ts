/**
 * Debezium's change events → changes. The fixture holds events Debezium's PostgreSQL connector 3.6.1.Final
 * itself wrote through Kafka Connect's JSON converter (schemas enabled), captured from the e2e topic: a
 * snapshot read, updates, a delete and the tombstone after it, inserts. Other logical types are built here
 * from Debezium's documentation (https://debezium.io/documentation/reference/stable/connectors/postgresql.html#postgresql-data-types).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import avro from 'avsc';
import { describe, expect, test } from 'vitest';
import { compileAvro } from '../../functions/formats/avro/schema.js';
import { type ConnectSchema, convertValue } from '../../functions/formats/connect/types.js';
import { afterFields } from '../../functions/formats/route-values.js';
import type { JsonValue, KafkaRecord } from '../../functions/kernel/records.js';
import {
  classifyChanges,
  keyObject,
  primaryKeyOfKey,
  sequenceNumber,
} from '../../functions/records/changes.js';
import { debeziumChange } from '../../functions/records/debezium.js';
import type { RowShape } from '../../functions/records/records.js';

const fixture = readFileSync(
  join(import.meta.dirname, '..', 'fixtures', 'debezium', 'postgres-3.6.1.jsonl'),
  'utf8',
)
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as { key: string; value: string | null });

const record = (key: string | null, value: string | null, offset = 0): KafkaRecord => ({
  topic: 't',
  partition: 0,
  offset,
  timestamp: 1_700_000_000_000,
  key: key === null ? null : Buffer.from(key),
  value: value === null ? null : Buffer.from(value),
  headers: {},
});

describe('events Debezium 3.6.1 wrote (JSON converter, schemas enabled)', () => {
  test('a snapshot read (op r): every logical type of the table in the form BigQuery takes', () => {
    const change = debeziumChange(JSON.parse(fixture[0]!.value!) as JsonValue, ['id']);
    expect(change).toEqual({
      kind: 'upsert',
      row: {
        id: 1,
        name: 'customer 1',
        balance: '10.25', // Decimal, scale 2: "BAE=" = 1025
        born: '1990-01-02', // io.debezium.time.Date: 7306 days
        seen_at: '2024-05-01T09:00:00.123456Z', // ZonedTimestamp, as it is
        created: '2020-03-01T00:00:59.654321', // MicroTimestamp
        meta: '{"n": 1, "tags": ["a", "b"]}', // io.debezium.data.Json: JSON text
        uid: 'c4ca4238-a0b9-2382-0dcc-509a6f75849b', // Uuid
        active: false,
      },
      event: { op: 'r', sourceTsMs: expect.any(Number), position: expect.stringContaining('"lsn"') },
    });
  });

  test('an update (op u) upserts its after row', () => {
    const change = debeziumChange(JSON.parse(fixture[1]!.value!) as JsonValue, ['id']);
    expect(change.kind).toBe('upsert');
    expect((change as { row: Record<string, unknown> }).row).toMatchObject({
      id: 9,
      name: 'customer 9 (updated)',
      balance: '92.26',
    });
  });

  test('a delete (op d) deletes the key taken from before; the tombstone after it changes nothing', async () => {
    const change = debeziumChange(JSON.parse(fixture[2]!.value!) as JsonValue, ['id']);
    expect(change).toMatchObject({ kind: 'delete', row: { id: 21 } });
    expect(fixture[3]!.value).toBeNull();
    const classified = await classifyChanges(
      [record(fixture[2]!.key, fixture[2]!.value, 7), record(fixture[3]!.key, null, 8)],
      { format: 'debezium', primaryKey: ['id'] },
      new Date(0),
    );
    expect(classified.tombstones).toBe(1);
    expect(classified.rows.map((r) => [r.row.id, r.row._CHANGE_TYPE, r.row._CHANGE_SEQUENCE_NUMBER])).toEqual(
      [[21, 'DELETE', '0/0000000000000007']],
    );
  });

  test('NULLs stay NULL; a negative decimal is exact', () => {
    expect(debeziumChange(JSON.parse(fixture[4]!.value!) as JsonValue, ['id'])).toMatchObject({
      row: { id: 2, born: null, seen_at: null, meta: null },
    });
    expect(debeziumChange(JSON.parse(fixture[5]!.value!) as JsonValue, ['id'])).toMatchObject({
      row: { id: 500, name: 'new', balance: '-12.34' },
    });
  });

  test("the key's fields are the primary key when BQ_PRIMARY_KEY is not set", () => {
    expect(primaryKeyOfKey(Buffer.from(fixture[0]!.key))).toEqual(['id']);
    expect(keyObject(Buffer.from(fixture[0]!.key), ['id'])).toEqual({ id: 1 });
  });
});

describe('envelopes', () => {
  const envelope = (op: string, before: object | null, after: object | null) => ({
    op,
    before,
    after,
    source: { ts_ms: 1_700_000_000_123, lsn: 42, txId: 7 },
  });

  test('without the schema wrapper (schemas.enable=false): values as they come', () => {
    expect(debeziumChange(envelope('c', null, { id: 1, d: 19000 }) as JsonValue, ['id'])).toEqual({
      kind: 'upsert',
      row: { id: 1, d: 19000 },
      event: { op: 'c', sourceTsMs: 1_700_000_000_123, position: '{"lsn":42,"txId":7}' },
    });
  });

  test.each([
    ['t', 'op "t" (a TRUNCATE of the source table)'],
    ['m', 'op "m" is not a row change'],
    ['x', 'op "x" is not a row change'],
  ])('op %s is a dead letter naming it', (op, reason) => {
    const change = debeziumChange(envelope(op, null, null) as JsonValue, ['id']);
    expect(change.kind).toBe('invalid');
    expect((change as { reason: string }).reason).toContain(reason);
  });

  test.each([
    [{ before: null, after: null, op: 'c' }, 'op "c" without an "after" row'],
    [{ before: null, after: null, op: 'd' }, 'op "d" without a "before" row'],
    [{ before: { name: 'x' }, after: null, op: 'd' }, '"before" lacks the primary key column(s) id'],
    [{ after: { id: 1 } }, 'no op field'],
    [[1, 2], 'must be a JSON object'],
    [{ schema: {}, payload: 'x' }, 'payload is not an object'],
  ])('%j is refused: %s', (value, reason) => {
    const change = debeziumChange(value as JsonValue, ['id']);
    expect(change.kind).toBe('invalid');
    expect((change as { reason: string }).reason).toContain(reason);
  });
});

describe("Debezium's and Kafka Connect's logical types", () => {
  const as = (name: string, type = 'int64', parameters?: Record<string, string>): ConnectSchema => ({
    type,
    name,
    ...(parameters === undefined ? {} : { parameters }),
  });
  test.each<[string, ConnectSchema, JsonValue, JsonValue]>([
    ['Date', as('io.debezium.time.Date', 'int32'), 19_723, '2024-01-01'],
    ['Date before 1970', as('io.debezium.time.Date', 'int32'), -1, '1969-12-31'],
    ['Connect Date', as('org.apache.kafka.connect.data.Date', 'int32'), 0, '1970-01-01'],
    ['Time (ms)', as('io.debezium.time.Time', 'int32'), 45_296_789, '12:34:56.789000'],
    ['Connect Time (ms)', as('org.apache.kafka.connect.data.Time', 'int32'), 1, '00:00:00.001000'],
    ['MicroTime', as('io.debezium.time.MicroTime'), 45_296_789_012, '12:34:56.789012'],
    ['NanoTime', as('io.debezium.time.NanoTime'), 45_296_789_012_345, '12:34:56.789012'],
    ['Timestamp (ms)', as('io.debezium.time.Timestamp'), 1_700_000_000_123, '2023-11-14T22:13:20.123000'],
    ['Connect Timestamp', as('org.apache.kafka.connect.data.Timestamp'), 0, '1970-01-01T00:00:00.000000'],
    [
      'MicroTimestamp',
      as('io.debezium.time.MicroTimestamp'),
      1_700_000_000_123_456,
      '2023-11-14T22:13:20.123456',
    ],
    ['MicroTimestamp before 1970', as('io.debezium.time.MicroTimestamp'), -1, '1969-12-31T23:59:59.999999'],
    [
      'NanoTimestamp (to microseconds)',
      as('io.debezium.time.NanoTimestamp'),
      1_700_000_000_123_456_000,
      '2023-11-14T22:13:20.123456',
    ],
    [
      'ZonedTimestamp',
      as('io.debezium.time.ZonedTimestamp', 'string'),
      '2024-05-01T07:00:00.123456Z',
      '2024-05-01T07:00:00.123456Z',
    ],
    ['Decimal', as('org.apache.kafka.connect.data.Decimal', 'bytes', { scale: '2' }), 'BAE=', '10.25'],
    [
      'Decimal, negative',
      as('org.apache.kafka.connect.data.Decimal', 'bytes', { scale: '2' }),
      '+y4=',
      '-12.34',
    ],
    [
      'Decimal, scale 0, large',
      as('org.apache.kafka.connect.data.Decimal', 'bytes', { scale: '0' }),
      Buffer.from('0de0b6b3a7640000', 'hex').toString('base64'),
      '1000000000000000000',
    ],
    [
      'Decimal, zero bytes',
      as('org.apache.kafka.connect.data.Decimal', 'bytes', { scale: '3' }),
      '',
      '0.000',
    ],
    [
      'VariableScaleDecimal',
      { type: 'struct', name: 'io.debezium.data.VariableScaleDecimal' },
      { scale: 3, value: 'MDk=' },
      '12.345',
    ],
    ['Json', as('io.debezium.data.Json', 'string'), '{"a": [1]}', '{"a": [1]}'],
    [
      'Uuid',
      as('io.debezium.data.Uuid', 'string'),
      'c4ca4238-a0b9-2382-0dcc-509a6f75849b',
      'c4ca4238-a0b9-2382-0dcc-509a6f75849b',
    ],
    ['null', as('io.debezium.time.Date', 'int32'), null, null],
  ])('%s', (_, schema, value, expected) => {
    expect(convertValue(value, schema)).toEqual(expected);
  });

  test('inside arrays and nested structs', () => {
    const schema: ConnectSchema = {
      type: 'struct',
      fields: [
        { type: 'array', field: 'days', items: as('io.debezium.time.Date', 'int32') },
        { type: 'struct', field: 'inner', fields: [{ ...as('io.debezium.time.MicroTime'), field: 't' }] },
      ],
    };
    expect(convertValue({ days: [0, 1], inner: { t: 1 } }, schema)).toEqual({
      days: ['1970-01-01', '1970-01-02'],
      inner: { t: '00:00:00.000001' },
    });
  });
});

describe("Debezium's longs beyond 2^53 through the JSON converter", () => {
  // As Kafka Connect's JSON converter writes them: int64 as JSON numbers, digits JSON.parse would round.
  const field = (name: string, type: string, semantic?: string) => ({
    type,
    optional: true,
    field: name,
    ...(semantic === undefined ? {} : { name: semantic, version: 1 }),
  });
  const rowSchema = {
    type: 'struct',
    optional: true,
    fields: [
      field('id', 'int64'),
      field('ts', 'int64', 'io.debezium.time.NanoTimestamp'),
      field('t', 'int64', 'io.debezium.time.NanoTime'),
      field('ids', 'array'),
      field('ratio', 'float64'),
    ],
  };
  (rowSchema.fields[3] as Record<string, unknown>).items = { type: 'int64' };
  const event = (op: string, before: string, after: string, lsn: string) =>
    `{"schema": {"type": "struct", "fields": [${JSON.stringify({ ...rowSchema, field: 'before' })}, ${JSON.stringify({ ...rowSchema, field: 'after' })}]}, ` +
    `"payload": {"before": ${before}, "after": ${after}, "source": {"ts_ms": 1700000000000, "lsn": ${lsn}}, "op": "${op}"}}`;
  const shape: RowShape = {
    fields: [
      { name: 'id', type: 'INT64', mode: 'REQUIRED' },
      { name: 'ts', type: 'DATETIME', mode: 'NULLABLE' },
      { name: 't', type: 'TIME', mode: 'NULLABLE' },
      { name: 'ids', type: 'INT64', mode: 'REPEATED' },
      { name: 'ratio', type: 'FLOAT64', mode: 'NULLABLE' },
      { name: 'extra', type: 'INT64', mode: 'NULLABLE' },
    ],
    unknownFields: 'reject',
  };

  test('a NanoTimestamp of today, a snowflake id, and the key of a delete come exact', async () => {
    const classified = await classifyChanges(
      [
        record(
          null,
          event(
            'c',
            'null',
            '{"id": 1733300000123456789, "ts": 1733300000123456999, "t": 45296789012999, "ids": [9007199254740993, -9223372036854775808, 1], "ratio": 1.5}',
            '12345678901234567890',
          ),
          0,
        ),
        record(null, event('d', '{"id": 9223372036854775807}', 'null', '1'), 1),
      ],
      { format: 'debezium', primaryKey: ['id'], shape, sourceColumns: true },
      new Date(0),
    );
    expect(classified.letters).toEqual([]);
    expect(classified.rows.map((r) => r.row)).toEqual([
      expect.objectContaining({
        id: '1733300000123456789',
        ts: '2024-12-04T08:13:20.123456', // JSON.parse's double is 1733300000123457024: .123457
        t: '12:34:56.789012',
        ids: ['9007199254740993', '-9223372036854775808', 1],
        ratio: 1.5,
        _cdc_source_position: '{"lsn":12345678901234567000}', // no schema for source: as JSON.parse gives it
      }),
      expect.objectContaining({ id: '9223372036854775807', _CHANGE_TYPE: 'DELETE' }),
    ]);
  });

  test('without the schema wrapper, or where the schema does not say int64: the number JSON.parse gives', async () => {
    const classified = await classifyChanges(
      [
        record(null, '{"op": "c", "after": {"id": 1, "extra": 12345678901234567890}}', 0),
        record(
          null,
          event('c', 'null', '{"id": 2, "ratio": 12345678901234567890, "extra": 12345678901234567890}', '1'),
          1,
        ),
      ],
      { format: 'debezium', primaryKey: ['id'] },
      new Date(0),
    );
    const rounded = Number('12345678901234567890');
    expect(classified.rows.map((r) => [r.row.id, r.row.ratio, r.row.extra])).toEqual([
      [1, undefined, rounded],
      [2, rounded, rounded],
    ]);
  });
});

describe('upsert format and sequence numbers', () => {
  test("the value is the row; a null value deletes the record key's row", async () => {
    const classified = await classifyChanges(
      [
        record('k1', JSON.stringify({ id: 'k1', v: 1 }), 0),
        record('k1', null, 1),
        record('{"id":"k2"}', null, 2),
        record(null, null, 3),
        record('k4', '[1]', 4),
      ],
      { format: 'upsert', primaryKey: ['id'] },
      new Date(0),
    );
    expect(classified.rows.map((r) => [r.row.id, r.row._CHANGE_TYPE, r.row._CHANGE_SEQUENCE_NUMBER])).toEqual(
      [
        ['k1', 'UPSERT', '0/0000000000000000'],
        ['k1', 'DELETE', '0/0000000000000001'],
        ['k2', 'DELETE', '0/0000000000000002'],
      ],
    );
    expect(classified.letters.map((l) => [l.record.offset, l.kind])).toEqual([
      [3, 'decode'],
      [4, 'decode'],
    ]);
  });

  test('keys: a JSON object (schema wrapper or not), or a bare value for a one-column key', () => {
    expect(keyObject(Buffer.from('{"a":1,"b":"x","c":true}'), ['a', 'b'])).toEqual({ a: 1, b: 'x' });
    expect(keyObject(Buffer.from('{"schema":{},"payload":{"a":1}}'), ['a'])).toEqual({ a: 1 });
    expect(keyObject(Buffer.from('42'), ['id'])).toEqual({ id: 42 });
    expect(keyObject(Buffer.from('plain text'), ['id'])).toEqual({ id: 'plain text' });
    expect(keyObject(Buffer.from('plain text'), ['a', 'b'])).toBeUndefined();
    expect(keyObject(Buffer.from('{"a":1}'), ['a', 'b'])).toBeUndefined();
  });

  test('sequence numbers increase with the offset, section by section', () => {
    const offsets = [0, 1, 9, 10, 15, 16, 255, 4096, 2 ** 40, Number.MAX_SAFE_INTEGER];
    const numbers = offsets.map((o) => sequenceNumber(o));
    expect(numbers[1]).toBe('0/0000000000000001');
    expect(numbers.at(-1)).toBe('0/001FFFFFFFFFFFFF');
    // Fixed-width hex: text order is numeric order.
    expect([...numbers].sort()).toEqual(numbers);
    expect(sequenceNumber(0, 1) > sequenceNumber(Number.MAX_SAFE_INTEGER, 0)).toBe(true);
  });

  test("a row that lacks the key, or fails the table's schema, is a dead letter", async () => {
    const classified = await classifyChanges(
      [record('k', JSON.stringify({ v: 1 }), 0), record('k', JSON.stringify({ id: 'k', v: 'x' }), 1)],
      {
        format: 'upsert',
        primaryKey: ['id'],
        shape: {
          fields: [
            { name: 'id', type: 'STRING', mode: 'NULLABLE' },
            { name: 'v', type: 'INT64', mode: 'NULLABLE' },
          ],
          unknownFields: 'reject',
        },
      },
      new Date(0),
    );
    expect(classified.rows).toEqual([]);
    expect(classified.letters.map((l) => [l.kind, l.message])).toEqual([
      ['schema', 'primary key column(s) id missing'],
      ['schema', expect.stringContaining('v')],
    ]);
  });
});

describe('Debezium over Avro (Kafka Connect’s Avro converter: semantic types as connect.name)', () => {
  const schemaText = readFileSync(
    join(import.meta.dirname, '..', 'fixtures', 'debezium', 'customers-envelope.avsc'),
    'utf8',
  );
  const writer = avro.Type.forSchema(JSON.parse(schemaText) as avro.Schema);
  const source = {
    version: '3.6.1.Final',
    connector: 'postgresql',
    name: 'dbserver1',
    ts_ms: 1_700_000_000_000,
    db: 'd',
    schema: 'public',
    table: 'customers',
    txId: 7,
    lsn: 99,
  };
  const row = {
    id: 1,
    name: 'ann',
    balance: Buffer.from([0x04, 0x01]), // 1025, scale 2
    born: 7306,
    created: 1_583_020_859_654_321,
    seen_at: '2024-05-01T09:00:00.123456Z',
    alarm: 45_296_789_012,
    meta: '{"n": 1}',
    uid: 'c4ca4238-a0b9-2382-0dcc-509a6f75849b',
    ratio: { scale: 3, value: Buffer.from([0x30, 0x39]) }, // 12345, scale 3
    active: true,
  };

  test("the columns are the after row's, each semantic type with its BigQuery type", () => {
    const compiled = compileAvro(schemaText);
    expect(afterFields(compiled.fields).map((f) => [f.name, f.type, f.mode])).toEqual([
      ['id', 'INT64', 'REQUIRED'],
      ['name', 'STRING', 'NULLABLE'],
      ['balance', 'NUMERIC', 'NULLABLE'],
      ['born', 'DATE', 'NULLABLE'],
      ['created', 'DATETIME', 'NULLABLE'],
      ['seen_at', 'TIMESTAMP', 'NULLABLE'],
      ['alarm', 'TIME', 'NULLABLE'],
      ['meta', 'JSON', 'NULLABLE'],
      ['uid', 'STRING', 'NULLABLE'],
      ['ratio', 'BIGNUMERIC', 'NULLABLE'],
      ['active', 'BOOL', 'NULLABLE'],
    ]);
  });

  test('an update decodes to the change, every value in the form BigQuery takes', () => {
    const compiled = compileAvro(schemaText);
    const payload = writer.toBuffer({
      before: { ...row, name: 'old' },
      after: row,
      source,
      op: 'u',
      ts_ms: 1,
    });
    expect(debeziumChange(compiled.decode(payload) as JsonValue, ['id'])).toEqual({
      kind: 'upsert',
      row: {
        id: 1,
        name: 'ann',
        balance: '10.25',
        born: '1990-01-02',
        created: '2020-03-01T00:00:59.654321',
        seen_at: '2024-05-01T09:00:00.123456Z',
        alarm: '12:34:56.789012',
        meta: '{"n": 1}',
        uid: 'c4ca4238-a0b9-2382-0dcc-509a6f75849b',
        ratio: '12.345',
        active: true,
      },
      event: { op: 'u', sourceTsMs: 1_700_000_000_000, position: '{"lsn":99,"txId":7}' },
    });
    const deleted = writer.toBuffer({ before: row, after: null, source, op: 'd', ts_ms: 2 });
    expect(debeziumChange(compiled.decode(deleted) as JsonValue, ['id'])).toMatchObject({
      kind: 'delete',
      row: { id: 1 },
    });
  });
});

describe('the optional source columns (CDC_SOURCE_COLUMNS=true)', () => {
  test("Debezium's op, source.ts_ms and log position go with each change", async () => {
    const classified = await classifyChanges(
      [record(fixture[0]!.key, fixture[0]!.value, 0), record(fixture[2]!.key, fixture[2]!.value, 1)],
      { format: 'debezium', primaryKey: ['id'], sourceColumns: true },
      new Date(0),
    );
    const [read, deleted] = classified.rows.map((r) => r.row);
    expect(read).toMatchObject({ _cdc_op: 'r' });
    // PostgreSQL's position: the change's lsn, its transaction, and Debezium's [last commit, current] pair.
    expect(Object.keys(JSON.parse(String(read!._cdc_source_position)))).toEqual(['lsn', 'txId', 'sequence']);
    expect(Date.parse(String(read!._cdc_source_ts))).toBe(
      (JSON.parse(fixture[0]!.value!) as { payload: { source: { ts_ms: number } } }).payload.source.ts_ms,
    );
    expect(deleted).toMatchObject({ _cdc_op: 'd', _CHANGE_TYPE: 'DELETE' });
  });
  test('switched off, no such column is written', async () => {
    const classified = await classifyChanges(
      [record(fixture[0]!.key, fixture[0]!.value, 0)],
      { format: 'debezium', primaryKey: ['id'] },
      new Date(0),
    );
    expect(Object.keys(classified.rows[0]!.row).filter((k) => k.startsWith('_cdc_'))).toEqual([]);
  });
});
