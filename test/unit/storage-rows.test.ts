import { describe, expect, test } from 'vitest';
import { epochDays, epochMicros, toStorageRow } from '../support/json-writer-rows.js';

describe('rows for the Storage Write API', () => {
  test.each([
    ['1970-01-01', 0],
    ['1970-01-02', 1],
    ['1969-12-31', -1],
    ['2024-02-29', 19_782],
    ['0001-01-01', -719_162],
    ['9999-12-31', 2_932_896],
  ])('DATE %s is %i days since the epoch', (date, days) => {
    expect(epochDays(date)).toBe(days);
  });

  test.each([
    ['1970-01-01T00:00:00Z', '0'],
    ['2026-01-31T12:00:00Z', '1769860800000000'],
    ['2026-01-31 12:00:00', '1769860800000000'],
    ['2026-01-31 12:00:00 UTC', '1769860800000000'],
    ['2026-01-31T13:00:00+01:00', '1769860800000000'],
    ['2026-01-31T06:30:00-0530', '1769860800000000'],
    ['2026-01-31T12:00:00.123456Z', '1769860800123456'],
    ['2026-01-31T12:00:00.123456789Z', '1769860800123456'],
    ['2026-01-31T12:00Z', '1769860800000000'],
    ['9999-12-31T23:59:59.999999Z', '253402300799999999'],
    ['1969-12-31T23:59:59.5Z', '-500000'],
  ])('TIMESTAMP %s is %s µs since the epoch, exactly', (text, micros) => {
    expect(epochMicros(text)).toBe(micros);
  });

  test('TIMESTAMP as seconds since the epoch keeps its microseconds', () => {
    expect(epochMicros(1_769_860_800)).toBe('1769860800000000');
    expect(epochMicros(1.5)).toBe('1500000');
    expect(epochMicros(-1.5)).toBe('-1500000');
  });

  test('every type, nested and repeated, converts by the schema', () => {
    const fields = [
      { name: 's', type: 'STRING' },
      { name: 'i', type: 'INT64' },
      { name: 'big', type: 'INT64' },
      { name: 'f', type: 'FLOAT64' },
      { name: 'nan', type: 'FLOAT64' },
      { name: 'b', type: 'BOOL' },
      { name: 'n', type: 'NUMERIC' },
      { name: 'bn', type: 'BIGNUMERIC' },
      { name: 'bytes', type: 'BYTES' },
      { name: 'd', type: 'DATE' },
      { name: 't', type: 'TIME' },
      { name: 'dt', type: 'DATETIME' },
      { name: 'ts', type: 'TIMESTAMP' },
      { name: 'j', type: 'JSON' },
      { name: 'g', type: 'GEOGRAPHY' },
      { name: 'tags', type: 'STRING', mode: 'REPEATED' as const },
      {
        name: 'items',
        type: 'RECORD',
        mode: 'REPEATED' as const,
        fields: [
          { name: 'sku', type: 'STRING' },
          { name: 'at', type: 'TIMESTAMP' },
        ],
      },
      { name: 'gone', type: 'STRING' },
    ];
    const row = toStorageRow(
      {
        s: 'x',
        i: 42,
        big: '9223372036854775807',
        f: 1.5,
        nan: 'NaN',
        b: true,
        n: '12.50',
        bn: '1e3',
        bytes: Buffer.from('hi').toString('base64'),
        d: '2024-02-29',
        t: '23:59:59.999999',
        dt: '2026-01-31T12:00:00',
        ts: '2026-01-31T12:00:00Z',
        j: '{"a":[1,2]}',
        g: 'POINT(1 2)',
        tags: ['a', 'b'],
        items: [{ sku: 'k', at: '1970-01-01T00:00:01Z' }],
        gone: null,
      },
      fields,
    );
    expect(row).toEqual({
      s: 'x',
      i: '42',
      big: '9223372036854775807',
      f: 1.5,
      nan: Number.NaN,
      b: true,
      n: '12.50',
      bn: '1e3',
      bytes: Buffer.from('hi'),
      d: 19_782,
      t: '23:59:59.999999',
      dt: '2026-01-31 12:00:00',
      ts: '1769860800000000',
      j: '{"a":[1,2]}',
      g: 'POINT(1 2)',
      tags: ['a', 'b'],
      items: [{ sku: 'k', at: '1000000' }],
    });
  });
});
