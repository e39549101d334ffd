import { describe, expect, test } from 'vitest';
import { decimalLength, writeDate, writeDateTime, writeDecimal } from '../../functions/encoders/digits.js';
import { decimalOf } from '../../functions/formats/avro/types.js';
import { dateText, isoMicros } from '../../functions/formats/mapped.js';

/** Decimals, dates and timestamps written by digits give the general forms' text, byte for byte. */
const out = Buffer.alloc(64);
const decimal = (unscaled: number, scale: number) => {
  const length = decimalLength(unscaled, scale);
  const end = writeDecimal(out, 3, unscaled, scale, length);
  expect(end).toBe(3 + length);
  return out.toString('latin1', 3, end);
};
const bytesOf = (n: number, size: number) => {
  const b = Buffer.alloc(size);
  b.writeIntBE(n, 0, size);
  return b;
};
// A deterministic sequence (no Math.random: a failure must be reproducible).
let seed = 42;
const next = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
};

describe('digits: the general forms by integer arithmetic', () => {
  test("decimals of up to 6 bytes, every scale to 38, both signs, the extremes and zero: decimalOf's text", () => {
    const values = [0, 1, -1, 9, 10, -10, 99, 100, -100, 2 ** 47 - 1, -(2 ** 47), 123_456_789, -5];
    for (let i = 0; i < 2_000; i++) {
      const size = 1 + Math.floor(next() * 6);
      const limit = 2 ** (8 * size - 1);
      values.push(Math.floor(next() * 2 * limit) - limit);
    }
    for (const n of values)
      for (const scale of [0, 1, 2, 3, 6, 9, 12, 18, 38]) {
        const size = [1, 2, 3, 4, 5, 6].find((s) => n >= -(2 ** (8 * s - 1)) && n < 2 ** (8 * s - 1))!;
        expect(decimal(n, scale), `${n} scale ${scale}`).toBe(decimalOf(bytesOf(n, size), scale));
      }
    expect(decimal(-5, 2)).toBe('-0.05');
    expect(decimal(0, 3)).toBe('0.000');
  });

  test("dates of years 0000 to 9999 (each year's ends, leap days, random days): dateText's; -1 outside", () => {
    const days: number[] = [-719_528, -719_162, -1, 0, 59, 60, 365, 2_932_896, 11_016, 10_957];
    for (let year = 0; year <= 9_999; year += 1) {
      const jan1 = Date.UTC(2000, 0, 1) / 86_400_000 + (year - 2000) * 365.2425;
      days.push(Math.floor(jan1) - 1, Math.floor(jan1), Math.floor(jan1) + 59);
    }
    for (let i = 0; i < 5_000; i++) days.push(Math.floor(-719_528 + next() * (2_932_896 + 719_528)));
    for (const d of days) {
      const end = writeDate(out, 0, d);
      if (d < -719_528 || d > 2_932_896) expect(end).toBe(-1);
      else expect(out.toString('latin1', 0, end), String(d)).toBe(dateText(d));
    }
    expect(writeDate(out, 0, -719_529)).toBe(-1);
    expect(writeDate(out, 0, 2_932_897)).toBe(-1);
    expect(writeDate(out, 0, 1.5)).toBe(-1);
  });

  test("timestamps (microseconds, both sides of the epoch, each unit's edges, the safe extremes): isoMicros's text", () => {
    const micros = [
      0, -1, 1, 999, 1_000, -999_999, 86_399_999_999, 86_400_000_000, -86_400_000_000, 951_782_400_000_000,
    ];
    // Safe integers of microseconds reach years 1684 to 2255.
    micros.push(Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER);
    for (let i = 0; i < 20_000; i++) micros.push(Math.floor((next() * 2 - 1) * Number.MAX_SAFE_INTEGER));
    for (let i = 0; i < 20_000; i++) micros.push(Math.floor(next() * 4_102_444_800_000_000));
    for (const m of micros) {
      const end = writeDateTime(out, 1, m, 84);
      expect(end, String(m)).toBe(27);
      expect(out.toString('latin1', 1, end), String(m)).toBe(isoMicros(m));
    }
    expect(writeDateTime(out, 0, 1.5, 84)).toBe(-1);
    expect(writeDateTime(out, 0, 2 ** 53, 84)).toBe(-1);
    writeDateTime(out, 0, 0, 32);
    expect(out.toString('latin1', 0, 26)).toBe('1970-01-01 00:00:00.000000');
  });
});
