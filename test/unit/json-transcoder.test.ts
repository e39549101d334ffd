/**
 * The one-pass JSON → protobuf path gives every record it takes exactly the message the general path
 * (JSON.parse, validation, the compiled encoder) gives it, and leaves to that path every record it is not
 * sure of: each case is judged against the general path, and random mutations of a record too.
 */
import { describe, expect, test, vi } from 'vitest';
import { compileTranscoder } from '../../functions/encoders/json-transcoder.js';
import { ProtoWriter } from '../../functions/encoders/proto-writer.js';
import { compileRowEncoder } from '../../functions/encoders/row-encoder.js';
import { compileRowText, type RowText } from '../../functions/encoders/row-text.js';
import type { KafkaRecord, RowToWrite } from '../../functions/kernel/records.js';
import { isDeadLetter, type RowShape, toRow } from '../../functions/records/records.js';
import { type SchemaField, targetTableSchema } from '../../functions/schema/table-schema.js';

const fields: SchemaField[] = [
  { name: 's', type: 'STRING' },
  { name: 'i', type: 'INT64' },
  { name: 'f', type: 'FLOAT64' },
  { name: 'b', type: 'BOOL' },
  { name: 'n', type: 'NUMERIC' },
  { name: 'bn', type: 'BIGNUMERIC' },
  { name: 'd', type: 'DATE' },
  { name: 'ts', type: 'TIMESTAMP' },
  { name: 'req', type: 'STRING', mode: 'REQUIRED' },
  { name: 'tags', type: 'STRING', mode: 'REPEATED' },
  { name: 'nums', type: 'INTEGER', mode: 'REPEATED' },
  {
    name: 'r',
    type: 'RECORD',
    fields: [
      { name: 'x', type: 'STRING' },
      { name: 'y', type: 'INT64' },
      { name: 'deep', type: 'STRUCT', fields: [{ name: 'z', type: 'FLOAT', mode: 'REPEATED' }] },
    ],
  },
  {
    name: 'rr',
    type: 'RECORD',
    mode: 'REPEATED',
    fields: [
      { name: 'x', type: 'STRING', mode: 'REQUIRED' },
      { name: 'q', type: 'NUMERIC' },
    ],
  },
  { name: 'j', type: 'JSON' },
  { name: 't', type: 'TIME' },
];

const typical = {
  s: 'héllo wörld ✓',
  i: -1234567,
  f: 3.25,
  b: true,
  n: '-12345678901234567890123456789.123456789',
  bn: '1234567890123456789012345678901234567.5',
  d: '2024-02-29',
  ts: '2026-01-31T13:00:00.123456Z',
  req: 'present',
  tags: ['a', '', 'ü'],
  nums: [0, 1, -1, 999999999999999],
  r: { x: 'x', y: 42, deep: { z: [0.1, -2.5e-7, 1e21] } },
  rr: [{ x: 'one', q: '1.5' }, { x: 'two' }],
};

const ingestedAt = new Date('2026-12-02T01:02:03.456Z');

function recordOf(value: string | Buffer | null, over: Partial<KafkaRecord> = {}): KafkaRecord {
  return {
    topic: 'orders',
    partition: 3,
    offset: 1234,
    timestamp: Date.UTC(2026, 11, 1, 10, 0, 0, 7),
    key: Buffer.from('key-1'),
    value: typeof value === 'string' ? Buffer.from(value) : value,
    headers: {},
    ...over,
  };
}

interface Path {
  readonly shape: RowShape;
  readonly direct: (record: KafkaRecord) => Buffer | undefined;
  /** The row's JSON text, made from the record's (insert-all, merge). */
  readonly text: RowText;
  readonly general: (record: KafkaRecord) => Buffer | string;
}

function paths(unknownFields: 'reject' | 'ignore', keyText = false): Path {
  const metadata = { headers: false, keyText };
  const shape: RowShape = { fields, unknownFields, metadata };
  const target = targetTableSchema(fields, metadata);
  const transcode = compileTranscoder(shape, target)!;
  const encode = compileRowEncoder(target);
  return {
    shape,
    text: compileRowText(shape)!,
    direct(record) {
      const writer = new ProtoWriter(16);
      writer.varint(7); // something before, as in a batch: the row must start where it is written
      const at = writer.position;
      return transcode(writer, record, ingestedAt.getTime() * 1000)
        ? Buffer.from(writer.buffer.subarray(at, writer.position))
        : undefined;
    },
    general(record) {
      const made = toRow(record, ingestedAt, shape);
      return isDeadLetter(made) ? `letter: ${made.message}` : Buffer.from(encode((made as RowToWrite).row));
    },
  };
}

/** A message's fields by number, each field's values in order (nested messages where the schema has them). */
function canonical(bytes: Uint8Array, schema: readonly SchemaField[]): unknown {
  const out = new Map<number, unknown[]>();
  let at = 0;
  const varint = (): bigint => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const byte = bytes[at++]!;
      v |= BigInt(byte & 0x7f) << shift;
      shift += 7n;
      if (byte < 0x80) return v;
    }
  };
  while (at < bytes.length) {
    const key = Number(varint());
    const number = key >> 3;
    const field = schema[number - 1]!;
    let value: unknown;
    if ((key & 7) === 0) value = varint().toString();
    else if ((key & 7) === 1) {
      value = Buffer.from(bytes.subarray(at, at + 8)).toString('hex');
      at += 8;
    } else {
      const length = Number(varint());
      const content = bytes.subarray(at, at + length);
      at += length;
      value = ['RECORD', 'STRUCT'].includes(field.type)
        ? canonical(content, field.fields ?? [])
        : Buffer.from(content).toString('hex');
    }
    out.set(number, [...(out.get(number) ?? []), value]);
  }
  return [...out].sort((a, b) => a[0] - b[0]);
}

/** The direct path's verdict on a record, checked against the general path's: 'direct' or 'general'. */
function judge(path: Path, record: KafkaRecord): 'direct' | 'general' {
  const direct = path.direct(record);
  if (direct === undefined) return 'general';
  const general = path.general(record);
  expect(general, 'the direct path took a record the general path refuses').toBeInstanceOf(Buffer);
  const target = targetTableSchema(fields, path.shape.metadata!);
  expect(canonical(direct, target)).toEqual(canonical(general as Buffer, target));
  return 'direct';
}

/**
 * The text path's verdict on a record, checked against the general path's row as insert-all sends it
 * (`JSON.stringify`): the two texts must read as the same JSON.
 */
function judgeText(path: Path, record: KafkaRecord): 'direct' | 'general' {
  const text = path.text(record, ingestedAt);
  if (text === undefined) return 'general';
  const made = toRow(record, ingestedAt, path.shape);
  expect(isDeadLetter(made), 'the text path took a record the general path refuses').toBe(false);
  const general = JSON.parse(JSON.stringify((made as RowToWrite).row)) as unknown;
  expect(withoutNulls(JSON.parse(text.toString()))).toStrictEqual(withoutNulls(general));
  return 'direct';
}

/** A JSON value with its objects' null members left out: to BigQuery a null column is a missing one. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => v !== null)
      .map(([k, v]) => [k, withoutNulls(v)]),
  );
}

/** Both paths' verdicts. */
const verdicts = (path: Path, record: KafkaRecord) => [judge(path, record), judgeText(path, record)];

const withField = (name: string, json: string) =>
  JSON.stringify({ ...typical, [name]: 0 }).replace(`"${name}":0`, `"${name}":${json}`);

describe('the one-pass JSON path', () => {
  const reject = paths('reject');
  const ignore = paths('ignore');

  test.each([
    ['a typical record', JSON.stringify(typical)],
    ['whitespace everywhere', JSON.stringify(typical, null, 2).replace(/\n/g, '\r\n\t ')],
    ['fields in another order', JSON.stringify(Object.fromEntries(Object.entries(typical).reverse()))],
    ['only the required field', '{"req":"x"}'],
    ['nulls, empty arrays and objects', '{"req":"x","s":null,"tags":[],"nums":[],"r":{},"rr":[],"j":null}'],
    ['INT64 edges', withField('nums', '[0,-999999999999999,123456789012345]')],
    ['FLOAT64 forms', withField('r', '{"deep":{"z":[0,1.5,0.1,1e-7,-2E+3,123456789.123456789,5e-324]}}')],
    ['BOOL false', withField('b', 'false')],
    ['BIGNUMERIC of 38 and 38 digits', withField('bn', `"-${'9'.repeat(38)}.${'1'.repeat(38)}"`)],
    ['TIMESTAMP with a space, no fraction', withField('ts', '"1999-12-31 23:59:59Z"')],
    ['TIMESTAMP with nanoseconds', withField('ts', '"2026-01-31T13:00:00.123456789Z"')],
  ])('takes %s, as the general path writes it', (_name, json) => {
    expect(verdicts(reject, recordOf(json))).toEqual(['direct', 'direct']);
    expect(verdicts(ignore, recordOf(json))).toEqual(['direct', 'direct']);
  });

  test.each([
    ['a REPEATED null (the general path sends [])', withField('tags', 'null')],
    ['a FLOAT64 of -0 (the general path sends 0)', withField('f', '-0.0')],
    ['a FLOAT64 beyond a double (the general path sends "Infinity")', withField('f', '1e400')],
  ])('as protobuf, takes %s; as text, leaves it to the general path', (_name, json) => {
    expect(verdicts(reject, recordOf(json))).toEqual(['direct', 'general']);
  });

  test.each([
    ['an escape in a string', withField('s', '"say \\"hi\\""')],
    ['a unicode escape', withField('s', '"\\u00e9"')],
    ['a control character in a string', withField('s', '"a\tb"')],
    ['a duplicate key', `{"req":"x","s":"a","s":"b"}`],
    ['REQUIRED missing', '{"s":"x"}'],
    ['REQUIRED null', '{"req":null}'],
    ['REQUIRED missing in a repeated record', withField('rr', '[{"q":"1"}]')],
    ['null in a repeated field', withField('tags', '["a",null]')],
    ['an INT64 of 16 digits', withField('i', '1234567890123456')],
    ['an INT64 with a fraction', withField('i', '1.0')],
    ['an INT64 with an exponent', withField('i', '1e3')],
    ['an INT64 as text', withField('i', '"12"')],
    ['an INT64 of -0', withField('i', '-0')],
    ['a number with a leading zero', withField('i', '012')],
    ['a number cut short', withField('f', '1.')],
    ['a fraction without its zero', withField('f', '.5')],
    ['FLOAT64 as text', withField('f', '"NaN"')],
    ['BOOL as text', withField('b', '"true"')],
    ['NUMERIC with 10 decimals', withField('n', '"1.0000000001"')],
    ['NUMERIC as a number', withField('n', '12.5')],
    ['NUMERIC with an exponent', withField('n', '"1.5e3"')],
    ['a DATE that does not exist', withField('d', '"2023-02-29"')],
    ['a TIMESTAMP with an offset', withField('ts', '"2026-01-31T13:00:00+01:00"')],
    ['a JSON column', withField('j', '{"a":1}')],
    ['a TIME column', withField('t', '"10:00:00"')],
    ['a string where a record goes', withField('r', '"x"')],
    ['an object where a string goes', withField('s', '{}')],
    ['text after the object', `${JSON.stringify(typical)} x`],
    ['an array', '[1]'],
    ['a BOM', `\ufeff${JSON.stringify(typical)}`],
    ['a metadata column as a field', withField('_kafka_offset', '1')],
    ['truncated', JSON.stringify(typical).slice(0, 100)],
    ['empty', ''],
  ])('leaves %s to the general path', (_name, json) => {
    expect(verdicts(reject, recordOf(json))).toEqual(['general', 'general']);
    expect(verdicts(ignore, recordOf(json))).toEqual(['general', 'general']);
  });

  test('as text: an empty object and one with spaces get the metadata columns alone, as valid JSON', () => {
    const shape: RowShape = { fields: [{ name: 's', type: 'STRING' }], unknownFields: 'reject' };
    const text = compileRowText(shape)!;
    for (const json of ['{}', ' { } ', '{\n}\t', '{ "s" : "x" }  ']) {
      const made = toRow(recordOf(json), ingestedAt, shape) as RowToWrite;
      expect(JSON.parse(text(recordOf(json), ingestedAt)!.toString())).toEqual(
        JSON.parse(JSON.stringify(made.row)),
      );
    }
  });

  test("fields in the producers' orders: each record is read as the general path reads it, whatever order came before", () => {
    const path = paths('ignore');
    const entries = Object.entries(typical);
    const orders = [
      entries,
      [...entries].reverse(),
      [...entries].sort(([a], [b]) => a.localeCompare(b)),
      [...entries.slice(5), ...entries.slice(0, 5)],
      entries.filter(([k]) => k !== 's' && k !== 'rr'),
      [...entries].reverse(),
      entries,
    ];
    // Each order twice in a row, then the orders again: a learned order must not misread the next record.
    for (const order of [...orders.flatMap((o) => [o, o]), ...orders]) {
      const json = JSON.stringify(Object.fromEntries(order));
      expect(verdicts(path, recordOf(json))).toEqual(['direct', 'direct']);
    }
    // A duplicate key where the learned order expects another field is still the general path's.
    expect(verdicts(path, recordOf('{"req":"x","s":"a","req":"y"}'))).toEqual(['general', 'general']);
  });

  test('a field order learned from one record spares the next records in that order any lookup of a name', () => {
    // The table's columns in one order, the producer's in another (a registry that sorts properties).
    const columns: SchemaField[] = ['a', 'b', 'c', 'd', 'e'].map((name) => ({ name, type: 'STRING' }));
    const shape: RowShape = {
      fields: columns,
      unknownFields: 'reject',
      metadata: { headers: false, keyText: false },
    };
    const transcode = compileTranscoder(shape, targetTableSchema(columns, shape.metadata!))!;
    const record = recordOf('{"e":"5","d":"4","c":"3","b":"2","a":"1"}');
    const names = (): number => {
      const decoded = vi.spyOn(Buffer.prototype, 'toString');
      try {
        expect(transcode(new ProtoWriter(64), record, 0)).toBe(true);
        return decoded.mock.calls.length;
      } finally {
        decoded.mockRestore();
      }
    };
    expect(names()).toBeGreaterThan(0); // the first record in this order: its names looked up
    expect(names()).toBe(0);
    expect(names()).toBe(0);
  });

  test('unknown fields: the general path judges them where they are refused, skipped where ignored', () => {
    const json = withField('extra', '{"a":[1,2.5,true,false,null,"x",{"b":{}}],"c":[]}');
    expect(verdicts(reject, recordOf(json))).toEqual(['general', 'general']);
    // As text, an unknown field would go to BigQuery with the row: the general path drops it.
    expect(verdicts(ignore, recordOf(json))).toEqual(['direct', 'general']);
    expect(verdicts(ignore, recordOf(withField('r', '{"x":"a","other":"b"}')))).toEqual([
      'direct',
      'general',
    ]);
    // An unknown value it cannot skip surely: the general path.
    expect(judge(ignore, recordOf(withField('extra', '"\\n"')))).toBe('general');
  });

  test('the metadata: no key, an empty key, a key as text, timestamps before 1970 and out of reach', () => {
    const json = JSON.stringify(typical);
    const text = paths('reject', true);
    const both = ['direct', 'direct'];
    for (const path of [reject, text]) {
      expect(verdicts(path, recordOf(json, { key: null }))).toEqual(both);
      expect(verdicts(path, recordOf(json, { key: Buffer.alloc(0) }))).toEqual(both);
      expect(verdicts(path, recordOf(json, { timestamp: -1 }))).toEqual(both);
      expect(verdicts(path, recordOf(json, { offset: 2 ** 40, partition: 0 }))).toEqual(both);
      expect(verdicts(path, recordOf(json, { timestamp: Date.UTC(9999, 0, 1) }))).toEqual([
        'general',
        'general',
      ]);
    }
    expect(verdicts(text, recordOf(json, { key: Buffer.from([0xff, 0x00]) }))).toEqual(both);
    expect(verdicts(text, recordOf(json, { key: Buffer.from('"\\k\n') }))).toEqual(both);
    // The key as text without its BOM, as the general path decodes it: the text path makes it so too.
    expect(verdicts(text, recordOf(json, { key: Buffer.from('\ufeffk') }))).toEqual(['general', 'direct']);
  });

  test('DATE and TIMESTAMP, read from the bytes: written as the general path writes them, or left to it', () => {
    // Both paths read them alike: the same verdict from each.
    const verdicts = (name: string, values: string[]) =>
      values.map((v) => {
        const record = recordOf(withField(name, JSON.stringify(v)));
        const verdict = judge(reject, record);
        expect(judgeText(reject, record), v).toBe(verdict);
        return verdict;
      });
    const dates = ['2024-02-29', '2000-02-29', '2023-02-28', '0001-01-01', '9999-12-31', '1969-12-31'];
    expect(verdicts('d', dates)).toEqual(dates.map(() => 'direct'));
    const badDates = [
      '1900-02-29',
      '2024-02-30',
      '2023-04-31',
      '2023-13-01',
      '2023-00-10',
      '2023-01-00',
      '2023-1-01',
    ];
    const otherDates = ['2023/01/01', '20230101', ' 2023-01-01', '2023-01-01T00:00:00Z', '١٩٧٠-01-01'];
    expect(verdicts('d', [...badDates, ...otherDates])).toEqual(
      [...badDates, ...otherDates].map(() => 'general'),
    );
    const stamps = [
      '2026-01-31T13:00:00Z',
      '2026-01-31T13:00:00.1Z',
      '2026-01-31T13:00:00.12Z',
      '2026-01-31T13:00:00.123Z',
      '2026-01-31T13:00:00.1234Z',
      '2026-01-31T13:00:00.12345Z',
      '2026-01-31T13:00:00.123456Z',
      '2026-01-31T13:00:00.1234567Z',
      '2026-01-31T13:00:00.999999999Z',
      '1969-12-31T23:59:59.999999Z',
      '1970-01-01T00:00:00.000001Z',
      '1686-01-01 00:00:00Z',
      '1686-01-01 00:00:00.5Z',
      '2255-03-14T15:59:59.999999Z',
      '1684-10-19T08:00:01Z',
      '2024-02-29T23:59:59Z',
    ];
    expect(verdicts('ts', stamps)).toEqual(stamps.map(() => 'direct'));
    const others = [
      // Out of reach of a number's exact microseconds (the general path writes them as it can).
      '0001-01-01T00:00:00Z',
      '2255-03-14T16:00:00Z',
      '1684-10-19T08:00:00Z',
      '9999-12-31T23:59:59.999999Z',
      '1600-01-01T00:00:00Z',
      // Not canonical, or not a TIMESTAMP at all: the general path judges them.
      '2026-01-31t13:00:00Z',
      '2026-01-31T13:00:00z',
      '2026-01-31T13:00Z',
      '2026-01-31T13:00:00.Z',
      '2026-01-31T13:00:00.1234567890Z',
      '2026-01-31T24:00:00Z',
      '2026-01-31T23:60:00Z',
      '2026-01-31T23:59:60Z',
      '2026-02-30T00:00:00Z',
      '2026-01-31T13:00:00+00:00',
      '2026-01-31T13:00:00.12a4Z',
      '2026-01-31T1:00:00.1234Z',
    ];
    expect(verdicts('ts', others)).toEqual(others.map(() => 'general'));
  });

  test('bad bytes: invalid UTF-8, a null value, a value too large to be a row', () => {
    const bad = Buffer.concat([Buffer.from('{"req":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
    expect(verdicts(reject, recordOf(bad))).toEqual(['general', 'general']);
    expect(verdicts(reject, recordOf(null))).toEqual(['general', 'general']);
    const huge = JSON.stringify({ req: 'x'.repeat(9.5 * 1024 * 1024) });
    expect(verdicts(reject, recordOf(huge))).toEqual(['general', 'general']);
  });

  test("in a batch: a record the direct path leaves halfway (after some fields) leaves no byte in the batch's rows", () => {
    const target = targetTableSchema(fields, reject.shape.metadata);
    const transcode = compileTranscoder(reject.shape, target)!;
    const first = recordOf(JSON.stringify(typical));
    // Fields before the quote in `req` are written, then the escape sends the record the general way.
    const halfway = recordOf(JSON.stringify({ ...typical, req: 'say "hi"' }));
    const third = recordOf(JSON.stringify({ ...typical, s: 'third' }), { offset: 1236 });
    const batch = compileRowEncoder(target).batch();
    const micros = ingestedAt.getTime() * 1000;
    expect([first, halfway, third].map((r) => batch.addWith(transcode, r, micros))).toEqual([
      true,
      false,
      true,
    ]);
    const rows = batch.finish().map((b) => Buffer.from(b).toString('hex'));
    expect(rows).toEqual([reject.direct(first)!.toString('hex'), reject.direct(third)!.toString('hex')]);
  });

  test('random mutations of a record: whatever the direct path takes, it writes as the general path does', () => {
    const base = Buffer.from(JSON.stringify(typical));
    const alphabet = Buffer.from('{}[]":,.-+eE0123456789 \\ntrufalsx\u00e9');
    let seed = 20261202;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    let direct = 0;
    let text = 0;
    for (let i = 0; i < 3000; i++) {
      const bytes = Buffer.from(base);
      for (let k = 0, edits = 1 + random(3); k < edits; k++)
        bytes[random(bytes.length)] = alphabet[random(alphabet.length)]!;
      for (const path of [reject, ignore]) {
        if (judge(path, recordOf(bytes)) === 'direct') direct++;
        if (judgeText(path, recordOf(bytes)) === 'direct') text++;
      }
    }
    // Many mutations land inside strings or digits and stay valid: the comparison is not empty.
    expect(direct).toBeGreaterThan(400);
    expect(text).toBeGreaterThan(400);
  });
});
