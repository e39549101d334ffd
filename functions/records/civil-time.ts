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
