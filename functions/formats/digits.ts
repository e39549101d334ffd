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
  for (let i = 0; i < scale; i++) {
    const digit = x % 10;
    out[--p] = 48 + digit;
    x = (x - digit) / 10;
  }
  if (scale > 0) out[--p] = 46;
  do {
    const digit = x % 10;
    out[--p] = 48 + digit;
    x = (x - digit) / 10;
  } while (x > 0);
  if (unscaled < 0) out[--p] = 45;
  return end;
}

function digitCount(n: number): number {
  let digits = 1;
  for (let x = n; x >= 10; x = Math.floor(x / 10)) digits++;
  return digits;
}

const dayMicros = 86_400_000_000;
/** 0000-01-01 to 9999-12-31: the days whose years have four digits (the general forms' fast case). */
const firstDay = -719_528;
const lastDay = 2_932_896;

/** `YYYY-MM-DD` of days since 1970-01-01 at `at` (10 bytes), or -1 outside years 0000-9999. */
export function writeDate(out: Uint8Array, at: number, days: number): number {
  if (!Number.isInteger(days) || days < firstDay || days > lastDay) return -1;
  // Howard Hinnant's days_from_civil, inverted: eras of 400 years, years from March.
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1_460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  fixed(out, at, year, 4);
  out[at + 4] = 45;
  fixed(out, at + 5, month, 2);
  out[at + 7] = 45;
  fixed(out, at + 8, day, 2);
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
  let rest = micros - days * dayMicros;
  const fraction = rest % 1_000_000;
  rest = (rest - fraction) / 1_000_000;
  const seconds = rest % 60;
  rest = (rest - seconds) / 60;
  const minutes = rest % 60;
  out[at + 10] = separator;
  fixed(out, at + 11, (rest - minutes) / 60, 2);
  out[at + 13] = 58;
  fixed(out, at + 14, minutes, 2);
  out[at + 16] = 58;
  fixed(out, at + 17, seconds, 2);
  out[at + 19] = 46;
  fixed(out, at + 20, fraction, 6);
  return at + 26;
}

/** A non-negative integer's last `width` digits, zeros first. */
function fixed(out: Uint8Array, at: number, n: number, width: number): void {
  let x = n;
  for (let p = at + width - 1; p >= at; p--) {
    const digit = x % 10;
    out[p] = 48 + digit;
    x = (x - digit) / 10;
  }
}
