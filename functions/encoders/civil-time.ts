/**
 * BigQuery's civil date and time text, checked character by character (no regex, no allocation): the
 * validator's DATE, TIME and canonical TIMESTAMP checks, and the encoder's reading of canonical
 * timestamps. Years 1–9999 of the proleptic Gregorian calendar.
 */

/** `YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z` (as JavaScript and most producers write it): checked without a regex. */
export function canonicalUtc(v: string): boolean {
  const n = v.length;
  const t = v.charCodeAt(10);
  return (
    n >= 20 &&
    v.charCodeAt(n - 1) === 90 /* Z */ &&
    (t === 84 /* T */ || t === 32) &&
    validDateAt(v, 0, 10) &&
    validTimeAt(v, 11, n - 1)
  );
}

/** The digits of text[at, at + length) as a number, or -1 when one is not an ASCII digit. */
export function digitsAt(text: string, at: number, length: number): number {
  let n = 0;
  for (let i = at; i < at + length; i++) {
    const c = text.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    n = n * 10 + c;
  }
  return n;
}

const monthDays = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** text[at, end) is `YYYY-MM-DD`, a day of the proleptic Gregorian calendar from year 1. */
export function validDateAt(text: string, at: number, end: number): boolean {
  if (end - at !== 10 || text.charCodeAt(at + 4) !== 45 || text.charCodeAt(at + 7) !== 45) return false;
  const y = digitsAt(text, at, 4);
  const mo = digitsAt(text, at + 5, 2);
  const d = digitsAt(text, at + 8, 2);
  if (y < 1 || mo < 1 || mo > 12 || d < 1) return false;
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  return d <= (mo === 2 && leap ? 29 : monthDays[mo - 1]!);
}

/** text[at, end) is `HH:MM:SS[.f{1,9}]` within the day. */
export function validTimeAt(text: string, at: number, end: number): boolean {
  const length = end - at;
  if (length < 8 || length === 9 || length > 18) return false;
  if (text.charCodeAt(at + 2) !== 58 || text.charCodeAt(at + 5) !== 58) return false;
  const h = digitsAt(text, at, 2);
  const m = digitsAt(text, at + 3, 2);
  const sec = digitsAt(text, at + 6, 2);
  if (h < 0 || h > 23 || m < 0 || m > 59 || sec < 0 || sec > 59) return false;
  if (length === 8) return true;
  if (text.charCodeAt(at + 8) !== 46) return false;
  for (let i = at + 9; i < end; i++) {
    const c = text.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return false;
  }
  return true;
}

/** Days since 1970-01-01 of a day of the proleptic Gregorian calendar (Howard Hinnant's days_from_civil). */
export function daysFromCivilParts(y0: number, m: number, d: number): number {
  const y = m <= 2 ? y0 - 1 : y0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

/*
 * The same checks on a record's bytes, for the one-pass JSON path: no text made of them. Each accepts
 * exactly what its text form above accepts, and gives the number the encoder makes of that text.
 */

/*
 * Fixed-width digit runs read without a loop: the timestamp reader inlines seven of them, and straight
 * code is less for TurboFan to compile than loops (its time counts against a short drain; one traced run:
 * canonicalMicrosIn 30 ms of compiling with loops, 12 without).
 */

/** The two digits at bytes[at], or -1 when either is not an ASCII digit. */
function twoDigitsIn(b: Uint8Array, at: number): number {
  const x = b[at]! - 48;
  const y = b[at + 1]! - 48;
  return x >= 0 && x <= 9 && y >= 0 && y <= 9 ? x * 10 + y : -1;
}

/** The four digits at bytes[at], or -1 when one is not an ASCII digit. */
function fourDigitsIn(b: Uint8Array, at: number): number {
  const high = twoDigitsIn(b, at);
  const low = twoDigitsIn(b, at + 2);
  return high >= 0 && low >= 0 ? high * 100 + low : -1;
}

/** bytes[at, end) as `validDateAt` reads it: the day's number since 1970-01-01, or NaN. */
export function dateDaysIn(b: Uint8Array, at: number, end: number): number {
  if (end - at !== 10 || b[at + 4] !== 45 || b[at + 7] !== 45) return Number.NaN;
  const y = fourDigitsIn(b, at);
  const mo = twoDigitsIn(b, at + 5);
  const d = twoDigitsIn(b, at + 8);
  if (y < 1 || mo < 1 || mo > 12 || d < 1) return Number.NaN;
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  if (d > (mo === 2 && leap ? 29 : monthDays[mo - 1]!)) return Number.NaN;
  return daysFromCivilParts(y, mo, d);
}

/** Microseconds of each of a fraction's first six digits (BigQuery truncates the nanoseconds). */
const fractionMicros = [100_000, 10_000, 1000, 100, 10, 1];

/**
 * bytes[at, end) as `canonicalUtc` reads it: its microseconds since the epoch while they are exact as
 * a number (seconds within ±9e9, years 1685–2255), or NaN (not canonical, or out of that reach).
 */
export function canonicalMicrosIn(b: Uint8Array, at: number, end: number): number {
  const t = b[at + 10];
  if (end - at < 20 || b[end - 1] !== 90 /* Z */ || (t !== 84 /* T */ && t !== 32)) return Number.NaN;
  const days = dateDaysIn(b, at, at + 10);
  // HH:MM:SS[.f{1,9}] between the separator and the Z, as validTimeAt reads it.
  const length = end - 1 - (at + 11);
  if (Number.isNaN(days) || length === 9 || length > 18) return Number.NaN;
  if (b[at + 13] !== 58 || b[at + 16] !== 58) return Number.NaN;
  const h = twoDigitsIn(b, at + 11);
  const m = twoDigitsIn(b, at + 14);
  const s = twoDigitsIn(b, at + 17);
  if (h < 0 || h > 23 || m < 0 || m > 59 || s < 0 || s > 59) return Number.NaN;
  let micros = 0;
  if (length > 8) {
    if (b[at + 19] !== 46) return Number.NaN;
    for (let i = at + 20; i < end - 1; i++) {
      const c = b[i]! - 48;
      if (c < 0 || c > 9) return Number.NaN;
      if (i - at - 20 < 6) micros += c * fractionMicros[i - at - 20]!;
    }
  }
  const seconds = days * 86_400 + h * 3600 + m * 60 + s;
  return Math.abs(seconds) < 9e9 ? seconds * 1_000_000 + micros : Number.NaN;
}
