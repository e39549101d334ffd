/**
 * parseConnectJson: JSON.parse, except that an integer beyond 2^53 outside a string comes as a bigint (Kafka
 * Connect's JSON converter writes int64 as a number: a Debezium NanoTimestamp of today is about 1.7e18).
 * Randomized texts against JSON.parse itself: the same value once the longs are settled, every long's digits
 * exact, and the same refusals.
 */
import { describe, expect, test } from 'vitest';
import { parseConnectJson, settleLongs } from '../../functions/formats/connect/types.js';
import type { JsonValue } from '../../functions/kernel/records.js';

/** A seeded generator (mulberry32): the same texts every run. */
function random(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A JSON text, and the exact digits of each integer token it holds outside strings, in order. */
function randomText(next: () => number): { text: string; integers: string[] } {
  const integers: string[] = [];
  const digits = (n: number) =>
    String(1 + Math.floor(next() * 9)) +
    Array.from({ length: n - 1 }, () => Math.floor(next() * 10)).join('');
  const value = (depth: number): string => {
    const r = next();
    if (depth < 3 && r < 0.15)
      return `[${Array.from({ length: Math.floor(next() * 4) }, () => value(depth + 1)).join(', ')}]`;
    if (depth < 3 && r < 0.35) {
      const members = Array.from({ length: Math.floor(next() * 5) }, (_, i) => {
        const key = next() < 0.3 ? `"k${digits(17)}"` : `"f${i}"`;
        return `${key}:${next() < 0.5 ? ' ' : ''}${value(depth + 1)}`;
      });
      return `{${members.join(',')}}`;
    }
    if (r < 0.6) {
      const n = `${next() < 0.3 ? '-' : ''}${digits(1 + Math.floor(next() * 22))}`;
      integers.push(n);
      return n;
    }
    if (r < 0.7) return `${digits(17)}.${digits(2)}`;
    if (r < 0.75) return `${digits(18)}e3`;
    if (r < 0.9) {
      // Strings holding digits, quotes, backslashes and escapes: never touched.
      const parts = ['123456789012345678901', '\\"', '\\\\', '\\n', '\\u00e9', ' x ', '-9'];
      return `"${Array.from({ length: Math.floor(next() * 4) }, () => parts[Math.floor(next() * parts.length)]).join('')}"`;
    }
    return ['true', 'false', 'null'][Math.floor(next() * 3)]!;
  };
  return { text: value(0), integers };
}

function longsOf(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'bigint') out.push(v.toString());
  else if (Array.isArray(v)) for (const item of v) longsOf(item, out);
  else if (v !== null && typeof v === 'object') for (const item of Object.values(v)) longsOf(item, out);
  return out;
}

describe('parseConnectJson', () => {
  test.each([
    1, 2, 3,
  ])('randomized texts (seed %i): JSON.parse’s value once settled; every long exact', (seed) => {
    const next = random(seed);
    let longs = 0;
    for (let i = 0; i < 2_000; i++) {
      const { text, integers } = randomText(next);
      const parsed = parseConnectJson(text);
      expect(settleLongs(parsed)).toEqual(JSON.parse(text));
      const expected = integers.filter((n) => !Number.isSafeInteger(Number(n)));
      expect(longsOf(parsed)).toEqual(expected);
      longs += expected.length;
    }
    expect(longs).toBeGreaterThan(300);
  });

  test('a NanoTimestamp of today and INT64’s extremes come exact', () => {
    expect(parseConnectJson('{"ts": 1733300000123456999, "min": -9223372036854775808}')).toEqual({
      ts: 1733300000123456999n,
      min: -9223372036854775808n,
    });
    expect(JSON.parse('1733300000123456999')).toBe(Number(1733300000123456999n)); // 1733300000123457024: what JSON.parse gives
    expect(parseConnectJson('[9007199254740991, 9007199254740993]')).toEqual([
      9007199254740991,
      9007199254740993n,
    ]);
  });

  test.each([
    '{12345678901234567890: 1}', // a key must be a string
    '{"a": 1, 12345678901234567890: 1}',
    '[01234567890123456789]', // no leading zero
    '[12345678901234567890x]',
    '12345678901234567890 12345678901234567890',
    '{"a": 12345678901234567890',
  ])('%s is refused as JSON.parse refuses it', (text) => {
    expect(() => JSON.parse(text)).toThrow(SyntaxError);
    expect(() => parseConnectJson(text)).toThrow(SyntaxError);
  });

  test('text holding the escape \\u0000 is parsed as JSON.parse parses it (its longs rounded)', () => {
    const text = '{"s": "\\u00001234567890123456789", "n": 12345678901234567890}';
    expect(parseConnectJson(text)).toEqual(JSON.parse(text));
  });

  test('settleLongs leaves a value without longs as it is (the same object)', () => {
    const v = { a: [1, { b: 'x' }], c: null } as JsonValue;
    expect(settleLongs(v)).toBe(v);
  });
});
