/**
 * Transforms (TRANSFORM_MODULE): the value a record's transform returns is what is validated and written;
 * null or undefined drops the record (`filtered`, no dead letter); a throw is a `transform` dead letter with
 * its message; the context carries the record's place, timestamp, key (bytes and text) and headers.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { KafkaRecord } from '../../functions/kernel/records.js';
import { classifyEach } from '../../functions/records/classify.js';
import { createTransform, loadTransform, type TransformContext } from '../../functions/records/transform.js';
import type { SchemaField } from '../../functions/schema/table-schema.js';

function record(offset: number, value: unknown, extra: Partial<KafkaRecord> = {}): KafkaRecord {
  return {
    topic: 't',
    partition: 2,
    offset,
    timestamp: Date.UTC(2026, 11, 4, 1, 2, 3, 456),
    key: null,
    headers: {},
    value: Buffer.from(JSON.stringify(value)),
    ...extra,
  } as KafkaRecord;
}

const fields: SchemaField[] = [
  { name: 'id', type: 'STRING', mode: 'REQUIRED' },
  { name: 'amount', type: 'INT64', mode: 'NULLABLE' },
  { name: 'region', type: 'STRING', mode: 'NULLABLE' },
];

describe('a transform', () => {
  test('its context: topic, partition, offset, timestamp, key as bytes and as text, headers', async () => {
    const seen: TransformContext[] = [];
    const transform = createTransform((value, context) => {
      seen.push(context);
      return value;
    });
    await transform.apply({}, record(7, {}, { key: Buffer.from('k-1'), headers: { region: 'eu' } }));
    await transform.apply({}, record(8, {}, { key: Buffer.from([0xff, 0xfe]) }));
    expect(seen[0]).toEqual({
      topic: 't',
      partition: 2,
      offset: 7,
      timestamp: '2026-12-04T01:02:03.456Z',
      key: Buffer.from('k-1'),
      keyText: 'k-1',
      headers: { region: 'eu' },
    });
    expect(seen[1]).toMatchObject({ key: Buffer.from([0xff, 0xfe]), keyText: null });
  });

  test('changed, dropped (null or undefined), thrown, and async', async () => {
    const transform = createTransform(async (value) => {
      const v = value as Record<string, unknown>;
      if (v.drop === 1) return null;
      if (v.drop === 2) return undefined;
      if (v.boom) throw new Error('no amount');
      return { id: v.order_id };
    });
    expect(await transform.apply({ order_id: 'a' }, record(0, {}))).toEqual({ value: { id: 'a' } });
    expect(await transform.apply({ drop: 1 }, record(0, {}))).toEqual({ filtered: true });
    expect(await transform.apply({ drop: 2 }, record(0, {}))).toEqual({ filtered: true });
    expect(await transform.apply({ boom: true }, record(0, {}))).toEqual({
      error: 'transform threw: no amount',
    });
  });

  test('in classification: runs after decoding and before validation; filtered counted, no dead letter', async () => {
    const transform = createTransform((value, context) => {
      const v = value as Record<string, unknown>;
      if (v.test === true) return null;
      if (v.amount_cents === undefined) throw new Error('amount_cents missing');
      return { id: v.order_id, amount: Number(v.amount_cents) / 100, region: context.headers.region ?? null };
    });
    const rows: unknown[] = [];
    const records = [
      record(0, { order_id: 'a', amount_cents: 1200 }, { headers: { region: 'eu' } }),
      record(1, { order_id: 'b', test: true }),
      record(2, { order_id: 'c' }),
      record(3, { order_id: 'd', amount_cents: 150 }),
      { ...record(4, {}), value: Buffer.from('not json') } as KafkaRecord,
    ];
    const classified = await classifyEach(
      records,
      { shape: { fields, unknownFields: 'reject' }, tombstones: 'skip', transform },
      new Date(0),
      (row) => rows.push(row.row),
    );
    expect(classified.filtered).toBe(1);
    expect(classified.rows).toBe(1);
    expect(classified.letters.map((l) => [l.record.offset, l.kind, l.message])).toEqual([
      [2, 'transform', 'transform threw: amount_cents missing'],
      // 1.5 is no INT64: the table's columns judge what the transform returned.
      [3, 'schema', expect.stringMatching(/amount/)],
      [4, 'decode', expect.stringMatching(/not UTF-8 JSON/)],
    ]);
    expect(rows).toEqual([expect.objectContaining({ id: 'a', amount: 12, region: 'eu' })]);
  });

  test('loaded from a module exporting transform (or a default function); a module without one is refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'transform-'));
    writeFileSync(join(dir, 'named.mjs'), 'export function transform(v) { return { ...v, named: true }; }\n');
    writeFileSync(join(dir, 'default.mjs'), 'export default (v) => ({ ...v, fallback: true });\n');
    writeFileSync(join(dir, 'none.mjs'), 'export const x = 1;\n');
    expect(await (await loadTransform(join(dir, 'named.mjs'))).apply({ a: 1 }, record(0, {}))).toEqual({
      value: { a: 1, named: true },
    });
    expect(await (await loadTransform(join(dir, 'default.mjs'))).apply({}, record(0, {}))).toEqual({
      value: { fallback: true },
    });
    await expect(loadTransform(join(dir, 'none.mjs'))).rejects.toThrow(
      /exports no transform\(value, context\)/,
    );
  });
});

describe('UNKNOWN_FIELDS=json', () => {
  const withExtra: SchemaField[] = [...fields, { name: '_extra', type: 'JSON', mode: 'NULLABLE' }];
  const classify = async (values: unknown[]) => {
    const rows: Record<string, unknown>[] = [];
    const classified = await classifyEach(
      values.map((v, i) =>
        // A string is the value's own JSON text (numbers beyond 2^53 as written).
        typeof v === 'string' ? ({ ...record(i, {}), value: Buffer.from(v) } as KafkaRecord) : record(i, v),
      ),
      { shape: { fields: withExtra, unknownFields: 'json' }, tombstones: 'skip' },
      new Date(0),
      (row) => rows.push(row.row),
    );
    return { rows, letters: classified.letters.map((l) => [l.record.offset, l.kind, l.message]) };
  };

  test('the top-level fields the table lacks go whole into _extra as JSON text; nothing else changes', async () => {
    const { rows, letters } = await classify([
      '{"id": "a", "amount": 1, "coupon": {"code":"X","pct":10}, "tags": ["n","e"], "big": 9007199254740993}',
      { id: 'b', region: 'eu' },
    ]);
    expect(letters).toEqual([]);
    expect(rows[0]).toMatchObject({ id: 'a', amount: 1 });
    expect(rows[0]).not.toHaveProperty('coupon');
    // As the fields' own text: an integer beyond 2^53 keeps every digit.
    expect(rows[0]!._extra).toBe('{"coupon":{"code":"X","pct":10},"tags":["n","e"],"big":9007199254740993}');
    expect(rows[1]).toMatchObject({ id: 'b', region: 'eu' });
    expect(rows[1]!._extra).toBeUndefined();
  });

  test('a record that sets _extra itself and has fields the table lacks is a schema dead letter; a bad known field too', async () => {
    const { letters } = await classify([
      { id: 'a', _extra: { mine: true }, other: 1 },
      { id: 'b', amount: 'many', other: 1 },
    ]);
    expect(letters).toEqual([
      [0, 'schema', expect.stringMatching(/^_extra: is set by the record/)],
      [1, 'schema', expect.stringMatching(/^amount: /)],
    ]);
  });
});
