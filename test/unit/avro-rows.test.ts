/**
 * The compiled Avro path (avro/rows.ts) against the general one (decode, convert, validate, encode), on
 * randomized records of every type it compiles (written by hand in Avro's binary encoding), with the edge
 * values: where the compiled path writes a
 * row, its bytes are the general path's, byte for byte; where it says false, the general path decides.
 */
import avro from 'avsc';
import { describe, expect, test } from 'vitest';
import { wideAvroSchema, wideAvroValue } from '../../bench/avro-shape.js';
import { metadataWriter } from '../../functions/encoders/json-transcoder.js';
import { ProtoWriter } from '../../functions/encoders/proto-writer.js';
import { compileRowEncoder } from '../../functions/encoders/row-encoder.js';
import { metadataText } from '../../functions/encoders/row-text.js';
import { createRawAvroFormat } from '../../functions/formats/avro/index.js';
import { compileAvro } from '../../functions/formats/avro/schema.js';
import type { KafkaRecord } from '../../functions/kernel/records.js';
import { isDeadLetter, type RowShape, toRow } from '../../functions/records/records.js';
import { targetTableSchema } from '../../functions/schema/table-schema.js';
import { bigQueryReads, pick, random } from '../support/differential.js';

const kinds = {
  boolean: 'boolean',
  int: 'int',
  long: 'long',
  float: 'float',
  double: 'double',
  string: 'string',
  bytes: 'bytes',
  date: { type: 'int', logicalType: 'date' },
  millis: { type: 'long', logicalType: 'timestamp-millis' },
  micros: { type: 'long', logicalType: 'timestamp-micros' },
  uuid: { type: 'string', logicalType: 'uuid' },
  enum: { type: 'enum', name: 'Color', symbols: ['RED', 'GREEN', 'BLUE_3'] },
  fixed: { type: 'fixed', name: 'Hash', size: 4 },
  fixdec: { type: 'fixed', name: 'Money', size: 9, logicalType: 'decimal', precision: 20, scale: 3 },
  // Up to 6 bytes written by digits, longer by the general text (NUMERIC, and BIGNUMERIC's scale).
  bytesdec: { type: 'bytes', logicalType: 'decimal', precision: 18, scale: 4 },
  bigdec: { type: 'bytes', logicalType: 'decimal', precision: 40, scale: 12 },
  tmillis: { type: 'int', logicalType: 'time-millis' },
  tmicros: { type: 'long', logicalType: 'time-micros' },
  nanos: { type: 'long', logicalType: 'timestamp-nanos' },
  lmillis: { type: 'long', logicalType: 'local-timestamp-millis' },
  lmicros: { type: 'long', logicalType: 'local-timestamp-micros' },
  lnanos: { type: 'long', logicalType: 'local-timestamp-nanos' },
  map: { type: 'map', values: 'long' },
  mapopt: { type: 'map', values: ['null', 'string'] },
  // Debezium's semantic types, as Connect's Avro converter writes them (a name, no logicalType).
  dbzdate: { type: 'int', 'connect.name': 'io.debezium.time.Date', 'connect.version': 1 },
  dbzmillis: { type: 'long', 'connect.name': 'io.debezium.time.Timestamp', 'connect.version': 1 },
  dbzmicros: { type: 'long', 'connect.name': 'io.debezium.time.MicroTimestamp', 'connect.version': 1 },
  dbztmicros: { type: 'long', 'connect.name': 'io.debezium.time.MicroTime', 'connect.version': 1 },
  dbzuuid: { type: 'string', 'connect.name': 'io.debezium.data.Uuid', 'connect.version': 1 },
  dbznanos: { type: 'long', 'connect.name': 'io.debezium.time.NanoTimestamp', 'connect.version': 1 },
  dbztime: { type: 'int', 'connect.name': 'io.debezium.time.Time', 'connect.version': 1 },
  dbzntime: { type: 'long', 'connect.name': 'io.debezium.time.NanoTime', 'connect.version': 1 },
  dbzzoned: { type: 'string', 'connect.name': 'io.debezium.time.ZonedTimestamp', 'connect.version': 1 },
  dbzjson: { type: 'string', 'connect.name': 'io.debezium.data.Json', 'connect.version': 1 },
  dbzvsd: {
    type: 'record',
    name: 'VariableScaleDecimal',
    namespace: 'io.debezium.data',
    fields: [
      { name: 'scale', type: 'int' },
      { name: 'value', type: 'bytes' },
    ],
    'connect.name': 'io.debezium.data.VariableScaleDecimal',
    'connect.version': 1,
  },
} as const;

/** A map's entries as the payload gives them, and whether they come in two blocks (the second sized). */
type MapValue = { entries: [string, unknown][]; blocked: boolean };

/** Keys JavaScript's objects keep in order, and those they do not (indices, `__proto__`, repeats). */
const mapKeys = ['a', 'b', 'ünï ✓', '', 'x'.repeat(20), '01', '-1', '4294967295', '1.5'];
const oddKeys = ['0', '7', '4294967294', '__proto__', 'a'];

/** Named types (enum, fixed) are defined once: each use after the first gets a name of its own. */
function named(type: unknown, suffix: string): unknown {
  return typeof type === 'object' && type !== null && 'name' in type
    ? { ...type, name: `${(type as { name: string }).name}${suffix}` }
    : type;
}

/** Unions of two types or more besides null: each branch a kind above (null: null), one field each. */
const unions: Record<string, readonly (keyof typeof kinds | null)[]> = {
  u_null_first: [null, 'string', 'long'],
  u_no_null: ['int', 'string'],
  u_mixed: ['double', null, 'micros', 'boolean', 'mapopt'],
  // Named types as branches: their columns named after them (a Debezium decimal's a BIGNUMERIC).
  u_named: ['enum', null, 'fixed', 'dbzvsd', 'string'],
  u_bytes: ['bytes', 'float', null, 'date'],
};

/** A record's values: every kind required, optional and last-null, and a branch of every union. */
function sampleRecord(next: () => number): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  for (const kind of Object.keys(kinds) as (keyof typeof kinds)[]) {
    value[`${kind}_req`] = sampleOf(kind, next);
    value[`${kind}_opt`] = next() < 0.3 ? null : sampleOf(kind, next);
    value[`${kind}_last`] = next() < 0.3 ? null : sampleOf(kind, next);
  }
  for (const [name, branches] of Object.entries(unions)) {
    const branch = Math.floor(next() * branches.length);
    const kind = branches[branch]!;
    value[name] = { branch, v: kind === null ? null : sampleOf(kind, next) };
  }
  return value;
}

const schema = {
  type: 'record',
  name: 'Wide',
  namespace: 'test',
  fields: [
    ...Object.entries(kinds).flatMap(([name, type]) => [
      { name: `${name}_req`, type },
      { name: `${name}_opt`, type: ['null', named(type, 'Opt')], default: null },
      { name: `${name}_last`, type: [named(type, 'Last'), 'null'] },
    ]),
    ...Object.entries(unions).map(([name, branches]) => ({
      name,
      type: branches.map((kind) => (kind === null ? 'null' : named(kinds[kind], `U${name}`))),
    })),
  ],
};

/** Debezium's kinds: sampled and encoded as the Avro kind of the same values. */
const like: Partial<Record<keyof typeof kinds, keyof typeof kinds>> = {
  dbzdate: 'date',
  dbzmillis: 'lmillis',
  dbzmicros: 'lmicros',
  dbztmicros: 'tmicros',
  dbzuuid: 'uuid',
  dbznanos: 'lnanos',
  dbztime: 'tmillis',
};

/** A value of a kind: a common one, or (one in 50: a record of some 110 fields must often have none) any, edge values included. */
function sampleOf(kind: keyof typeof kinds, next: () => number): unknown {
  const same = like[kind];
  if (same !== undefined) return sampleOf(same, next);
  const int = () => Math.floor((next() - 0.5) * 2 ** 32) | 0;
  if (next() < 49 / 50) {
    if (kind === 'long' || kind === 'micros' || kind === 'lmicros') return BigInt(int()) * 1000003n;
    if (kind === 'millis' || kind === 'lmillis') return 1733300000000n + BigInt(int());
    if (kind === 'date') return int() % 100000;
    if (kind === 'tmillis') return Math.floor(next() * 86_400_000);
    if (kind === 'tmicros') return BigInt(Math.floor(next() * 86_400_000_000));
    if (kind === 'dbzntime')
      return BigInt(Math.floor(next() * 86_400_000_000)) * 1000n + BigInt(Math.floor(next() * 1000));
    if (kind === 'dbzjson') return pick(next, ['{"n":1}', '[1,2,{"a":null}]', '{}', '"text"', '-0.5e3']);
    if (kind === 'dbzvsd') {
      const bytes = Buffer.alloc(1 + Math.floor(next() * 8));
      for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(next() * 256);
      return { scale: Math.floor(next() * 10), value: bytes };
    }
    if (kind === 'dbzzoned') {
      // As Debezium writes a UTC instant: its fraction's digits as many as it needs (none to nine).
      const iso = new Date(1733300000000 + int() * 1000).toISOString().slice(0, 19);
      const digits = Math.floor(next() * 10);
      const fraction = String(Math.floor(next() * 1e9))
        .padStart(9, '0')
        .slice(0, digits);
      return `${iso}${digits === 0 ? '' : `.${fraction}`}Z`;
    }
    if (kind === 'nanos' || kind === 'lnanos')
      return 1733300000000000000n + BigInt(int()) * 1000n + BigInt(Math.floor(next() * 2000) - 1000);
  }
  switch (kind) {
    case 'map':
    case 'mapopt': {
      const entries: [string, unknown][] = [];
      const count = Math.floor(next() * 5);
      for (let i = 0; i < count; i++) {
        const key = next() < 0.9 ? pick(next, mapKeys) : pick(next, oddKeys);
        if (kind === 'map') entries.push([key, BigInt(int()) * (next() < 0.05 ? 2n ** 31n : 1n)]);
        else entries.push([key, next() < 0.3 ? null : pick(next, ['', 'v', 'ü', String(next())])]);
      }
      // One entry in 40 repeats a key: the general path keeps the first's place and the last's value.
      if (entries.length > 0 && next() < 1 / 40) entries.push([entries[0]![0], entries[0]![1]]);
      return { entries, blocked: next() < 0.3 } satisfies MapValue;
    }
    case 'tmillis':
      return pick(next, [0, 86_399_999, 86_400_000, -1, int()]);
    case 'tmicros':
      return pick(next, [0n, 86_399_999_999n, 86_400_000_000n, -1n, 2n ** 60n]);
    case 'dbzvsd':
      // Scales from none to beyond BIGNUMERIC's 38 (and below 0), values of every size (none: zero).
      return {
        scale: pick(next, [0, 1, 9, 37, 38, 39, 100, -1, 2 ** 31 - 1]),
        value: pick(next, [
          Buffer.alloc(0),
          Buffer.from([0x80]),
          Buffer.from([0xff, 0xff]),
          Buffer.from('7f'.padEnd(32, 'f'), 'hex'),
          Buffer.from('80'.padEnd(34, '0'), 'hex'),
          Buffer.from('00'.repeat(20), 'hex'),
        ]),
      };
    case 'dbzjson':
      // Text JSON.parse takes (whitespace around, numbers of every form, deep nesting, escapes, which the
      // compiled path leaves to the general one) and text it refuses (a dead letter there).
      return pick(next, [
        ' { "a" : [ true , false , null ] }\n',
        '1E400',
        '{"é":"ü ✓"}',
        '{"a":"\\u0041\\n"}',
        `${'['.repeat(70)}${']'.repeat(70)}`,
        `${'['.repeat(60)}${']'.repeat(60)}`,
        '',
        '{',
        '{"a":1,}',
        '01',
        'NaN',
        "{'a':1}",
        '\ufeff{}',
        '{"a":1}{"b":2}',
      ]);
    case 'dbzzoned':
      return pick(next, [
        '0001-01-01T00:00:00Z',
        '9999-12-31T23:59:59.999999999Z',
        '1684-01-01T00:00:00Z', // beyond the compiled reach: the general path's
        '2024-12-04 08:13:20.5Z',
        '2024-12-04T09:13:20.123456+01:00', // an offset: the general path's
        '2024-02-29T00:00:00Z',
        '2023-02-29T00:00:00Z',
        '2024-12-04T24:00:00Z',
        '2024-12-04T08:13:20.Z',
        '2024-12-04T08:13:20.1234567890Z',
        '2024-12-04T08:13:20z',
        '',
        'not a time',
      ]);
    case 'dbzntime':
      return pick(next, [
        0n,
        999n,
        86_399_999_999_999n,
        86_400_000_000_000n,
        -1n, // the general path cuts toward zero: 00:00:00
        -1000n,
        -1001n,
        2n ** 62n,
        9223372036854775807n,
        -9223372036854775808n,
      ]);
    case 'nanos':
    case 'lnanos':
      return pick(next, [
        0n,
        -1n,
        -999n,
        -1000n,
        -1001n,
        999n,
        2n ** 62n - 1n, // 2116: the compiled path's edge
        2n ** 62n,
        -(2n ** 62n),
        -(2n ** 62n) - 1n,
        9223372036854775807n,
        -9223372036854775808n,
      ]);
    case 'lmillis':
      return pick(next, [0n, -62135596800000n, 253402300799999n, 253402300800000n, BigInt(int()) * 1000n]);
    case 'boolean':
      return next() < 0.5;
    case 'int':
      return pick(next, [0, 1, -1, 2147483647, -2147483648, int()]);
    case 'long':
    case 'micros':
    case 'lmicros':
      return pick(next, [
        0n,
        -1n,
        9007199254740991n,
        -9007199254740991n,
        9007199254740992n, // beyond 2^53: the general path's
        9223372036854775807n,
        -9223372036854775808n,
        BigInt(int()) * 1000003n,
        1733300000000000n,
        -62135596800000000n, // year 1
        253402300799999999n, // 9999-12-31
      ]);
    case 'millis':
      return pick(next, [0n, 1733300000000n, -62135596800000n, 253402300799999n, BigInt(int()) * 1000n]);
    case 'date':
      return pick(next, [0, -719162, 2932896, -719163, 2932897, int() % 100000]);
    case 'float':
    case 'double':
      return pick(next, [
        0,
        -0,
        1.5,
        -3.25,
        Number.NaN,
        Number.POSITIVE_INFINITY,
        Number.NEGATIVE_INFINITY,
        next() * 1e30,
        1e-300,
      ]);
    case 'string':
    case 'uuid':
      return pick(next, [
        '',
        'a',
        'ünïcødé ✓ 😀',
        '\uFEFFbom',
        'a "quote", a back\\slash, \t\n\r\b\f\u0001\u001f\u007f',
        'x'.repeat(70_000),
        String(next()),
      ]);
    case 'enum':
      return pick(next, [0, 1, 2, 2, 3]); // 3: no such symbol
    case 'fixed':
      return Buffer.from([0, 255, 128, Math.floor(next() * 256)]);
    case 'fixdec': {
      const b = Buffer.alloc(9);
      for (let i = 0; i < 9; i++) b[i] = Math.floor(next() * 256);
      if (next() < 0.5) b.fill(next() < 0.5 ? 0 : 255, 0, 5); // small magnitudes of both signs
      return b;
    }
    case 'bytes':
      return pick(next, [Buffer.alloc(0), Buffer.from([0, 255, 128]), Buffer.alloc(300, 7)]);
    case 'bytesdec':
    case 'bigdec': {
      const b = Buffer.alloc(Math.floor(next() * 9));
      for (let i = 0; i < b.length; i++) b[i] = Math.floor(next() * 256);
      return b;
    }
  }
}

/** Avro's binary encoding of the schema's records, written out by hand (longs as bigints, exactly). */
function zigzag(n: bigint): number[] {
  let v = BigInt.asUintN(64, (n << 1n) ^ (n >> 63n));
  const out: number[] = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}

function encodeValue(kind: keyof typeof kinds, v: unknown): Buffer {
  const same = like[kind];
  if (same !== undefined) return encodeValue(same, v);
  switch (kind) {
    case 'boolean':
      return Buffer.from([v ? 1 : 0]);
    case 'int':
    case 'date':
    case 'tmillis':
      return Buffer.from(zigzag(BigInt(v as number)));
    case 'long':
    case 'millis':
    case 'micros':
    case 'tmicros':
    case 'nanos':
    case 'lmillis':
    case 'lmicros':
    case 'lnanos':
    case 'dbzntime':
      return Buffer.from(zigzag(v as bigint));
    case 'map':
    case 'mapopt':
      return encodeMap(kind, v as MapValue);
    case 'float': {
      const b = Buffer.alloc(4);
      b.writeFloatLE(v as number);
      return b;
    }
    case 'double': {
      const b = Buffer.alloc(8);
      b.writeDoubleLE(v as number);
      return b;
    }
    case 'string':
    case 'uuid':
    case 'dbzjson':
    case 'dbzzoned': {
      const bytes = Buffer.from(v as string, 'utf8');
      return Buffer.concat([Buffer.from(zigzag(BigInt(bytes.length))), bytes]);
    }
    case 'enum':
      return Buffer.from(zigzag(BigInt(v as number)));
    case 'fixed':
    case 'fixdec':
      return v as Buffer;
    case 'bytes':
    case 'bytesdec':
    case 'bigdec':
      return Buffer.concat([Buffer.from(zigzag(BigInt((v as Buffer).length))), v as Buffer]);
    case 'dbzvsd': {
      const { scale, value } = v as { scale: number; value: Buffer };
      return Buffer.concat([Buffer.from(zigzag(BigInt(scale))), encodeValue('bytes', value)]);
    }
    default:
      throw new Error(`no encoding for ${kind}`);
  }
}

/** A map's blocks: one of all the entries, or (blocked) the first entry, then the rest sized. */
function encodeMap(kind: 'map' | 'mapopt', { entries, blocked }: MapValue): Buffer {
  const entry = ([key, value]: [string, unknown]) =>
    Buffer.concat([
      encodeValue('string', key),
      kind === 'map'
        ? encodeValue('long', value)
        : value === null
          ? Buffer.from(zigzag(0n))
          : Buffer.concat([Buffer.from(zigzag(1n)), encodeValue('string', value)]),
    ]);
  const block = (items: [string, unknown][], sized: boolean) => {
    if (items.length === 0) return Buffer.alloc(0);
    const body = Buffer.concat(items.map(entry));
    return sized
      ? Buffer.concat([
          Buffer.from(zigzag(BigInt(-items.length))),
          Buffer.from(zigzag(BigInt(body.length))),
          body,
        ])
      : Buffer.concat([Buffer.from(zigzag(BigInt(items.length))), body]);
  };
  const parts =
    blocked && entries.length > 1
      ? [block(entries.slice(0, 1), false), block(entries.slice(1), true)]
      : [block(entries, false)];
  return Buffer.concat([...parts, Buffer.from(zigzag(0n))]);
}

function encodeRecord(value: Record<string, unknown>): Buffer {
  const parts: Buffer[] = [];
  const unionPart = (name: string) => {
    const { branch, v } = value[name] as { branch: number; v: unknown };
    const kind = unions[name]![branch]!;
    return Buffer.concat([
      Buffer.from(zigzag(BigInt(branch))),
      kind === null ? Buffer.alloc(0) : encodeValue(kind, v),
    ]);
  };
  for (const kind of Object.keys(kinds) as (keyof typeof kinds)[]) {
    parts.push(encodeValue(kind, value[`${kind}_req`]));
    const opt = value[`${kind}_opt`];
    parts.push(
      opt === null
        ? Buffer.from(zigzag(0n))
        : Buffer.concat([Buffer.from(zigzag(1n)), encodeValue(kind, opt)]),
    );
    const last = value[`${kind}_last`];
    parts.push(
      last === null
        ? Buffer.from(zigzag(1n))
        : Buffer.concat([Buffer.from(zigzag(0n)), encodeValue(kind, last)]),
    );
  }
  for (const name of Object.keys(unions)) parts.push(unionPart(name));
  return Buffer.concat(parts);
}

function recordOf(value: Buffer, offset: number): KafkaRecord {
  return {
    topic: 'wide',
    partition: 3,
    offset,
    timestamp: 1733300000123,
    key: Buffer.from('k'),
    value,
    headers: {},
  };
}

describe('the compiled Avro path', { timeout: 60_000 }, () => {
  const text = JSON.stringify(schema);
  const compiled = compileAvro(text);
  const format = createRawAvroFormat(text);
  const shape: RowShape = {
    fields: compiled.fields,
    unknownFields: 'reject',
    metadata: { headers: false, keyText: true },
  };
  const target = targetTableSchema(compiled.fields, shape.metadata!);
  const rows = compiled.rows!(target)!;
  const meta = metadataWriter(shape, target)!;
  const encode = compileRowEncoder(target);
  const ingestedAt = new Date(1733300001000);

  test('compiles for this schema', () => {
    expect(rows).toBeDefined();
    expect(meta).toBeDefined();
  });

  test('1,500 randomized records (AVRO_RECORDS): the same bytes as the general path wherever it writes', () => {
    const next = random(42);
    let compiledRows = 0;
    let general = 0;
    for (let i = 0; i < Number(process.env.AVRO_RECORDS ?? 1500); i++) {
      const payload = encodeRecord(sampleRecord(next));
      const record = recordOf(payload, i);
      const w = new ProtoWriter();
      const wrote = rows(w, payload, 0) && meta(w, record, ingestedAt.getTime() * 1000);
      const made = toRow(record, ingestedAt, shape, format);
      if (!wrote) {
        general++;
        continue;
      }
      compiledRows++;
      expect(isDeadLetter(made), `record ${i}: the general path refuses what the compiled one wrote`).toBe(
        false,
      );
      if (isDeadLetter(made)) continue;
      expect(
        Buffer.from(w.buffer.subarray(0, w.position)).equals(Buffer.from(encode(made.row))),
        `record ${i}`,
      ).toBe(true);
    }
    // Both paths are exercised: most records compiled, the edge values (longs beyond 2^53, far timestamps) not.
    expect(compiledRows).toBeGreaterThan(40);
    expect(general).toBeGreaterThan(40);
  });

  test('as JSON text (insert-all, merge, load), 1,500 randomized records (AVRO_RECORDS): what BigQuery reads is the general row', () => {
    const members = compiled.membersText!(shape.fields)!;
    const head = metadataText(true);
    const next = random(43);
    const tally = { direct: 0, general: 0 };
    for (let i = 0; i < Number(process.env.AVRO_RECORDS ?? 1500); i++) {
      const payload = encodeRecord(sampleRecord(next));
      const record = recordOf(payload, i);
      const text = members(payload, 0);
      const made = toRow(record, ingestedAt, shape, format);
      if (text === undefined) {
        tally.general++;
        continue;
      }
      tally.direct++;
      if (isDeadLetter(made)) throw new Error(`record ${i}: the general path refuses it: ${made.message}`);
      const row = `${head(record, ingestedAt)},${text}}`;
      expect(bigQueryReads(JSON.parse(row)), `record ${i}`).toEqual(
        bigQueryReads(JSON.parse(JSON.stringify(made.row))),
      );
    }
    expect(tally.direct).toBeGreaterThan(40);
    expect(tally.general).toBeGreaterThan(40);
  });

  test('a truncated payload, a bad union branch, a bad boolean: false, never a row', () => {
    const value: Record<string, unknown> = {};
    for (const kind of Object.keys(kinds) as (keyof typeof kinds)[]) {
      value[`${kind}_req`] =
        kind === 'long' || kind === 'micros' || kind === 'millis' ? 5n : sampleOf(kind, random(1));
      value[`${kind}_opt`] = null;
      value[`${kind}_last`] = null;
    }
    for (const name of Object.keys(unions))
      value[name] = { branch: 0, v: name === 'u_null_first' ? null : 1 };
    value.u_bytes = { branch: 2, v: null };
    value.string_req = 'x';
    const payload = encodeRecord(value);
    const w = new ProtoWriter();
    expect(rows(w, payload, 0)).toBe(true);
    for (const cut of [1, 5, payload.length - 1])
      expect(rows(new ProtoWriter(), payload.subarray(0, cut), 0)).toBe(false);
    const longer = Buffer.concat([payload, Buffer.from([0])]);
    expect(rows(new ProtoWriter(), longer, 0)).toBe(false);
    const badBool = Buffer.from(payload);
    badBool[0] = 2;
    expect(rows(new ProtoWriter(), badBool, 0)).toBe(false);
    // The last field is a union of four branches, here null (branch 2): a fifth is no branch.
    expect(payload.at(-1)).toBe(4);
    const badBranch = Buffer.from(payload);
    badBranch[badBranch.length - 1] = 8;
    expect(rows(new ProtoWriter(), badBranch, 0)).toBe(false);
    expect(compiled.membersText!(shape.fields)!(badBranch, 0)).toBeUndefined();
  });

  test('not compiled: unknown logical types, arrays of nullable items, decimals onto STRING, a field the table lacks, a metadata name', () => {
    const tableOf = (fields: object[]) => {
      const c = compileAvro(JSON.stringify({ type: 'record', name: 'R', fields }));
      return c.rows?.(targetTableSchema(c.fields, { headers: false, keyText: false }));
    };
    expect(tableOf([{ name: 'm', type: { type: 'map', values: 'int' } }])).toBeDefined();
    expect(
      tableOf([{ name: 'm', type: { type: 'map', values: { type: 'map', values: 'int' } } }]),
    ).toBeDefined();
    expect(tableOf([{ name: 'e', type: { type: 'enum', name: 'E', symbols: ['A'] } }])).toBeDefined();
    expect(
      tableOf([{ name: 'd', type: { type: 'fixed', name: 'D', size: 12, logicalType: 'duration' } }]),
    ).toBeUndefined();
    expect(tableOf([{ name: 'a', type: { type: 'array', items: ['null', 'int'] } }])).toBeUndefined();
    expect(
      tableOf([{ name: 'd', type: { type: 'bytes', logicalType: 'decimal', precision: 80, scale: 40 } }]),
    ).toBeUndefined();
    expect(tableOf([{ name: 'x', type: 'int' }])).toBeDefined();
    // Unions of several types: their columns named after primitives and maps, not named types or arrays.
    expect(tableOf([{ name: 'u', type: ['string', 'long'] }])).toBeDefined();
    expect(tableOf([{ name: 'u', type: ['null', 'string', { type: 'map', values: 'int' }] }])).toBeDefined();
    const color = { type: 'enum', name: 'Color', symbols: ['RED'] };
    expect(tableOf([{ name: 'u', type: ['null', 'string', color] }])).toBeDefined();
    expect(tableOf([{ name: 'u', type: ['string', { type: 'array', items: 'int' }] }])).toBeUndefined();
    expect(tableOf([{ name: 'm', type: { type: 'map', values: ['string', 'long'] } }])).toBeUndefined();
    expect(tableOf([{ name: 'a', type: { type: 'array', items: 'int' } }])).toBeDefined();
    expect(tableOf([{ name: '_kafka_offset', type: 'long' }])).toBeUndefined();
    // Debezium's names the general path writes otherwise than a compiled kind would (or reads through a
    // double); a name it does not know is a plain long.
    const debezium = (name: string, type: string) =>
      tableOf([{ name: 'x', type: { type, 'connect.name': name, 'connect.version': 1 } }]);
    expect(debezium('io.debezium.time.Time', 'int')).toBeDefined();
    expect(debezium('io.debezium.time.Time', 'long')).toBeUndefined();
    expect(debezium('io.debezium.time.NanoTime', 'long')).toBeDefined();
    expect(debezium('io.debezium.time.ZonedTimestamp', 'string')).toBeDefined();
    expect(debezium('io.debezium.time.ZonedTimestamp', 'long')).toBeUndefined();
    expect(debezium('io.debezium.data.Json', 'string')).toBeDefined();
    expect(debezium('io.debezium.data.Json', 'bytes')).toBeUndefined();
    expect(debezium('io.debezium.data.VariableScaleDecimal', 'bytes')).toBeUndefined();
    // The connector's record for it, but for a field more: the general path's.
    const vsd = kinds.dbzvsd;
    expect(tableOf([{ name: 'x', type: vsd }])).toBeDefined();
    const odd = { ...vsd, fields: [...vsd.fields, { name: 'extra', type: 'int' }] };
    expect(tableOf([{ name: 'x', type: odd }])).toBeUndefined();
    expect(debezium('io.debezium.time.MicroTimestamp', 'long')).toBeDefined();
    expect(debezium('io.debezium.time.MicroTimestamp', 'int')).toBeUndefined();
    expect(debezium('com.example.Unknown', 'long')).toBeDefined();
    const c = compileAvro(
      JSON.stringify({ type: 'record', name: 'R', fields: [{ name: 'x', type: 'int' }] }),
    );
    expect(c.rows?.(targetTableSchema([], { headers: false, keyText: false }))).toBeUndefined();
  });
});

/** A schema's compiled rows beside the general path's pieces: its format, shape, metadata and encoder. */
function pathsOf(schema: unknown) {
  const text = JSON.stringify(schema);
  const compiled = compileAvro(text);
  const shape: RowShape = {
    fields: compiled.fields,
    unknownFields: 'reject',
    metadata: { headers: false, keyText: false },
  };
  const target = targetTableSchema(compiled.fields, shape.metadata!);
  return {
    compiled,
    format: createRawAvroFormat(text),
    shape,
    rows: compiled.rows!(target),
    meta: metadataWriter(shape, target)!,
    encode: compileRowEncoder(target),
  };
}

describe('the compiled Avro path on nested records, arrays and decimals', { timeout: 60_000 }, () => {
  test("the bench's wide records (nested shipping, arrays of lines and tags, decimals): the general path's bytes", () => {
    const { compiled, format, shape, rows, meta, encode } = pathsOf(wideAvroSchema);
    expect(rows).toBeDefined();
    const members = compiled.membersText!(shape.fields)!;
    const head = metadataText(false);
    const ingestedAt = new Date(1733300001000);
    for (let i = 0; i < 500; i++) {
      const payload = wideAvroValue(i, 1).subarray(5);
      const record = recordOf(payload, i);
      const w = new ProtoWriter();
      expect(rows!(w, payload, 0) && meta(w, record, ingestedAt.getTime() * 1000), `record ${i}`).toBe(true);
      const made = toRow(record, ingestedAt, shape, format);
      if (isDeadLetter(made)) throw new Error(`record ${i}: ${made.message}`);
      const text = members(payload, 0);
      expect(text, `record ${i} as text`).toBeDefined();
      expect(bigQueryReads(JSON.parse(`${head(record, ingestedAt)},${text}}`))).toEqual(
        bigQueryReads(JSON.parse(JSON.stringify(made.row))),
      );
      expect(
        Buffer.from(w.buffer.subarray(0, w.position)).equals(Buffer.from(encode(made.row))),
        `record ${i}`,
      ).toBe(true);
    }
  });

  test("named types used again by name (full or short, Debezium decimals, enums, records, fixed): the general path's bytes", () => {
    const schema = {
      type: 'record',
      name: 'Order',
      namespace: 'shop',
      fields: [
        { name: 'price', type: kinds.dbzvsd },
        { name: 'cost', type: ['null', 'io.debezium.data.VariableScaleDecimal'] },
        { name: 'color', type: { type: 'enum', name: 'Color', symbols: ['RED', 'GREEN'] } },
        { name: 'again', type: 'Color' },
        { name: 'full', type: ['null', 'shop.Color'] },
        {
          name: 'home',
          type: { type: 'record', name: 'Address', fields: [{ name: 'city', type: 'string' }] },
        },
        { name: 'work', type: ['null', 'Address'] },
        { name: 'hash', type: { type: 'fixed', name: 'H', size: 2 } },
        { name: 'hashes', type: { type: 'array', items: 'H' } },
      ],
    };
    const { format, shape, rows, meta, encode } = pathsOf(schema);
    expect(rows).toBeDefined();
    const ingestedAt = new Date(1733300001000);
    const type = avro.Type.forSchema(schema as avro.Schema);
    const next = random(11);
    let written = 0;
    for (let i = 0; i < 300; i++) {
      const vsd = () => ({
        scale: pick(next, [0, 2, 38, 40]),
        value: Buffer.from([Math.floor(next() * 256), 7]),
      });
      const value = {
        price: vsd(),
        cost: next() < 0.3 ? null : vsd(),
        color: pick(next, ['RED', 'GREEN']),
        again: pick(next, ['RED', 'GREEN']),
        full: next() < 0.3 ? null : pick(next, ['RED', 'GREEN']),
        home: { city: pick(next, ['Oslo', 'Zürich', '']) },
        work: next() < 0.3 ? null : { city: 'Lyon' },
        hash: Buffer.from([i & 255, 1]),
        hashes: next() < 0.5 ? [] : [Buffer.from([1, 2]), Buffer.from([3, 4])],
      };
      const payload = type.toBuffer(value);
      const record = recordOf(payload, i);
      const w = new ProtoWriter();
      const made = toRow(record, ingestedAt, shape, format);
      if (!rows!(w, payload, 0) || !meta(w, record, ingestedAt.getTime() * 1000)) continue;
      written++;
      if (isDeadLetter(made)) throw new Error(`record ${i}: ${made.message}`);
      expect(
        Buffer.from(w.buffer.subarray(0, w.position)).equals(Buffer.from(encode(made.row))),
        `record ${i}`,
      ).toBe(true);
    }
    // A scale of 40 (one value in four) is the general path's: the rest are written here.
    expect(written).toBeGreaterThan(100);
  });

  test('decimals of every size and sign, empty and blocked arrays, a null nested record', () => {
    const schema = {
      type: 'record',
      name: 'D',
      fields: [
        { name: 'small', type: { type: 'bytes', logicalType: 'decimal', precision: 9, scale: 2 } },
        { name: 'big', type: ['null', { type: 'bytes', logicalType: 'decimal', precision: 38, scale: 9 }] },
        { name: 'whole', type: { type: 'bytes', logicalType: 'decimal', precision: 20, scale: 0 } },
        { name: 'nums', type: { type: 'array', items: 'long' } },
        {
          name: 'inner',
          type: ['null', { type: 'record', name: 'In', fields: [{ name: 'x', type: 'string' }] }],
        },
      ],
    };
    const { format, shape, meta, encode, ...paths } = pathsOf(schema);
    const rows = paths.rows!;
    const twos = (n: bigint, size: number) => {
      const out = Buffer.alloc(size);
      let v = BigInt.asUintN(size * 8, n);
      for (let i = size - 1; i >= 0; i--) {
        out[i] = Number(v & 0xffn);
        v >>= 8n;
      }
      return out;
    };
    const bytes = (b: Buffer) => Buffer.concat([Buffer.from(zigzag(BigInt(b.length))), b]);
    const cases: Buffer[] = [];
    for (const [small, big, whole] of [
      [0n, 0n, 0n],
      [-1n, -1n, -1n],
      [12345n, 10n ** 37n - 1n, 10n ** 19n],
      [-99999999n, -(10n ** 37n) + 1n, -(2n ** 63n)],
      [5n, 123456789n, 7n],
    ] as const) {
      for (const sizeSmall of [4, 8]) {
        const nums = Buffer.concat([
          Buffer.from(zigzag(-2n)), // a block of two with its byte size
          Buffer.from(zigzag(2n)),
          Buffer.from(zigzag(7n)),
          Buffer.from(zigzag(-8n)),
          Buffer.from(zigzag(1n)),
          Buffer.from(zigzag(2n ** 40n)),
          Buffer.from(zigzag(0n)),
        ]);
        cases.push(
          Buffer.concat([
            bytes(twos(small, sizeSmall)),
            Buffer.from(zigzag(1n)),
            bytes(twos(big, 17)),
            bytes(twos(whole, 9)),
            nums,
            Buffer.from(zigzag(1n)),
            bytes(Buffer.from('é')),
          ]),
          Buffer.concat([
            bytes(twos(small, sizeSmall)),
            Buffer.from(zigzag(0n)),
            bytes(twos(whole, 9)),
            Buffer.from(zigzag(0n)),
            Buffer.from(zigzag(0n)),
          ]),
        );
      }
    }
    for (const [i, payload] of cases.entries()) {
      const record = recordOf(payload, i);
      const w = new ProtoWriter();
      const wrote = rows(w, payload, 0) && meta(w, record, 1733300001000000);
      const made = toRow(record, new Date(1733300001000), shape, format);
      if (isDeadLetter(made)) throw new Error(`case ${i}: ${made.message}`);
      expect(wrote, `case ${i}: the compiled path left it to the general one`).toBe(true);
      expect(
        Buffer.from(w.buffer.subarray(0, w.position)).equals(Buffer.from(encode(made.row))),
        `case ${i}`,
      ).toBe(true);
    }
  });
});
