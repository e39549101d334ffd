/**
 * The compiled row encoder writes exactly the bytes the official JSONWriter writes (protobufjs, from the
 * descriptor the client derives from the table schema) for the same validated row: every BigQuery type,
 * nested and repeated fields, NULLs, and INT64/NUMERIC/TIMESTAMP edge values.
 */
import { adapt, managedwriter } from '@google-cloud/bigquery-storage';
import { describe, expect, test } from 'vitest';
import { compileRowEncoder, daysFromCivil, epochMicrosOf } from '../../functions/encoders/row-encoder.js';
import type { Row } from '../../functions/kernel/records.js';
import type { SchemaField } from '../../functions/schema/table-schema.js';
import { epochDays, toStorageRow } from '../support/json-writer-rows.js';

/** What the official writer sends for these rows: its serialized rows, caught at a stand-in connection. */
function officialBytes(fields: readonly SchemaField[], rows: Row[]): Buffer[] {
  const protoDescriptor = adapt.convertStorageSchemaToProto2Descriptor(
    adapt.convertBigQuerySchemaToStorageTableSchema({ fields: fields as never }),
    'root',
  );
  let sent: { protoRows: { rows: { serializedRows: Uint8Array[] } } } | undefined;
  const connection = {
    getStreamId: () => 'projects/p/datasets/d/tables/t/streams/s',
    write: (request: typeof sent) => {
      sent = request;
      return {};
    },
    onSchemaUpdated: () => ({ off() {} }),
    close() {},
  };
  const writer = new managedwriter.JSONWriter({ connection: connection as never, protoDescriptor });
  writer.appendRows(rows.map((r) => toStorageRow(r, fields)) as never);
  return sent!.protoRows.rows.serializedRows.map((b) => Buffer.from(b));
}

const everyType: SchemaField[] = [
  { name: 's', type: 'STRING' },
  { name: 'i', type: 'INT64' },
  { name: 'n', type: 'NUMERIC' },
  { name: 'bn', type: 'BIGNUMERIC' },
  { name: 'f', type: 'FLOAT64' },
  { name: 'b', type: 'BOOL' },
  { name: 'd', type: 'DATE' },
  { name: 't', type: 'TIMESTAMP' },
  { name: 'dt', type: 'DATETIME' },
  { name: 'tm', type: 'TIME' },
  { name: 'g', type: 'GEOGRAPHY' },
  { name: 'j', type: 'JSON' },
  { name: 'by', type: 'BYTES' },
  {
    name: 'r',
    type: 'RECORD',
    fields: [
      { name: 'x', type: 'STRING' },
      { name: 'y', type: 'INT64', mode: 'REQUIRED' },
      { name: 'deep', type: 'RECORD', fields: [{ name: 'z', type: 'FLOAT64', mode: 'REPEATED' }] },
    ],
  },
  { name: 'rs', type: 'STRING', mode: 'REPEATED' },
  { name: 'ri', type: 'INT64', mode: 'REPEATED' },
  { name: 'rb', type: 'BOOL', mode: 'REPEATED' },
  { name: 'rd', type: 'DATE', mode: 'REPEATED' },
  { name: 'rt', type: 'TIMESTAMP', mode: 'REPEATED' },
  {
    name: 'rr',
    type: 'RECORD',
    mode: 'REPEATED',
    fields: [
      { name: 'x', type: 'STRING' },
      { name: 'q', type: 'NUMERIC' },
    ],
  },
];

const rows: Record<string, Row> = {
  'every type set': {
    s: 'héllo ☃',
    i: '42',
    n: '12345678901234567890.123456789',
    bn: '-1e-38',
    f: 3.25,
    b: true,
    d: '2026-12-01',
    t: '2026-12-01T10:11:12.345678Z',
    dt: '2026-12-01T10:11:12.5',
    tm: '10:11:12',
    g: 'POINT(1 2)',
    j: { a: [1, 'x'] },
    by: Buffer.from('bytes').toString('base64'),
    r: { x: 'in', y: '-7', deep: { z: [1.5, -0, 1e308] } },
    rs: ['a', '', 'c'],
    ri: ['1', '-1', '9223372036854775807', '-9223372036854775808'],
    rb: [true, false],
    rd: ['1970-01-01', '0001-01-01', '9999-12-31'],
    rt: ['1970-01-01T00:00:00Z', 1.5, '2026-01-01 00:00:00+05:30'],
    rr: [{ x: 'one', q: '0.1' }, { x: 'two' }, {}],
  },
  'NULLs and absent fields write nothing': { s: null, i: null, r: null, rs: [], rr: [] },
  'zero values are written, as protobufjs writes them in proto2': {
    s: '',
    i: '0',
    f: 0,
    b: false,
    d: '1970-01-01',
  },
  'INT64 edges, as text and as numbers': {
    i: '-9223372036854775808',
    ri: [9007199254740991, '9007199254740993', '-9007199254740993', '123456789012345', '-123456789012345', 0],
  },
  'NUMERIC edges': {
    n: '-99999999999999999999999999999.999999999',
    bn: '578960446186580977117854925043439539266.3',
  },
  'TIMESTAMP edges: far past and future, zones, numbers, fractions past the microsecond': {
    t: '0001-01-01T00:00:00Z',
    rt: [
      '9999-12-31T23:59:59.999999Z',
      '1969-12-31T23:59:59.999999Z',
      '2026-06-01T12:00:00-14:59',
      '2026-06-01 12:00:00 UTC',
      '2026-06-01T12:00:00.123456789Z',
      -1.25,
      253402300799,
    ],
  },
  'TIMESTAMP as JavaScript writes it, far and near': {
    t: '2026-12-01T10:11:12.345Z',
    rt: [
      '1969-12-31T23:59:59.999Z',
      '0001-01-01T00:00:00.000Z',
      '9999-12-31T23:59:59.999Z',
      '2255-06-01T00:00:00.000Z',
    ],
  },
  'DATE before the epoch and in leap years': { rd: ['1969-12-31', '2000-02-29', '1900-03-01', '1600-02-29'] },
};

describe('the compiled row encoder', () => {
  test.each(Object.entries(rows))('%s: the same bytes as the official JSONWriter', (_name, row) => {
    const ours = Buffer.from(compileRowEncoder(everyType)(row));
    expect(ours.toString('hex')).toBe(officialBytes(everyType, [row])[0]!.toString('hex'));
  });

  test('nested messages longer than one and two length bytes, and many rows into one buffer', () => {
    const encode = compileRowEncoder(everyType);
    const rows: Row[] = [200, 20_000, 3].map((n, i) => ({
      s: 'x'.repeat(n),
      r: { x: 'y'.repeat(n), y: String(i), deep: { z: Array.from({ length: n % 50 }, (_, k) => k / 3) } },
      rr: [{ x: 'z'.repeat(n), q: '1.5' }],
      t: '2026-12-01T10:11:12.345Z',
    }));
    const many = encode.many(rows).map((b) => Buffer.from(b).toString('hex'));
    expect(many).toEqual(officialBytes(everyType, rows).map((b) => b.toString('hex')));
    expect(rows.map((r) => Buffer.from(encode(r)).toString('hex'))).toEqual(many);
  });

  test('a batch encoded a row at a time, over several buffers: each row the official bytes, in order', () => {
    const encode = compileRowEncoder(everyType);
    // About 300 KB in all: rows land in several chunks, and one row is larger than a chunk.
    const rows: Row[] = Array.from({ length: 60 }, (_, i) => ({
      s: `${i}:${'x'.repeat(i === 30 ? 100_000 : (i * 997) % 5000)}`,
      n: String(i),
      rr: [{ x: 'z'.repeat(i), q: '1.5' }],
    }));
    const batch = encode.batch();
    for (const row of rows) batch.add(row);
    const views = batch.finish();
    expect(new Set(views.map((v) => v.buffer)).size).toBeGreaterThan(2);
    expect(views.map((b) => Buffer.from(b).toString('hex'))).toEqual(
      officialBytes(everyType, rows).map((b) => b.toString('hex')),
    );
  });

  test('TIMESTAMP in the canonical UTC forms (read digit by digit): the microseconds Date reckons, and the general path agrees', () => {
    // Every 7,919,993 s from 1700 to 2250, with the three fraction lengths and none.
    for (let ms = Date.UTC(1700, 0, 1) + 123; ms < Date.UTC(2250, 0, 1); ms += 7_919_993_457) {
      const iso = new Date(ms).toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
      expect(epochMicrosOf(iso)).toBe(ms * 1000);
      expect(epochMicrosOf(`${iso.slice(0, 23)}456Z`)).toBe(ms * 1000 + 456);
      expect(epochMicrosOf(`${iso.slice(0, 19)}Z`)).toBe(Math.floor(ms / 1000) * 1_000_000);
      // The same instants through the general path (a zone, a space): the same microseconds.
      expect(epochMicrosOf(`${iso.slice(0, 10)} ${iso.slice(11, 23)}456+00:00`)).toBe(ms * 1000 + 456);
    }
    // Outside the canonical forms or the exact range, the general path answers (bigint beyond 2^53).
    expect(epochMicrosOf('1600-01-01T00:00:00.000Z')).toBe(BigInt(Date.UTC(1600, 0, 1)) * 1000n);
    expect(epochMicrosOf('2026-12-01T10:11:12.3Z')).toBe(Date.UTC(2026, 11, 1, 10, 11, 12, 300) * 1000);
    expect(epochMicrosOf('2026-12-01T10:11:12.123456789Z')).toBe(
      Date.UTC(2026, 11, 1, 10, 11, 12, 123) * 1000 + 456,
    );
  });

  test('a column the schema does not have is not written (as the official writer ignores it)', () => {
    const row = { s: 'x', not_a_column: 'y' };
    expect(Buffer.from(compileRowEncoder(everyType)(row)).toString('hex')).toBe(
      officialBytes(everyType, [row])[0]!.toString('hex'),
    );
  });

  test('days since the epoch: the same as the Date-based reckoning, across the whole DATE range', () => {
    for (const date of [
      '0001-01-01',
      '0004-02-29',
      '1582-10-04',
      '1582-10-15',
      '1969-12-31',
      '1970-01-01',
      '2024-02-29',
      '9999-12-31',
    ]) {
      expect(daysFromCivil(date)).toBe(epochDays(date));
    }
    let day = Date.UTC(1850, 0, 1);
    for (let i = 0; i < 2000; i++, day += 37 * 86_400_000) {
      const iso = new Date(day).toISOString().slice(0, 10);
      expect(daysFromCivil(iso), iso).toBe(epochDays(iso));
    }
  });
});
