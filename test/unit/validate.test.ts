import { describe, expect, test } from 'vitest';
import type { JsonValue } from '../../functions/kernel/records.js';
import { createRules } from '../../functions/records/rules.js';
import { validateRecord } from '../../functions/records/validate.js';
import type { SchemaField } from '../../functions/schema/table-schema.js';
import { record } from '../support/memory-ports.js';

const one = (type: string, mode: SchemaField['mode'] = 'NULLABLE'): SchemaField[] => [
  { name: 'v', type, mode },
];
const check = (type: string, v: JsonValue, mode?: SchemaField['mode']) =>
  validateRecord({ v }, one(type, mode), 'reject');

describe('validation against the table schema', () => {
  test.each([
    ['STRING', 'text', 'text'],
    ['BYTES', 'aGVsbG8=', 'aGVsbG8='],
    ['INT64', 42, 42],
    ['INTEGER', '-9223372036854775808', '-9223372036854775808'],
    ['INT64', '9223372036854775807', '9223372036854775807'],
    ['FLOAT64', 1.5, 1.5],
    ['FLOAT', 'NaN', 'NaN'],
    // JSON has no form for these: a record's 1e400 parses to Infinity, sent as BigQuery's string (never null).
    ['FLOAT64', Number.POSITIVE_INFINITY, 'Infinity'],
    ['FLOAT', Number.NEGATIVE_INFINITY, '-Infinity'],
    ['FLOAT64', -0, -0],
    ['NUMERIC', '12345678901234567890123456789.123456789', '12345678901234567890123456789.123456789'],
    ['NUMERIC', 12.5, '12.5'],
    // Exponent forms are read exactly and written as plain decimals.
    ['NUMERIC', '1.5e3', '1500'],
    ['NUMERIC', '1E-9', '0.000000001'],
    ['NUMERIC', '-12345678901234567890123456789.123456789e0', '-12345678901234567890123456789.123456789'],
    ['NUMERIC', '123456789012345678901234567890e-1', '12345678901234567890123456789'],
    ['NUMERIC', '0.0e400', '0'],
    ['NUMERIC', 1e21, '1000000000000000000000'],
    ['BIGNUMERIC', '1e37', `1${'0'.repeat(37)}`],
    ['BIGNUMERIC', '-1.5E-37', `-0.${'0'.repeat(36)}15`],
    ['INT64', '1e3', '1000'],
    ['INT64', '9.223372036854775807e18', '9223372036854775807'],
    ['BIGNUMERIC', '0.00000000000000000000000000000000000001', '0.00000000000000000000000000000000000001'],
    ['BOOLEAN', true, true],
    ['BOOL', 'false', false],
    ['TIMESTAMP', '2026-01-31T12:00:00Z', '2026-01-31T12:00:00Z'],
    ['TIMESTAMP', '2026-01-31 12:00:00.123456+01:00', '2026-01-31 12:00:00.123456+01:00'],
    ['TIMESTAMP', 1_769_860_800, 1_769_860_800],
    ['DATE', '2024-02-29', '2024-02-29'],
    ['TIME', '23:59:59.999999', '23:59:59.999999'],
    ['DATETIME', '2026-01-31T12:00:00', '2026-01-31T12:00:00'],
    ['JSON', { a: [1, 2] }, '{"a":[1,2]}'],
    ['JSON', '{"a":[1,2]}', '{"a":[1,2]}'],
    ['JSON', '"text"', '"text"'],
    ['TIMESTAMP', '2026-01-31T12:00:00+14:00', '2026-01-31T12:00:00+14:00'],
    // The canonical UTC forms (checked without a regex) and their neighbours (through it).
    ['TIMESTAMP', '2024-02-29T23:59:59.123456789Z', '2024-02-29T23:59:59.123456789Z'],
    ['TIMESTAMP', '2000-02-29 00:00:00.1Z', '2000-02-29 00:00:00.1Z'],
    ['TIMESTAMP', '0001-01-01T00:00:00Z', '0001-01-01T00:00:00Z'],
    ['TIMESTAMP', '2026-01-31t12:00:00z', '2026-01-31t12:00:00z'],
    ['TIMESTAMP', ' 2026-01-31T12:00:00Z ', ' 2026-01-31T12:00:00Z '],
    ['TIMESTAMP', '2026-01-31T12:00Z', '2026-01-31T12:00Z'],
    ['DATE', '2000-02-29', '2000-02-29'],
    ['TIME', '00:00:00.123456789', '00:00:00.123456789'],
    ['TIMESTAMP', '2026-01-31T12:00:00-1459', '2026-01-31T12:00:00-1459'],
    ['GEOGRAPHY', 'POINT(1 2)', 'POINT(1 2)'],
    ['GEOGRAPHY', 'point ( -180 90 )', 'point ( -180 90 )'],
    ['GEOGRAPHY', 'POINT EMPTY', 'POINT EMPTY'],
    ['GEOGRAPHY', 'LINESTRING(0 0, 1 1)', 'LINESTRING(0 0, 1 1)'],
    ['GEOGRAPHY', 'POLYGON((0 0, 1 0, 1 1, 0 0))', 'POLYGON((0 0, 1 0, 1 1, 0 0))'],
    ['GEOGRAPHY', 'MULTIPOINT((1 2), (3 4))', 'MULTIPOINT((1 2), (3 4))'],
    ['GEOGRAPHY', 'MULTIPOINT(1 2, 3 4)', 'MULTIPOINT(1 2, 3 4)'],
    ['GEOGRAPHY', 'MULTILINESTRING((0 0, 1 1), (2 2, 3 3))', 'MULTILINESTRING((0 0, 1 1), (2 2, 3 3))'],
    [
      'GEOGRAPHY',
      'MULTIPOLYGON(((0 0, 1 0, 1 1, 0 0)), ((5 5, 6 5, 6 6, 5 5)))',
      'MULTIPOLYGON(((0 0, 1 0, 1 1, 0 0)), ((5 5, 6 5, 6 6, 5 5)))',
    ],
    [
      'GEOGRAPHY',
      'GEOMETRYCOLLECTION(POINT(1 2), LINESTRING(0 0, 1 1))',
      'GEOMETRYCOLLECTION(POINT(1 2), LINESTRING(0 0, 1 1))',
    ],
    ['GEOGRAPHY', '{"type":"Point","coordinates":[1.5,-2e1]}', '{"type":"Point","coordinates":[1.5,-2e1]}'],
    [
      'GEOGRAPHY',
      '{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}',
      '{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}',
    ],
  ])('%s accepts %j', (type, value, converted) => {
    expect(check(type, value)).toEqual({ ok: true, row: { v: converted } });
  });

  test.each([
    ['STRING', 5, 'must be a string, not number 5'],
    ['BYTES', 'not base64!', 'base64'],
    ['INT64', 1.5, 'whole number'],
    ['INT64', 2 ** 53 + 2, 'beyond 2^53'],
    ['INT64', '9223372036854775808', 'outside the INT64 range'],
    ['INT64', '12a', 'must be an INT64'],
    ['FLOAT64', 'fast', 'must be a number'],
    ['NUMERIC', '123456789012345678901234567890.5', 'more than 29 integer digits'],
    ['NUMERIC', '1.1234567891', 'more than 9 decimal places'],
    ['NUMERIC', 'abc', 'must be a NUMERIC'],
    ['NUMERIC', '1e40', 'more than 29 integer digits'],
    ['NUMERIC', '1e29', 'more than 29 integer digits'],
    ['NUMERIC', '1.5e-9', 'more than 9 decimal places'],
    ['NUMERIC', 1.5e-10, 'more than 9 decimal places'],
    ['NUMERIC', '1e99999999', 'must be a NUMERIC'],
    ['BIGNUMERIC', '1e38', 'more than 38 integer digits'],
    ['BIGNUMERIC', '1e-39', 'more than 38 decimal places'],
    ['BIGNUMERIC', '-1.5E-38', 'more than 38 decimal places'],
    ['INT64', '9.223372036854775808e18', 'outside the INT64 range'],
    ['INT64', '1.5e0', 'not a whole number'],
    ['INT64', 1e19, 'outside the INT64 range'],
    ['BIGNUMERIC', `1.${'1'.repeat(39)}`, 'more than 38 decimal places'],
    ['BOOLEAN', 'yes', 'true or false'],
    ['TIMESTAMP', '31/01/2026', 'not a TIMESTAMP'],
    ['TIMESTAMP', 1e12, 'not a TIMESTAMP in range'],
    ['DATE', '2023-02-29', 'DATE'],
    ['DATE', '1900-02-29', 'DATE'],
    ['DATE', '0000-01-01', 'DATE'],
    ['DATE', '2026-13-01', 'DATE'],
    ['DATE', '2026-04-31', 'DATE'],
    ['DATE', '2026-1-01', 'DATE'],
    ['DATE', '2026-01-0a', 'DATE'],
    ['DATE', '2026/01/01', 'DATE'],
    ['TIME', '12:00:00.', 'TIME'],
    ['TIME', '12:00:00.1234567890', 'TIME'],
    ['TIME', '12:60:00', 'TIME'],
    ['TIME', '12:00:0x', 'TIME'],
    ['TIMESTAMP', '2023-02-29T12:00:00Z', 'not a TIMESTAMP'],
    ['TIMESTAMP', '2026-01-31T24:00:00Z', 'not a TIMESTAMP'],
    ['TIMESTAMP', '2026-01-31T12:00:00.Z', 'not a TIMESTAMP'],
    ['TIMESTAMP', '2026-01-31X12:00:00Z', 'not a TIMESTAMP'],
    ['TIMESTAMP', '2026-01-31T12:00:00.1234567890Z', 'not a TIMESTAMP'],
    ['TIME', '24:00:00', 'TIME'],
    ['DATETIME', '2026-01-31', 'DATETIME'],
    ['GEOGRAPHY', '', 'GEOGRAPHY'],
    ['JSON', '{broken', 'is JSON text that does not parse'],
    ['JSON', '[1,', 'is JSON text that does not parse'],
    ['TIMESTAMP', '2026-01-31T12:00:00+25:00', 'UTC offset out of range'],
    ['TIMESTAMP', '2026-01-31T12:00:00-15:00', 'UTC offset out of range'],
    ['TIMESTAMP', '2026-01-31T12:00:00+01:60', 'UTC offset out of range'],
    ['GEOGRAPHY', 'not a geography', 'not a GEOGRAPHY BigQuery takes: not WKT or GeoJSON'],
    ['GEOGRAPHY', 'POINT(200 100)', 'longitude 200 is outside [-180, 180]'],
    ['GEOGRAPHY', 'POINT(10 100)', 'latitude 100 is outside [-90, 90]'],
    ['GEOGRAPHY', 'POINT(1)', 'expected a coordinate'],
    ['GEOGRAPHY', 'LINESTRING(1 1)', 'a line needs at least two distinct points'],
    ['GEOGRAPHY', 'LINESTRING(1 1, 1 1)', 'a line needs at least two distinct points'],
    ['GEOGRAPHY', 'POLYGON((0 0, 1 0, 0 0))', 'a polygon ring must be closed and have at least four points'],
    ['GEOGRAPHY', 'POLYGON((0 0, 1 0, 1 1, 2 2))', 'a polygon ring must be closed'],
    ['GEOGRAPHY', 'POLYGON((0 0, 1 1, 0 0, 0 0))', 'a polygon ring needs at least three distinct points'],
    ['GEOGRAPHY', 'POINT(1 2) trailing', 'unexpected "trailing" after the geometry'],
    ['GEOGRAPHY', 'CIRCLE(1 2)', 'unknown geometry type CIRCLE'],
    ['GEOGRAPHY', '{"type":"Point","coordinates":[1,95]}', 'latitude 95 is outside [-90, 90]'],
    ['GEOGRAPHY', '{"type":"Point","coordinates":"here"}', 'a GeoJSON position is an array of two numbers'],
    ['GEOGRAPHY', '{"type":"Blob"}', 'unknown GeoJSON geometry type "Blob"'],
    ['GEOGRAPHY', '{"type":', 'GeoJSON that does not parse'],
  ])('%s rejects %j', (type, value, message) => {
    const result = check(type, value as JsonValue);
    expect(result.ok).toBe(false);
    expect((result as { message: string }).message).toContain(message);
    expect((result as { path: string }).path).toBe('v');
  });

  test('modes: REQUIRED, NULLABLE, REPEATED', () => {
    expect(validateRecord({}, one('STRING', 'REQUIRED'), 'reject')).toMatchObject({
      ok: false,
      message: 'v: is REQUIRED and missing',
    });
    expect(check('STRING', null, 'REQUIRED')).toMatchObject({
      ok: false,
      message: 'v: is REQUIRED and is null',
    });
    // Checked in place (UNKNOWN_FIELDS=reject): a null stays a null (BigQuery's NULL), a null REPEATED
    // field becomes the empty array BigQuery stores for it.
    expect(check('STRING', null)).toEqual({ ok: true, row: { v: null } });
    expect(check('INT64', [1, '2'], 'REPEATED')).toEqual({ ok: true, row: { v: [1, '2'] } });
    expect(check('INT64', null, 'REPEATED')).toEqual({ ok: true, row: { v: [] } });
    expect(validateRecord({ v: null }, one('INT64', 'REPEATED'), 'ignore')).toEqual({ ok: true, row: {} });
    expect(check('INT64', 1, 'REPEATED')).toMatchObject({
      ok: false,
      message: 'v: is REPEATED and must be an array',
    });
    expect(check('INT64', [1, null], 'REPEATED')).toMatchObject({ ok: false, path: 'v[1]' });
  });

  test('unknown fields are found whatever else the record lacks; a column named like a prototype member counts only when present', () => {
    const fields: SchemaField[] = [
      { name: 'a', type: 'STRING' },
      { name: 'b', type: 'STRING' },
      { name: 'constructor', type: 'STRING' },
    ];
    expect(validateRecord({ a: 'x', c: 'y' }, fields, 'reject')).toMatchObject({ ok: false, path: 'c' });
    expect(validateRecord({ a: 'x', b: 'y', c: null }, fields, 'reject')).toMatchObject({
      ok: false,
      message: 'c: is not a column of the table',
    });
    expect(validateRecord({ a: 'x' }, fields, 'reject')).toEqual({ ok: true, row: { a: 'x' } });
    expect(validateRecord({ constructor: 'c' }, fields, 'reject')).toEqual({
      ok: true,
      row: { constructor: 'c' },
    });
    // In place: the record is the row, a value replaced only where BigQuery's form differs.
    const record = { a: 'x', b: 'y' };
    const checked = validateRecord(record, fields, 'reject');
    expect(checked.ok && checked.row).toBe(record);
    const flag = { f: 'true' };
    expect(validateRecord(flag, [{ name: 'f', type: 'BOOL' }], 'reject')).toEqual({
      ok: true,
      row: { f: true },
    });
    // Ignoring unknown fields, the row is a copy holding the columns only.
    const loose = { a: 'x', z: 1 };
    const copied = validateRecord(loose, fields, 'ignore');
    expect(copied).toEqual({ ok: true, row: { a: 'x' } });
    expect(copied.ok && copied.row).not.toBe(loose);
  });

  test('nested records name the exact path of what is wrong', () => {
    const fields: SchemaField[] = [
      {
        name: 'order',
        type: 'RECORD',
        fields: [
          {
            name: 'items',
            type: 'RECORD',
            mode: 'REPEATED',
            fields: [{ name: 'price', type: 'NUMERIC', mode: 'REQUIRED' }],
          },
        ],
      },
    ];
    const value = {
      order: { items: [{ price: '1.00' }, { price: '2.00' }, { price: '3.00' }, { price: 'free' }] },
    };
    expect(validateRecord(value, fields, 'reject')).toMatchObject({
      ok: false,
      path: 'order.items[3].price',
    });
    expect(validateRecord({ order: 'x' }, fields, 'reject')).toMatchObject({
      ok: false,
      path: 'order',
      message: 'order: is a RECORD and must be an object',
    });
  });

  test('unknown fields, including __proto__ and constructor keys, are rejected or dropped by policy', () => {
    const parsed = JSON.parse('{"v":"a","__proto__":{"x":1},"constructor":1}') as Record<string, JsonValue>;
    expect(validateRecord(parsed, one('STRING'), 'reject')).toMatchObject({ ok: false, path: '__proto__' });
    const ignored = validateRecord(parsed, one('STRING'), 'ignore');
    expect(ignored).toEqual({ ok: true, row: { v: 'a' } });
    expect(Object.keys((ignored as { row: object }).row)).toEqual(['v']);
  });
});

describe('business rules', () => {
  const r = record('orders', 1, 7, { amount: 5 });
  test.each([
    [() => true, undefined],
    [() => undefined, undefined],
    [async () => ({ ok: true }), undefined],
    [() => 'amount must be positive', 'amount must be positive'],
    [() => false, 'rejected by a rule'],
    [async () => ({ ok: false, reason: 'blocked customer' }), 'blocked customer'],
    [
      () => {
        throw new Error('boom');
      },
      'rule threw: boom',
    ],
    [() => 42, 'rule returned 42, not ok or a reason'],
  ])('%s → %s', async (validate, expected) => {
    expect(await createRules(validate as never).check({ amount: 5 }, r)).toBe(expected);
  });

  test('a rule sees the record and its origin, and cannot change the row', async () => {
    const value = { amount: 5 };
    let seen: unknown;
    await createRules((v, context) => {
      seen = context;
      (v as { amount: number }).amount = 0;
      return true;
    }).check(value, r);
    expect(seen).toMatchObject({ topic: 'orders', partition: 1, offset: 7 });
    expect(value.amount).toBe(5);
  });
});
