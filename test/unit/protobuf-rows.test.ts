/**
 * The compiled Protobuf path (protobuf/rows.ts) against the general one (protobufjs's decode, the
 * conversion, validation, the row encoder), on randomized messages of every scalar, enums (named and not),
 * oneofs, proto3 `optional`, nested and repeated messages, packed and unpacked repeated fields, Timestamps
 * and wrappers, encoded by protobufjs (not by us), then mangled as real payloads can be (fields out of
 * order, repeated, unknown ones, two messages concatenated): where the compiled path writes a row, its bytes
 * are the general path's, byte for byte; where it says false, the general path decides.
 */
import protobuf from 'protobufjs';
import { describe, expect, test } from 'vitest';
import { metadataWriter } from '../../functions/encoders/json-transcoder.js';
import { ProtoWriter } from '../../functions/encoders/proto-writer.js';
import { compileRowEncoder } from '../../functions/encoders/row-encoder.js';
import { metadataText } from '../../functions/encoders/row-text.js';
import { compileProtobuf } from '../../functions/formats/protobuf/schema.js';
import type { SchemaRegistry } from '../../functions/formats/schema-registry.js';
import type { KafkaRecord } from '../../functions/kernel/records.js';
import { isDeadLetter, type RowShape, toRow } from '../../functions/records/records.js';
import { targetTableSchema } from '../../functions/schema/table-schema.js';
import { bigQueryReads, generalFormat, pick, random } from '../support/differential.js';

const proto = `
syntax = "proto3";
package test.shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";

enum Color { RED = 0; GREEN = 1; BLUE = 5; }

message Wide {
  int32 i32 = 40;
  uint32 u32 = 2;
  sint32 s32 = 3;
  int64 i64 = 4;
  uint64 u64 = 5;
  sint64 s64 = 6;
  bool b = 7;
  Color color = 8;
  fixed32 f32 = 9;
  sfixed32 sf32 = 10;
  fixed64 f64 = 11;
  sfixed64 sf64 = 12;
  double d = 13;
  float f = 14;
  string s = 1;
  bytes by = 16;
  optional int64 opt_i64 = 17;
  optional string opt_s = 18;
  Inner inner = 19;
  repeated Inner inners = 20;
  google.protobuf.Timestamp ts = 21;
  google.protobuf.Int64Value w_i64 = 22;
  google.protobuf.StringValue w_s = 23;
  google.protobuf.DoubleValue w_d = 24;
  google.protobuf.BoolValue w_b = 25;
  google.protobuf.UInt64Value w_u64 = 26;
  repeated int64 r_i64 = 27;
  repeated string r_s = 28;
  repeated double r_d = 29 [packed = false];
  repeated Color r_color = 30;
  repeated sint32 r_s32 = 31;
  repeated google.protobuf.Timestamp r_ts = 32;
  oneof choice {
    string one_s = 33;
    int32 one_i = 34;
    Inner one_inner = 35;
  }
  repeated bytes r_by = 36;
  repeated fixed64 r_f64 = 37;
  map<string, int64> m_i64 = 38;
  map<string, Inner> m_inner = 39;
  map<string, Color> m_color = 41;
  map<string, google.protobuf.Timestamp> m_ts = 43;
  map<string, google.protobuf.StringValue> m_ws = 44;
  map<string, bytes> m_by = 45;
  google.protobuf.Struct st = 46;
  google.protobuf.Value val = 47;
  google.protobuf.ListValue lst = 48;
  repeated google.protobuf.Value r_val = 49;
}

message Inner {
  string name = 1;
  int64 n = 2;
  repeated int32 xs = 3;
  Color c = 4;
  Deep deep = 5;
}

message Deep { float x = 2; bool y = 1; }
`;

/**
 * The same message declared in its numbers' order (the table's columns follow the declaration; every
 * serializer writes fields by number): its payloads take one pass, Wide's the two.
 */
const ordered = proto
  .replace('  int32 i32 = 40;\n', '')
  .replace('  string s = 1;\n', '')
  .replace('message Wide {\n', 'message Wide {\n  string s = 1;\n')
  .replace('  map<string, Color> m_color = 41;', '  int32 i32 = 40;\n  map<string, Color> m_color = 41;');

const noRegistry = {} as SchemaRegistry;

/** A message type of the text, as a producer's protobufjs would have it (the well-known types included). */
function typeOf(text: string, name: string): protobuf.Type {
  const root = new protobuf.Root();
  for (const file of [
    'google/protobuf/timestamp.proto',
    'google/protobuf/wrappers.proto',
    'google/protobuf/struct.proto',
  ])
    root.addJSON((protobuf.common.get(file) as { nested: protobuf.INamespace['nested'] }).nested ?? {});
  protobuf.parse(text, root, { keepCase: true });
  root.resolveAll();
  return root.lookupType(name);
}

function sampler(next: () => number) {
  const edge = () => next() < 1 / 20;
  const int32 = () =>
    edge() ? pick(next, [0, 1, -1, 2147483647, -2147483648]) : Math.floor((next() - 0.5) * 2 ** 20);
  const uint32 = () => (edge() ? pick(next, [0, 4294967295, 2147483648]) : Math.floor(next() * 2 ** 31));
  const int64 = () =>
    edge()
      ? pick(next, [
          '0',
          '-1',
          '9007199254740991',
          '9007199254740993',
          '9223372036854775807',
          '-9223372036854775808',
        ])
      : String(BigInt(int32()) * 1000003n);
  const uint64 = () =>
    edge()
      ? pick(next, ['0', '18446744073709551615', '9223372036854775808', '4294967296'])
      : String(BigInt(uint32()) * 7919n);
  const float = () =>
    edge()
      ? pick(next, [0, -0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1e-300, 3.4e38])
      : (next() - 0.5) * 1e6;
  const string = () =>
    edge()
      ? pick(next, [
          '',
          'ünïcødé ✓ 😀',
          '\uFEFFbom',
          'a "quote", a back\\slash, \t\n\r\b\f\u0001\u001f\u007f',
          'x'.repeat(70_000),
          '\u0000nul',
        ])
      : `s${Math.floor(next() * 1e6)}`;
  const bytes = () =>
    edge()
      ? pick(next, [Buffer.alloc(0), Buffer.alloc(300, 7)])
      : Buffer.from([0, 255, Math.floor(next() * 256)]);
  const color = () => pick(next, [0, 1, 5, 1, 5, 7]); // 7: a number the enum does not name
  const timestamp = () =>
    edge()
      ? pick(next, [
          { seconds: '-62135596800', nanos: 0 }, // year 1: beyond what the compiled path holds
          { seconds: '253402300799', nanos: 999999999 }, // 9999-12-31
          { seconds: '0', nanos: 0 },
          { seconds: '-1', nanos: 1 },
          { seconds: '1733300000', nanos: -1 },
        ])
      : { seconds: String(1733300000 + Math.floor((next() - 0.5) * 1e8)), nanos: Math.floor(next() * 1e9) };
  const maybe = <T>(make: () => T): T | undefined => (next() < 0.3 ? undefined : make());
  const list = <T>(make: () => T): T[] => Array.from({ length: Math.floor(next() * 4) }, make);
  const inner = (): Record<string, unknown> => ({
    name: maybe(string),
    n: maybe(int64),
    xs: list(int32),
    c: maybe(color),
    deep: maybe(() => ({ x: maybe(float), y: maybe(() => next() < 0.5) })),
  });
  // Map keys: most kept in the payload's order by the general path's object, some not (indices, __proto__).
  const key = () =>
    next() < 0.98
      ? pick(next, ['a', 'b', 'ünï ✓', '', 'x'.repeat(20), '01', '-1', '4294967295', '1.5'])
      : pick(next, ['0', '7', '4294967294', '__proto__']);
  const map = <T>(make: () => T): Record<string, T> =>
    Object.fromEntries(Array.from({ length: Math.floor(next() * 4) }, () => [key(), make()]));
  // google.protobuf.Value in its message form: every kind, none, nested Structs and lists.
  const value = (depth = 0): Record<string, unknown> => {
    const kind = Math.floor(next() * (depth < 3 ? 8 : 6));
    if (kind === 0) return {};
    if (kind === 1) return { nullValue: 0 };
    if (kind === 2)
      return {
        numberValue: edge()
          ? pick(next, [Number.NaN, Number.POSITIVE_INFINITY, -0, 1e21, 5e-324, 0.1])
          : Math.round((next() - 0.5) * 1e6) / 100,
      };
    if (kind === 3) return { stringValue: string() };
    if (kind === 4 || kind === 5) return { boolValue: next() < 0.5 };
    if (kind === 6) return { structValue: struct(depth + 1) };
    return { listValue: { values: Array.from({ length: Math.floor(next() * 4) }, () => value(depth + 1)) } };
  };
  const struct = (depth = 0) => ({ fields: map(() => value(depth)) });
  return {
    int32,
    uint32,
    int64,
    uint64,
    float,
    string,
    bytes,
    color,
    timestamp,
    maybe,
    list,
    inner,
    map,
    value,
    struct,
  };
}

function wideObject(next: () => number): Record<string, unknown> {
  const s = sampler(next);
  const { maybe, list } = s;
  const value: Record<string, unknown> = {
    i32: maybe(s.int32),
    u32: maybe(s.uint32),
    s32: maybe(s.int32),
    i64: maybe(s.int64),
    u64: maybe(s.uint64),
    s64: maybe(s.int64),
    b: maybe(() => next() < 0.5),
    color: maybe(s.color),
    f32: maybe(s.uint32),
    sf32: maybe(s.int32),
    f64: maybe(s.uint64),
    sf64: maybe(s.int64),
    d: maybe(s.float),
    f: maybe(s.float),
    s: maybe(s.string),
    by: maybe(s.bytes),
    opt_i64: maybe(s.int64),
    opt_s: maybe(s.string),
    inner: maybe(s.inner),
    inners: list(s.inner),
    ts: maybe(s.timestamp),
    w_i64: maybe(() => ({ value: maybe(s.int64) })),
    w_s: maybe(() => ({ value: maybe(s.string) })),
    w_d: maybe(() => ({ value: maybe(s.float) })),
    w_b: maybe(() => ({ value: maybe(() => next() < 0.5) })),
    w_u64: maybe(() => ({ value: maybe(s.uint64) })),
    r_i64: list(s.int64),
    r_s: list(s.string),
    r_d: list(s.float),
    r_color: list(s.color),
    r_s32: list(s.int32),
    r_ts: list(s.timestamp),
    r_by: list(s.bytes),
    r_f64: list(s.uint64),
    m_i64: s.map(s.int64),
    m_inner: s.map(s.inner),
    m_color: s.map(s.color),
    m_ts: s.map(s.timestamp),
    m_ws: s.map(() => ({ value: maybe(s.string) })),
    m_by: s.map(s.bytes),
    st: maybe(() => s.struct()),
    val: maybe(() => s.value()),
    lst: maybe(() => ({ values: list(() => s.value()) })),
    r_val: list(() => s.value()),
  };
  const choice = Math.floor(next() * 4);
  if (choice === 1) value.one_s = s.string();
  if (choice === 2) value.one_i = s.int32();
  if (choice === 3) value.one_inner = s.inner();
  return value;
}

/** An unknown field of each wire type, as a newer writer's schema would add. */
const unknownFields = Buffer.from([
  (100 << 3) | 0,
  0x96,
  0x01, // varint 150, field 100 (two-byte tag)
  (101 << 3) | 2,
  0x03,
  0x61,
  0x62,
  0x63, // "abc", field 101
  (15 << 3) | 5,
  1,
  2,
  3,
  4, // fixed32, field 15
  (42 << 3) | 1,
  ...Buffer.alloc(8, 9), // fixed64, field 42
]);

/**
 * Map entries as protobufjs does not write them but a payload may hold (field 38, map<string, int64>): the
 * value before the key, no key, no value, an unknown field inside, an index key, a key given twice inside.
 */
const oddEntries = [
  [...tag(2, 0), 5, ...tag(1, 2), 1, 0x7a],
  [...tag(2, 0), 9],
  [...tag(1, 2), 1, 0x71],
  [...tag(3, 0), 1, ...tag(1, 2), 1, 0x72, ...tag(2, 0), 3],
  [...tag(1, 2), 1, 0x37, ...tag(2, 0), 1],
  [...tag(1, 2), 1, 0x61, ...tag(1, 2), 1, 0x62, ...tag(2, 0), 1],
].map((entry) => Buffer.from([...tag(38, 2), entry.length, ...entry]));

function tag(number: number, wire: number): number[] {
  let v = (number << 3) | wire;
  const out: number[] = [];
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return out;
}

function framed(payload: Uint8Array, indexes = [0]): Buffer {
  const header = Buffer.from([0, 0, 0, 0, 7]);
  const list =
    indexes.length === 1 && indexes[0] === 0 ? [0] : [indexes.length * 2, ...indexes.map((i) => i * 2)];
  return Buffer.concat([header, Buffer.from(list), Buffer.from(payload)]);
}

function recordOf(value: Buffer, offset: number): KafkaRecord {
  return {
    topic: 'wide',
    partition: 1,
    offset,
    timestamp: 1733300000123,
    key: Buffer.from('k'),
    value,
    headers: {},
  };
}

async function setUp(text: string, keyText = true) {
  const compiled = await compileProtobuf(
    { id: 7, schemaType: 'PROTOBUF', schema: text, references: [] },
    noRegistry,
  );
  const shape: RowShape = {
    fields: compiled.fields,
    unknownFields: 'reject',
    metadata: { headers: false, keyText },
  };
  const target = targetTableSchema(compiled.fields, shape.metadata!);
  return {
    compiled,
    shape,
    target,
    rows: compiled.rows!(target)!,
    meta: metadataWriter(shape, target)!,
    encode: compileRowEncoder(target),
    format: generalFormat(compiled, 'protobuf', 5),
    text: compiled.membersText!(compiled.fields)!,
    head: metadataText(keyText),
  };
}

/** How often the text path (insert-all, merge, load) wrote a row, and left one to the general path. */
const texts = { direct: 0, general: 0 };

type Set = Awaited<ReturnType<typeof setUp>>;
const ingestedAt = new Date(1733300001000);

/** Both paths on one value: 'compiled' when the compiled path wrote it (and the bytes agree), else 'general'. */
function compare(set: Set, value: Buffer, i: number): 'compiled' | 'general' {
  const record = recordOf(value, i);
  const w = new ProtoWriter(16);
  const wrote = set.rows(w, value, 5) && set.meta(w, record, ingestedAt.getTime() * 1000);
  const made = toRow(record, ingestedAt, set.shape, set.format);
  // As JSON text: what BigQuery reads of it is the general row.
  const members = set.text(value, 5);
  if (members === undefined) texts.general++;
  else {
    texts.direct++;
    if (isDeadLetter(made))
      throw new Error(`record ${i}: the general path refuses what the text path wrote: ${made.message}`);
    const row = `${set.head(record, ingestedAt)}${members.length === 0 ? '' : ','}${members.toString()}}`;
    expect(bigQueryReads(JSON.parse(row)), `record ${i} as text`).toEqual(
      bigQueryReads(JSON.parse(JSON.stringify(made.row))),
    );
  }
  if (!wrote) return 'general';
  if (isDeadLetter(made))
    throw new Error(
      `record ${i}: the general path refuses what the compiled one wrote: ${made.message} ${value.toString('hex').slice(0, 200)}`,
    );
  const general = Buffer.from(set.encode(made.row));
  const mine = Buffer.from(w.buffer.subarray(0, w.position));
  if (!mine.equals(general))
    throw new Error(
      `record ${i}: the compiled bytes differ\n mine    ${mine.toString('hex')}\n general ${general.toString('hex')}`,
    );
  return 'compiled';
}

describe('the compiled Protobuf path', { timeout: 60_000 }, () => {
  test.each([
    ['declared out of its numbers’ order', proto, [...tag(40, 0), 0x05]],
    ['declared in its numbers’ order', ordered, [...tag(1, 2), 1, 0x7a]],
  ])('1,500 randomized messages (PB_MESSAGES), some mangled, %s: the general path bytes wherever it writes', async (_, text, first) => {
    const set = await setUp(text);
    const Wide = typeOf(text, 'test.shop.Wide');
    const next = random(Number(process.env.PB_SEED ?? 7));
    const tally = { compiled: 0, general: 0 };
    texts.direct = 0;
    texts.general = 0;
    const messages = Number(process.env.PB_MESSAGES ?? 1500);
    for (let i = 0; i < messages; i++) {
      const object = wideObject(next);
      // Two members of the oneof, in the table's order: left to the general path.
      if (next() < 0.03) Object.assign(object, { one_s: 'both', one_i: 3 });
      let payload = Buffer.from(Wide.encode(Wide.fromObject(object)).finish());
      const mangle = next();
      if (mangle < 0.1) payload = Buffer.concat([unknownFields, payload]);
      else if (mangle < 0.2) {
        // Two messages one after the other: one message, as protobuf merges them.
        payload = Buffer.concat([
          payload,
          Buffer.from(Wide.encode(Wide.fromObject(wideObject(next))).finish()),
        ]);
      } else if (mangle < 0.25) {
        // A field repeated out of order at the end: its last value counts.
        payload = Buffer.concat([
          payload,
          Buffer.from([...tag(40, 0), 0x05]),
          Buffer.from([...tag(1, 2), 1, 0x7a]),
        ]);
      } else if (mangle < 0.35) payload = Buffer.concat([payload, pick(next, oddEntries)]);
      // The first field given twice in a row (the table's order kept): its last value counts.
      else if (mangle < 0.4) payload = Buffer.concat([Buffer.from(first), payload]);
      tally[compare(set, framed(payload), i)]++;
    }
    // Both paths exercised: most messages compiled; far timestamps, mangled oneofs, map keys the general
    // path reorders and the like not; as text, nor fields given twice or a repeated field's values apart.
    expect(tally.compiled).toBeGreaterThan(messages / 2);
    expect(tally.general).toBeGreaterThan(messages / 60);
    expect(texts.direct).toBeGreaterThan(messages * 0.4);
    expect(texts.general).toBeGreaterThan(messages / 60);
  });

  test('malformed payloads: false, never a row the general path would not write', async () => {
    const set = await setUp(proto);
    const Wide = typeOf(proto, 'test.shop.Wide');
    const next = random(Number(process.env.PB_SEED ?? 11));
    let compiled = 0;
    for (let i = 0; i < Number(process.env.PB_N ?? 400); i++) {
      const whole = Buffer.from(Wide.encode(Wide.fromObject(wideObject(next))).finish());
      // Cut short, a byte flipped, an end-group or a field number 0, invalid UTF-8 in a string.
      const cut = whole.subarray(0, Math.floor(next() * whole.length));
      const flipped = Buffer.from(whole);
      const at = Math.floor(next() * flipped.length);
      if (flipped.length > 0) flipped[at] = flipped[at]! ^ (1 << Math.floor(next() * 8));
      for (const payload of [
        cut,
        flipped,
        Buffer.concat([whole, Buffer.from([(9 << 3) | 4])]),
        Buffer.concat([whole, Buffer.from([0x00, 0x01])]),
        Buffer.concat([whole, Buffer.from([...tag(1, 2), 2, 0xff, 0xfe])]),
        Buffer.concat([whole, Buffer.from([...tag(40, 0), 0xff, 0xff, 0xff, 0xff, 0x7f])]),
      ])
        if (compare(set, framed(payload), i) === 'compiled') compiled++;
    }
    // Flipped bytes still make valid messages often enough: those compiled are checked like any other.
    expect(compiled).toBeGreaterThan(0);
  });

  test('the edge values: each as the general path writes it, or left to it', async () => {
    const set = await setUp(proto);
    const Wide = typeOf(proto, 'test.shop.Wide');
    const cases: Record<string, unknown>[] = [
      {},
      { i64: '9223372036854775807', s64: '-9223372036854775808', sf64: '-9223372036854775808' },
      { u64: '18446744073709551615', f64: '18446744073709551615', w_u64: { value: '18446744073709551615' } },
      { i32: -2147483648, s32: -2147483648, sf32: -2147483648, u32: 4294967295, f32: 4294967295 },
      { d: Number.NaN, f: Number.NEGATIVE_INFINITY, w_d: { value: -0 } },
      { s: '', by: Buffer.alloc(0), opt_s: '', opt_i64: '0', w_s: {}, w_b: {} },
      { color: 7, r_color: [0, 7, 5] },
      { ts: { seconds: '1733300000', nanos: 999999999 } },
      { ts: { seconds: '-1', nanos: 999 } },
      { one_inner: {} },
      { inner: { deep: {} } },
      { val: {}, st: {}, lst: {}, r_val: [{}, { nullValue: 0 }] },
      { st: { fields: { a: { listValue: { values: [{ numberValue: -0 }, { structValue: {} }] } } } } },
    ];
    const fates = cases.map((c, i) => compare(set, framed(Wide.encode(Wide.fromObject(c)).finish()), i));
    expect(fates.every((f) => f === 'compiled')).toBe(true);
    // A Value of two kinds (protobufjs keeps both; the general path prefers a Struct, a list, a number, a
    // string, a bool, in that order) and a Struct entry with no value: the general path's.
    const double = Buffer.alloc(8);
    double.writeDoubleLE(1.5);
    const twoKinds = [...tag(2, 1), ...double, ...tag(3, 2), 1, 0x78];
    expect(compare(set, framed(Buffer.from([...tag(47, 2), twoKinds.length, ...twoKinds])), 0)).toBe(
      'general',
    );
    // Two members of one oneof, in order or not: the general path's (what protobufjs keeps of them).
    const members = [...tag(33, 2), 1, 0x61, ...tag(34, 0), 3];
    for (const payload of [members, [...members.slice(3), ...members.slice(0, 3)]]) {
      expect(compare(set, framed(Buffer.from(payload)), 0)).toBe('general');
      expect(set.text(framed(Buffer.from(payload)), 5)).toBeUndefined();
    }
    const noValue = [...tag(1, 2), 3, ...tag(1, 2), 1, 0x6b];
    expect(compare(set, framed(Buffer.from([...tag(46, 2), noValue.length, ...noValue])), 0)).toBe('general');
    // Year 1 and 9999 are beyond microseconds in a double: the general path writes them.
    for (const seconds of ['-62135596800', '253402300799'])
      expect(
        compare(set, framed(Wide.encode(Wide.fromObject({ ts: { seconds, nanos: 0 } })).finish()), 0),
      ).toBe('general');
  });

  test('a nested message type by its message indexes; maps without text keys and proto2 defaults not compiled', async () => {
    const nested = `syntax = "proto3"; package p;
      message Outer { string a = 1; message In { int64 n = 1; string t = 2; } }`;
    const set = await setUp(nested);
    const In = typeOf(nested, 'p.Outer.In');
    // Index [0, 0]: Outer.In, whose fields the table (Outer's) lacks: the general path's.
    expect(compare(set, framed(In.encode(In.fromObject({ n: '5' })).finish(), [0, 0]), 0)).toBe('general');
    const notCompiled = async (text: string) => {
      const s = await setUp(text);
      const w = new ProtoWriter(16);
      return s.rows(w, framed(Buffer.alloc(0)), 5);
    };
    expect(await notCompiled('syntax = "proto3"; message M { map<int32, int64> m = 1; }')).toBe(false);
    expect(await notCompiled('syntax = "proto3"; message M { map<string, int64> m = 1; }')).toBe(true);
    expect(
      await notCompiled(
        'syntax = "proto3"; import "google/protobuf/struct.proto"; message M { google.protobuf.Struct s = 1; }',
      ),
    ).toBe(true);
    expect(await notCompiled('syntax = "proto2"; message M { optional int32 x = 1 [default = 5]; }')).toBe(
      false,
    );
    expect(await notCompiled('syntax = "proto3"; message M { int32 x = 1; }')).toBe(true);
  });

  test('proto2: required fields present or not, optional scalars as their default', async () => {
    const text =
      'syntax = "proto2"; message M { required int64 id = 1; optional string s = 2; repeated int32 r = 3 [packed = true]; }';
    const set = await setUp(text);
    const M = typeOf(text, 'M');
    expect(compare(set, framed(M.encode(M.fromObject({ id: '-3', r: [1, -2, 300] })).finish()), 0)).toBe(
      'compiled',
    );
    // No id: protobufjs refuses the payload (a dead letter): the compiled path leaves it to it.
    expect(compare(set, framed(Buffer.from([...tag(2, 2), 1, 0x61])), 1)).toBe('general');
  });
});
