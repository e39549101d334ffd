/**
 * FIELD_NAMES=sanitize: the mapping of names BigQuery refuses (the documented rule, the same every time),
 * at every depth, a collision a `schema` dead letter naming both fields, and strict (the default) refusing.
 */
import { createHash } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import type { KafkaRecord } from '../../functions/kernel/records.js';
import { classifyEach } from '../../functions/records/classify.js';
import { routeColumns, sanitizeKeys, sanitizeName } from '../../functions/records/field-names.js';
import type { SchemaField } from '../../functions/schema/table-schema.js';

describe('sanitizeName', () => {
  test('the rule: other characters to _, a leading digit prefixed, empty to _, valid names kept', () => {
    expect(sanitizeName('user-id')).toBe('user_id');
    expect(sanitizeName('prix €')).toBe('prix__');
    expect(sanitizeName('1st')).toBe('_1st');
    expect(sanitizeName('')).toBe('_');
    expect(sanitizeName('order_id')).toBe('order_id');
    expect(sanitizeName('_private')).toBe('_private');
    expect(sanitizeName('a.b')).toBe('a_b');
  });

  test('over 300 characters: the first 291, _, and 8 hex of the whole name’s SHA-256; always the same', () => {
    const long = `x-${'y'.repeat(400)}`;
    const mapped = sanitizeName(long);
    expect(mapped).toHaveLength(300);
    expect(mapped).toBe(
      `x_${'y'.repeat(289)}_${createHash('sha256').update(long).digest('hex').slice(0, 8)}`,
    );
    expect(sanitizeName(long)).toBe(mapped);
    expect(sanitizeName('z'.repeat(300))).toBe('z'.repeat(300));
  });
});

describe('sanitizeKeys', () => {
  test('every depth, arrays of objects included; a value with nothing to map is returned as it is', () => {
    const clean = { a: 1, b: [{ c: 2 }] };
    expect(sanitizeKeys(clean)).toBe(clean);
    expect(
      sanitizeKeys({ 'user-id': 'u', order: { '1st item': { 'unit-price': 2 } }, items: [{ 'sku#': 'k' }] }),
    ).toEqual({
      user_id: 'u',
      order: { _1st_item: { unit_price: 2 } },
      items: [{ sku_: 'k' }],
    });
  });

  test('two fields of one object mapping to one name: an error naming both and where', () => {
    expect(() => sanitizeKeys({ order: { 'user-id': 1, user_id: 2 } })).toThrow(
      'order: fields "user-id" and "user_id" both map to the column name "user_id" (FIELD_NAMES=sanitize)',
    );
  });
});

describe('in classification', () => {
  const fields: SchemaField[] = [
    { name: 'user_id', type: 'STRING', mode: 'REQUIRED' },
    { name: '_1st', type: 'INT64' },
  ];
  const record = (offset: number, value: unknown): KafkaRecord =>
    ({
      topic: 't',
      partition: 0,
      offset,
      timestamp: 0,
      key: null,
      headers: {},
      value: Buffer.from(JSON.stringify(value)),
    }) as KafkaRecord;
  const classify = async (fieldNames: 'strict' | 'sanitize') => {
    const rows: Record<string, unknown>[] = [];
    const { letters } = await classifyEach(
      [record(0, { 'user-id': 'u1', '1st': 5 }), record(1, { 'user-id': 'u2', user_id: 'u3' })],
      { shape: { fields, unknownFields: 'reject', fieldNames }, tombstones: 'skip' },
      new Date(0),
      (row) => rows.push(row.row),
    );
    return { rows, letters: letters.map((l) => [l.record.offset, l.kind, l.message]) };
  };

  test('sanitize: mapped names validated against the table; a collision a schema dead letter', async () => {
    const { rows, letters } = await classify('sanitize');
    expect(rows).toEqual([expect.objectContaining({ user_id: 'u1', _1st: 5 })]);
    expect(letters).toEqual([[1, 'schema', expect.stringContaining('"user-id" and "user_id" both map')]]);
  });

  test('strict (the default): a name BigQuery refuses is a schema dead letter', async () => {
    const { rows, letters } = await classify('strict');
    expect(rows).toEqual([]);
    expect(letters.map((l) => l[1])).toEqual(['schema', 'schema']);
  });

  test('a registry’s columns named as the records are', () => {
    const columns = routeColumns(
      [{ name: 'user-id', type: 'RECORD', fields: [{ name: '2nd', type: 'STRING' }] }],
      {
        unknownFields: 'reject',
        fieldNames: 'sanitize',
      },
    );
    expect(columns).toEqual([
      { name: 'user_id', type: 'RECORD', fields: [{ name: '_2nd', type: 'STRING' }] },
    ]);
  });
});
