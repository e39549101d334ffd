/**
 * Decimals, dates and timestamps written as their text's ASCII bytes straight into a buffer, in integer
 * arithmetic (#42): no string made, no `Date`, no regular expression. Each gives exactly the text the
 * general path's forms give (`decimalOf`, `dateText`, `isoMicros`; test/unit/digits.test.ts compares them),
 * and says -1 where it does not apply, for the caller to take the general form.
 */

/** An unscaled decimal of up to 6 bytes (a safe integer) with `scale` ≤ 38: its text's length. */
export function decimalLength(unscaled: number, scale: number): number {
  const digits = Math.max(digitCount(Math.abs(unscaled)), scale + 1);
  return (unscaled < 0 ? 1 : 0) + digits + (scale > 0 ? 1 : 0);
}

/**
 * The text of `unscaled` × 10^-scale (`-`, the digits, a point before the last `scale` of them, zeros
 * padded so that one stands before it) at `at`, `length` bytes (decimalLength's); the position after it.
 */
export function writeDecimal(
  out: Uint8Array,
  at: number,
  unscaled: number,
  scale: number,
  length: number,
): number {
  const end = at + length;
  let p = end;
  let x = Math.abs(unscaled);
  let left = scale;
  // Digits from the last: in doubles while above 32 bits, then in small integers.
  for (; x > 0x7fffffff; left--) {
    if (left === 0 && scale > 0) out[--p] = 46;
    const rest = Math.floor(x / 10);
    out[--p] = 48 + x - rest * 10;
    x = rest;
  }
  // The fraction's digits, the point, then at least one digit before it.
  for (; left >= 0 || x > 0; left--) {
    if (left === 0 && scale > 0) out[--p] = 46;
    const rest = (x / 10) | 0;
    out[--p] = 48 + x - rest * 10;
    x = rest;
  }
  if (unscaled < 0) out[--p] = 45;
  return end;
}

function digitCount(n: number): number {
  let digits = 1;
  let x = n;
  for (; x > 0x7fffffff; x = Math.floor(x / 10)) digits++;
  for (; x >= 10; x = (x / 10) | 0) digits++;
  return digits;
}

const dayMicros = 86_400_000_000;
/** 0000-01-01 to 9999-12-31: the days whose years have four digits (the general forms' fast case). */
const firstDay = -719_528;
const lastDay = 2_932_896;

/** `YYYY-MM-DD` of days since 1970-01-01 at `at` (10 bytes), or -1 outside years 0000-9999. */
export function writeDate(out: Uint8Array, at: number, days: number): number {
  if (!Number.isInteger(days) || days < firstDay || days > lastDay) return -1;
  // Howard Hinnant's civil_from_days: eras of 400 years, years from March; small integers throughout.
  const z = days + 719_468;
  const era = z >= 0 ? (z / 146_097) | 0 : -1;
  const doe = z - era * 146_097;
  const yoe = ((doe - ((doe / 1_460) | 0) + ((doe / 36_524) | 0) - ((doe / 146_096) | 0)) / 365) | 0;
  const doy = doe - (365 * yoe + ((yoe / 4) | 0) - ((yoe / 100) | 0));
  const mp = ((5 * doy + 2) / 153) | 0;
  const day = doy - (((153 * mp + 2) / 5) | 0) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  four(out, at, year);
  out[at + 4] = 45;
  two(out, at + 5, month);
  out[at + 7] = 45;
  two(out, at + 8, day);
  return at + 10;
}

/**
 * `YYYY-MM-DD`, `separator` (`T`, or a space for the Storage Write API's DATETIME), `HH:MM:SS.ffffff` of
 * microseconds since the epoch (a safe integer) at `at` (26 bytes), or -1 outside years 0000-9999.
 */
export function writeDateTime(out: Uint8Array, at: number, micros: number, separator: number): number {
  if (!Number.isSafeInteger(micros)) return -1;
  const days = Math.floor(micros / dayMicros);
  if (writeDate(out, at, days) < 0) return -1;
  // Within the day: seconds (below 86,400) and microseconds (below 10^6), each a small integer.
  const rest = micros - days * dayMicros;
  const second = Math.floor(rest / 1_000_000);
  const fraction = rest - second * 1_000_000;
  const minute = (second / 60) | 0;
  out[at + 10] = separator;
  two(out, at + 11, (minute / 60) | 0);
  out[at + 13] = 58;
  two(out, at + 14, minute % 60);
  out[at + 16] = 58;
  two(out, at + 17, second % 60);
  out[at + 19] = 46;
  const high = (fraction / 1000) | 0;
  three(out, at + 20, high);
  three(out, at + 23, fraction - high * 1000);
  return at + 26;
}

function two(out: Uint8Array, at: number, n: number): void {
  const tens = (n / 10) | 0;
  out[at] = 48 + tens;
  out[at + 1] = 48 + n - tens * 10;
}

function three(out: Uint8Array, at: number, n: number): void {
  const hundreds = (n / 100) | 0;
  out[at] = 48 + hundreds;
  two(out, at + 1, n - hundreds * 100);
}

function four(out: Uint8Array, at: number, n: number): void {
  const high = (n / 100) | 0;
  two(out, at, high);
  two(out, at + 2, n - high * 100);
}
