/**
 * JSON Schema values straight to the rows (the JSON path's one-pass reader after the wire header) against
 * the general path (JSON.parse, the schema's conversion, validation, the row encoder), on randomized JSON
 * text: every column type JSON Schema maps, nulls, fields the schema does not name (top level and
 * nested), wrong types, numbers in every form, escapes, timestamps with offsets, duplicate keys. Where the
 * direct path writes a row, its bytes are the general path's; where it says false, the general path decides.
 */
import { describe, expect, test } from 'vitest';
import { metadataWriter } from '../../functions/encoders/json-transcoder.js';
import { ProtoWriter } from '../../functions/encoders/proto-writer.js';
import { compileRowEncoder } from '../../functions/encoders/row-encoder.js';
import { compileRowText } from '../../functions/encoders/row-text.js';
import { compileJsonSchema } from '../../functions/formats/json-schema/schema.js';
import type { KafkaRecord } from '../../functions/kernel/records.js';
import { isDeadLetter, type RowShape, toRow } from '../../functions/records/records.js';
import { targetTableSchema } from '../../functions/schema/table-schema.js';
import { bigQueryReads, generalFormat, pick, random } from '../support/differential.js';

const schema = {
  title: 'Order',
  type: 'object',
  required: ['id', 'at'],
  properties: {
    id: { type: 'integer' },
    at: { type: 'string', format: 'date-time' },
    name: { type: ['string', 'null'] },
    n: { type: ['integer', 'null'] },
    x: { type: 'number' },
    ok: { type: 'boolean' },
    day: { type: ['string', 'null'], format: 'date' },
    when: { anyOf: [{ type: 'null' }, { type: 'string', format: 'date-time' }] },
    tags: { type: 'array', items: { type: 'string' } },
    nums: { type: 'array', items: { type: 'number' } },
    ship: {
      type: ['object', 'null'],
      required: ['city'],
      properties: { city: { type: 'string' }, lat: { type: 'number' }, zip: { type: 'integer' } },
    },
    lines: {
      type: 'array',
      items: { type: 'object', properties: { sku: { type: 'string' }, units: { type: 'integer' } } },
    },
  },
};

/** A value's JSON text: mostly what the schema says, one in 12 anything (wrong types and edge forms). */
function textOf(kind: string, next: () => number): string {
  if (next() < 1 / 12)
    return pick(next, [
      'null',
      '"text"',
      '"a\\"b\\u00e9\\n"',
      '1',
      '-0',
      '1.5',
      '1e400',
      '9007199254740993',
      '-9223372036854775808',
      '9223372036854775808',
      '1E3',
      'true',
      '[]',
      '{}',
      '[null]',
      '"2024-02-29T12:30:45.123456+02:00"',
      '"2024-13-01"',
      '"0001-01-01T00:00:00Z"',
      '"9999-12-31T23:59:59.999999Z"',
    ]);
  switch (kind) {
    case 'integer':
      return String(Math.floor((next() - 0.5) * 2 ** 40));
    case 'number':
      return pick(next, [String((next() - 0.5) * 1e6), '0.1', '2', '-3.25e-5']);
    case 'boolean':
      return next() < 0.5 ? 'true' : 'false';
    case 'date-time':
      return JSON.stringify(
        new Date(Date.UTC(2020, 0, 1) + Math.floor(next() * 1e11)).toISOString().replace(/\.000Z$/, 'Z'),
      );
    case 'date':
      return JSON.stringify(
        new Date(Date.UTC(2020, 0, 1) + Math.floor(next() * 1e11)).toISOString().slice(0, 10),
      );
    default:
      return JSON.stringify(pick(next, ['', 'abc', 'ünïcødé ✓', `s${Math.floor(next() * 1e6)}`]));
  }
}

function objectText(fields: [string, () => string][], next: () => number): string {
  const parts: string[] = [];
  for (const [name, value] of fields) if (next() > 0.1) parts.push(`${JSON.stringify(name)}:${value()}`);
  // A field the schema does not name, now and then; a key given twice, rarely.
  if (next() < 0.2) parts.splice(Math.floor(next() * parts.length), 0, `"extra":${textOf('string', next)}`);
  if (next() < 0.03 && parts.length > 0) parts.push(parts[0]!);
  return `{${parts.join(next() < 0.5 ? ',' : ' , ')}}`;
}

function valueText(next: () => number): string {
  const array = (item: () => string) => () =>
    next() < 0.05 ? 'null' : `[${Array.from({ length: Math.floor(next() * 4) }, item).join(',')}]`;
  return objectText(
    [
      ['id', () => textOf('integer', next)],
      ['at', () => textOf('date-time', next)],
      ['name', () => textOf('string', next)],
      ['n', () => textOf('integer', next)],
      ['x', () => textOf('number', next)],
      ['ok', () => textOf('boolean', next)],
      ['day', () => textOf('date', next)],
      ['when', () => textOf('date-time', next)],
      ['tags', array(() => textOf('string', next))],
      ['nums', array(() => textOf('number', next))],
      [
        'ship',
        () =>
          next() < 0.1
            ? 'null'
            : objectText(
                [
                  ['city', () => textOf('string', next)],
                  ['lat', () => textOf('number', next)],
                  ['zip', () => textOf('integer', next)],
                ],
                next,
              ),
      ],
      [
        'lines',
        array(() =>
          objectText(
            [
              ['sku', () => textOf('string', next)],
              ['units', () => textOf('integer', next)],
            ],
            next,
          ),
        ),
      ],
    ],
    next,
  );
}

describe('JSON Schema values straight to the rows', { timeout: 60_000 }, () => {
  const compiled = compileJsonSchema(JSON.stringify(schema));
  const format = generalFormat(compiled, 'json-schema', 5);
  const shape: RowShape = {
    fields: compiled.fields,
    unknownFields: 'reject',
    metadata: { headers: false, keyText: false },
  };
  const target = targetTableSchema(compiled.fields, shape.metadata!);
  const rows = compiled.rows!(target)!;
  const meta = metadataWriter(shape, target)!;
  const encode = compileRowEncoder(target);
  const ingestedAt = new Date(1733300001000);

  test('5,000 randomized values: the general path bytes wherever the direct one writes', () => {
    const next = random(Number(process.env.JS_SEED ?? 5));
    const tally = { direct: 0, general: 0 };
    for (let i = 0; i < 5000; i++) {
      const text = valueText(next);
      const value = Buffer.concat([Buffer.from([0, 0, 0, 0, 9]), Buffer.from(text)]);
      const record: KafkaRecord = {
        topic: 't',
        partition: 0,
        offset: i,
        timestamp: 1733300000123,
        key: null,
        value,
        headers: {},
      };
      const w = new ProtoWriter(16);
      const wrote = rows(w, value, 5) && meta(w, record, ingestedAt.getTime() * 1000);
      const made = toRow(record, ingestedAt, shape, format);
      if (!wrote) {
        tally.general++;
        continue;
      }
      tally.direct++;
      if (isDeadLetter(made))
        throw new Error(`value ${i} ${text}: the general path refuses it: ${made.message}`);
      const general = Buffer.from(encode(made.row));
      const mine = Buffer.from(w.buffer.subarray(0, w.position));
      // The reader writes fields in the record's order, the encoder in the table's: the same message.
      expect(sortedFields(mine, target), `value ${i} ${text}`).toEqual(sortedFields(general, target));
    }
    expect(tally.direct).toBeGreaterThan(500);
    expect(tally.general).toBeGreaterThan(500);
  });

  test('as JSON text (insert-all, merge, load): what BigQuery reads is the general row, wherever the text is sent', () => {
    const text = compileRowText({ ...shape, fields: compiled.textFields! }, 5)!;
    const next = random(Number(process.env.JS_SEED ?? 6));
    const tally = { direct: 0, general: 0 };
    for (let i = 0; i < 5000; i++) {
      const json = valueText(next);
      const value = Buffer.concat([Buffer.from([0, 0, 0, 0, 9]), Buffer.from(json)]);
      const record: KafkaRecord = {
        topic: 't',
        partition: 0,
        offset: i,
        timestamp: 1733300000123,
        key: Buffer.from('k'),
        value,
        headers: {},
      };
      const sent = text(record, ingestedAt);
      const made = toRow(record, ingestedAt, shape, format);
      if (sent === undefined) {
        tally.general++;
        continue;
      }
      tally.direct++;
      if (isDeadLetter(made))
        throw new Error(`value ${i} ${json}: the general path refuses it: ${made.message}`);
      // A missing field, a null and an empty REPEATED are all NULL / [] to BigQuery.
      expect(bigQueryReads(JSON.parse(sent.toString())), `value ${i} ${json}`).toEqual(
        bigQueryReads(JSON.parse(JSON.stringify(made.row))),
      );
    }
    expect(tally.direct).toBeGreaterThan(300);
    expect(tally.general).toBeGreaterThan(500);
  });

  test('not direct: a JSON column, a renamed property, an array of arrays', () => {
    const of = (properties: object) => {
      const c = compileJsonSchema(JSON.stringify({ type: 'object', properties }));
      return c.rows?.(targetTableSchema(c.fields, { headers: false, keyText: false }));
    };
    expect(of({ a: { type: 'integer' } })).toBeDefined();
    expect(of({ a: { type: 'object' } })).toBeUndefined();
    expect(of({ 'a-b': { type: 'integer' } })).toBeUndefined();
    expect(
      of({ a: { type: 'array', items: { type: 'array', items: { type: 'integer' } } } }),
    ).toBeUndefined();
  });
});

/** A message's top-level fields as [tag, bytes] sorted by field number (stable within one number). */
function sortedFields(message: Buffer, target: readonly unknown[]): [number, string][] {
  const out: [number, string][] = [];
  let pos = 0;
  const varint = () => {
    let v = 0;
    let scale = 1;
    for (;;) {
      const b = message[pos++]!;
      v += (b & 0x7f) * scale;
      if (b < 0x80) return v;
      scale *= 128;
    }
  };
  while (pos < message.length) {
    const tag = varint();
    const start = pos;
    const wire = tag % 8;
    if (wire === 0) varint();
    else if (wire === 1) pos += 8;
    else if (wire === 5) pos += 4;
    else {
      const length = varint();
      pos += length;
    }
    out.push([tag, message.subarray(start, pos).toString('hex')]);
  }
  expect(target.length).toBeGreaterThan(0);
  return out
    .map((f, i) => [f, i] as const)
    .sort((a, b) => a[0][0] - b[0][0] || a[1] - b[1])
    .map((x) => x[0]);
}
