import avro from 'avsc';
import { describe, expect, test } from 'vitest';
import { compileAvro } from '../../functions/formats/avro/schema.js';
import { ValueError } from '../../functions/formats/mapped.js';

/** Avro's long: zigzag, then base-128 varint, for any 64-bit value (avsc's own type stops at 2^53). */
function avroLong(n: bigint): Buffer {
  let z = n >= 0n ? n << 1n : (-n << 1n) - 1n;
  const bytes: number[] = [];
  while (z >= 0x80n) {
    bytes.push(Number((z & 0x7fn) | 0x80n));
    z >>= 7n;
  }
  bytes.push(Number(z));
  return Buffer.from(bytes);
}

const everyType = {
  type: 'record',
  name: 'Order',
  namespace: 'shop',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'flag', type: 'boolean' },
    { name: 'count', type: 'int' },
    { name: 'ratio', type: 'float' },
    { name: 'score', type: 'double' },
    { name: 'blob', type: 'bytes' },
    { name: 'note', type: ['null', 'string'], default: null },
    { name: 'price', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 2 } },
    { name: 'big', type: { type: 'bytes', logicalType: 'decimal', precision: 40, scale: 10 } },
    {
      name: 'wide',
      type: { type: 'fixed', name: 'Wide', size: 32, logicalType: 'decimal', precision: 76, scale: 0 },
    },
    { name: 'at_ms', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'at_us', type: { type: 'long', logicalType: 'timestamp-micros' } },
    { name: 'local_us', type: { type: 'long', logicalType: 'local-timestamp-micros' } },
    { name: 'day', type: { type: 'int', logicalType: 'date' } },
    { name: 't_ms', type: { type: 'int', logicalType: 'time-millis' } },
    { name: 't_us', type: { type: 'long', logicalType: 'time-micros' } },
    { name: 'uid', type: { type: 'string', logicalType: 'uuid' } },
    { name: 'status', type: { type: 'enum', name: 'Status', symbols: ['NEW', 'PAID'] } },
    { name: 'hash', type: { type: 'fixed', name: 'Hash', size: 4 } },
    { name: 'tags', type: { type: 'array', items: 'string' } },
    { name: 'attrs', type: { type: 'map', values: 'long' } },
    {
      name: 'address',
      type: { type: 'record', name: 'Address', fields: [{ name: 'city', type: 'string' }] },
    },
    { name: 'billing', type: ['null', 'Address'], default: null },
    { name: 'either', type: ['null', 'string', 'long', 'Address'], default: null },
    { name: 'grid', type: { type: 'array', items: { type: 'array', items: 'int' } } },
  ],
};

/** The unscaled value as Avro's big-endian two's complement, `size` bytes (or as short as it goes). */
function decimalBytes(unscaled: bigint, size?: number): Buffer {
  const bytes = size ?? Math.max(1, Math.ceil((unscaled.toString(2).length + 2) / 8));
  const value = unscaled < 0n ? (1n << BigInt(bytes * 8)) + unscaled : unscaled;
  return Buffer.from(value.toString(16).padStart(bytes * 2, '0'), 'hex');
}

const plain = avro.Type.forSchema(everyType as avro.Schema, { wrapUnions: true });
const sample = {
  id: 42,
  flag: true,
  count: -7,
  ratio: 0.5,
  score: Number.NaN,
  blob: Buffer.from([0, 1, 255]),
  note: { string: 'hi' },
  price: decimalBytes(-12345n),
  big: decimalBytes(123456789012345678901234567890123456789n),
  wide: decimalBytes(-(10n ** 75n), 32),
  at_ms: Date.UTC(2024, 1, 29, 12, 30, 45, 123),
  at_us: 1_709_209_845_123_456,
  local_us: -1,
  day: 19_782,
  t_ms: 45_296_789,
  t_us: 86_399_999_999,
  uid: '0b7ac58c-9c57-4b5e-8e39-5c7a2b1d1e4f',
  status: 'PAID',
  hash: Buffer.from('abcd'),
  tags: ['a', 'b'],
  attrs: { x: 1, y: 2 },
  address: { city: 'Oslo' },
  billing: null,
  either: { 'shop.Address': { city: 'Rome' } },
  grid: [[1, 2], []],
};

describe('Avro → BigQuery', () => {
  const compiled = compileAvro(JSON.stringify(everyType));

  test('columns: every type and logical type', () => {
    const byName = Object.fromEntries(compiled.fields.map((f) => [f.name, f]));
    expect(byName.id).toEqual({ name: 'id', type: 'INT64', mode: 'REQUIRED' });
    expect(byName.flag!.type).toBe('BOOL');
    expect(byName.ratio!.type).toBe('FLOAT64');
    expect(byName.blob!.type).toBe('BYTES');
    expect(byName.note).toEqual({ name: 'note', type: 'STRING', mode: 'NULLABLE' });
    expect(byName.price!.type).toBe('NUMERIC');
    expect(byName.big!.type).toBe('BIGNUMERIC');
    expect(byName.wide!.type).toBe('STRING'); // 76 digits: no BigQuery decimal holds them
    expect(byName.at_ms!.type).toBe('TIMESTAMP');
    expect(byName.at_us!.type).toBe('TIMESTAMP');
    expect(byName.local_us!.type).toBe('DATETIME');
    expect(byName.day!.type).toBe('DATE');
    expect(byName.t_ms!.type).toBe('TIME');
    expect(byName.uid!.type).toBe('STRING');
    expect(byName.status!.type).toBe('STRING');
    expect(byName.hash!.type).toBe('BYTES');
    expect(byName.tags).toEqual({ name: 'tags', type: 'STRING', mode: 'REPEATED' });
    expect(byName.attrs).toEqual({
      name: 'attrs',
      type: 'RECORD',
      mode: 'REPEATED',
      fields: [
        { name: 'key', type: 'STRING', mode: 'REQUIRED' },
        { name: 'value', type: 'INT64', mode: 'REQUIRED' },
      ],
    });
    expect(byName.address).toEqual({
      name: 'address',
      type: 'RECORD',
      mode: 'REQUIRED',
      fields: [{ name: 'city', type: 'STRING', mode: 'REQUIRED' }],
    });
    expect(byName.billing!.mode).toBe('NULLABLE');
    expect(byName.either).toEqual({
      name: 'either',
      type: 'RECORD',
      mode: 'NULLABLE',
      fields: [
        { name: 'string', type: 'STRING', mode: 'NULLABLE' },
        { name: 'long', type: 'INT64', mode: 'NULLABLE' },
        {
          name: 'Address',
          type: 'RECORD',
          mode: 'NULLABLE',
          fields: [{ name: 'city', type: 'STRING', mode: 'REQUIRED' }],
        },
      ],
    });
    expect(byName.grid).toEqual({
      name: 'grid',
      type: 'RECORD',
      mode: 'REPEATED',
      fields: [{ name: 'value', type: 'INT64', mode: 'REPEATED' }],
    });
  });

  test('values: exact, in the forms BigQuery ingests', () => {
    const row = compiled.decode(plain.toBuffer(sample));
    expect(row).toEqual({
      id: 42,
      flag: true,
      count: -7,
      ratio: 0.5,
      score: 'NaN',
      blob: 'AAH/',
      note: 'hi',
      price: '-123.45',
      big: '12345678901234567890123456789.0123456789',
      wide: `-1${'0'.repeat(75)}`,
      at_ms: '2024-02-29T12:30:45.123000Z',
      at_us: '2024-02-29T12:30:45.123456Z',
      local_us: '1969-12-31T23:59:59.999999',
      day: '2024-02-29',
      t_ms: '12:34:56.789',
      t_us: '23:59:59.999999',
      uid: '0b7ac58c-9c57-4b5e-8e39-5c7a2b1d1e4f',
      status: 'PAID',
      hash: Buffer.from('abcd').toString('base64'),
      tags: ['a', 'b'],
      attrs: [
        { key: 'x', value: 1 },
        { key: 'y', value: 2 },
      ],
      address: { city: 'Oslo' },
      billing: null,
      either: { string: null, long: null, Address: { city: 'Rome' } },
      grid: [{ value: [1, 2] }, { value: [] }],
    });
  });

  test('a long beyond 2^53 stays whole (as decimal text)', () => {
    const schema = { type: 'record', name: 'R', fields: [{ name: 'n', type: 'long' }] };
    const big = 2n ** 62n + 1n;
    expect(compileAvro(JSON.stringify(schema)).decode(avroLong(big))).toEqual({ n: big.toString() });
    expect(compileAvro(JSON.stringify(schema)).decode(avroLong(-(2n ** 63n)))).toEqual({
      n: (-(2n ** 63n)).toString(),
    });
  });

  test('every long exact, at each varint length and both signs (avsc alone flips the sign below -2^52)', () => {
    const schema = { type: 'record', name: 'R', fields: [{ name: 'n', type: 'long' }] };
    const compiled = compileAvro(JSON.stringify(schema));
    const max = 2n ** 63n - 1n;
    const edges = [0n, 1n, -1n, 63n, -64n, 64n, 2n ** 31n, -(2n ** 31n) - 1n, 2n ** 48n - 1n, -(2n ** 48n)];
    edges.push(2n ** 48n, -(2n ** 48n) - 1n, 2n ** 52n + 1n, -(2n ** 52n) - 1n, -(2n ** 52n) - 3n);
    edges.push(2n ** 53n - 1n, -(2n ** 53n) + 1n, 2n ** 53n, -(2n ** 53n), 2n ** 53n + 1n, max, -max - 1n);
    // Every varint length from 1 to 10 bytes, each at both ends.
    for (let bits = 6n; bits <= 62n; bits += 7n)
      edges.push(2n ** bits - 1n, 2n ** bits, -(2n ** bits), -(2n ** bits) - 1n);
    for (const n of edges) {
      const safe = n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER);
      expect(compiled.decode(avroLong(n)), String(n)).toEqual({ n: safe ? Number(n) : n.toString() });
    }
    // The mistake this guards against: avsc's own long type reads the varint through a double.
    expect(avro.Type.forSchema('long').fromBuffer(avroLong(-(2n ** 52n) - 1n))).toBe(2 ** 52);
    // A varint of more than 64 bits is no long.
    const tooLong = Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    expect(() => compiled.decode(tooLong)).toThrow(ValueError);
    expect(() => compiled.decode(avroLong(2n ** 64n))).toThrow(ValueError);
  });

  test('the longs under a logical type exact too: nanoseconds of today, microseconds before 1827, year 1', () => {
    // `{"type": "long", "logicalType": ...}` got avsc's own long type: every timestamp-nanos of this
    // century was a dead letter ("potential precision loss"), and below -2^52 the sign flipped.
    const schema = {
      type: 'record',
      name: 'R',
      fields: [
        { name: 'ns', type: { type: 'long', logicalType: 'timestamp-nanos' } },
        { name: 'us', type: { type: 'long', logicalType: 'timestamp-micros' } },
        { name: 'local', type: { type: 'long', logicalType: 'local-timestamp-micros' } },
      ],
    };
    const compiled = compileAvro(JSON.stringify(schema));
    const bytes = Buffer.concat([
      avroLong(1_733_300_000_123_456_789n),
      avroLong(-62_135_596_800_000_000n),
      avroLong(-(2n ** 52n) - 1n),
    ]);
    expect(compiled.decode(bytes)).toEqual({
      ns: '2024-12-04T08:13:20.123456Z',
      us: '0001-01-01T00:00:00.000000Z',
      local: '1827-04-16T00:06:12.629503',
    });
  });

  test("Debezium's timestamps exact beyond 2^53: not through a double (nanoseconds of today were 1 µs off)", () => {
    const dbz = (name: string) => ({ type: 'long', 'connect.name': name, 'connect.version': 1 });
    const schema = {
      type: 'record',
      name: 'R',
      fields: [
        { name: 'ns', type: dbz('io.debezium.time.NanoTimestamp') },
        { name: 'before', type: dbz('io.debezium.time.NanoTimestamp') },
        { name: 'us', type: dbz('io.debezium.time.MicroTimestamp') },
      ],
    };
    const compiled = compileAvro(JSON.stringify(schema));
    const bytes = Buffer.concat([
      avroLong(1_733_300_000_123_456_999n),
      avroLong(-1n),
      avroLong(253_402_300_799_999_999n),
    ]);
    expect(compiled.decode(bytes)).toEqual({
      ns: '2024-12-04T08:13:20.123456',
      before: '1969-12-31T23:59:59.999999',
      us: '9999-12-31T23:59:59.999999',
    });
  });

  test('bytes that are not a value of the schema are a ValueError', () => {
    const schema = { type: 'record', name: 'R', fields: [{ name: 'n', type: 'string' }] };
    expect(() => compileAvro(JSON.stringify(schema)).decode(Buffer.from([0x20, 0x61]))).toThrow(ValueError);
    // Trailing bytes are refused too: a value is the whole payload.
    expect(() => compileAvro(JSON.stringify(schema)).decode(Buffer.from([0x02, 0x61, 0x00]))).toThrow(
      /trailing/,
    );
  });

  test('a time of day out of range names its path', () => {
    const schema = {
      type: 'record',
      name: 'R',
      fields: [{ name: 't', type: { type: 'int', logicalType: 'time-millis' } }],
    };
    expect(() => compileAvro(JSON.stringify(schema)).decode(Buffer.from([0x01]))).toThrow(
      't: -1 is not a time of day',
    );
  });

  test('a recursive record, and a top level that is no record, cannot be columns', () => {
    const recursive = { type: 'record', name: 'Node', fields: [{ name: 'next', type: ['null', 'Node'] }] };
    expect(() => compileAvro(JSON.stringify(recursive))).toThrow(/recursive/);
    expect(() => compileAvro('"string"')).toThrow(/not a record/);
  });
});

describe('timestamps in plain numbers and through bigints agree', () => {
  test.each([
    ['timestamp-millis', -62_135_596_800_000, '0001-01-01T00:00:00.000000Z'],
    ['timestamp-millis', 253_402_300_799_999, '9999-12-31T23:59:59.999000Z'],
    ['timestamp-micros', -1, '1969-12-31T23:59:59.999999Z'],
    ['timestamp-micros', 1_709_209_845_123_456, '2024-02-29T12:30:45.123456Z'],
    ['local-timestamp-millis', 1_709_209_845_123, '2024-02-29T12:30:45.123000'],
  ])('%s %d → %s', (logicalType, value, text) => {
    const schema = {
      type: 'record',
      name: 'R',
      fields: [{ name: 't', type: { type: 'long', logicalType } }],
    };
    const bytes = avro.Type.forSchema(schema as avro.Schema).toBuffer({ t: value });
    expect(compileAvro(JSON.stringify(schema)).decode(bytes)).toEqual({ t: text });
  });

  test('decimals of up to 6 bytes in plain numbers, longer ones exactly too', () => {
    const schema = (size: number) => ({
      type: 'record',
      name: 'R',
      fields: [
        {
          name: 'd',
          type: { type: 'fixed', name: 'F', size, logicalType: 'decimal', precision: 30, scale: 4 },
        },
      ],
    });
    const of = (hex: string) =>
      compileAvro(JSON.stringify(schema(hex.length / 2))).decode(Buffer.from(hex, 'hex'));
    expect(of('ffffffffffff')).toEqual({ d: '-0.0001' });
    expect(of('7fffffffffff')).toEqual({ d: '14073748835.5327' });
    expect(of('00000000000000000001')).toEqual({ d: '0.0001' });
    expect(of('0005')).toEqual({ d: '0.0005' });
  });
});
