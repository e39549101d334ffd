/** The scalar values that take more than a type check: INT64, NUMERIC and BIGNUMERIC exactly, TIMESTAMP. */

import { canonicalUtc, validDateAt, validTimeAt } from '../encoders/civil-time.js';
import { decimalText, type ExactDecimal } from '../formats/mapped.js';
import type { JsonValue } from '../kernel/records.js';
import { Invalid, kindOf } from './invalid.js';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** An INT64: a safe integer or exact decimal text (exponent forms too), within the 64-bit range. */
export function int64(v: JsonValue, path: string): JsonValue {
  // The common forms first: a safe integer, or up to 18 digits of text (always within INT64).
  if (Number.isSafeInteger(v)) return v;
  if (typeof v === 'string' && shortInteger.test(v)) return v;
  let n: bigint;
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw new Invalid(path, `must be a whole number, not ${v}`);
    if (v < -(2 ** 63) || v >= 2 ** 63) throw new Invalid(path, `${v} is outside the INT64 range`);
    if (!Number.isSafeInteger(v))
      throw new Invalid(path, `${v} is beyond 2^53: send integers this large as strings`);
    n = BigInt(v);
  } else if (typeof v === 'string' && /^[-+]?\d+$/.test(v.trim())) {
    n = BigInt(v.trim());
  } else if (typeof v === 'string' && decimalPattern.test(v.trim())) {
    // An exponent form ("1.5e3"): exact, never through a float.
    const d = exactDecimal(v.trim());
    if (d === undefined || d.scale > 0) throw new Invalid(path, `${v} is not a whole number`);
    n = d.unscaled * 10n ** BigInt(-d.scale);
  } else {
    throw new Invalid(path, `must be an INT64, not ${kindOf(v)}`);
  }
  if (n < INT64_MIN || n > INT64_MAX) throw new Invalid(path, `${v} is outside the INT64 range`);
  return typeof v === 'number' ? v : n.toString();
}

const decimalPattern = /^[-+]?(\d*)(?:\.(\d*))?(?:[eE]([-+]?\d+))?$/;
/** Whole numbers of at most 18 digits without a sign or zeros to normalise: they go through as they are. */
const shortInteger = /^(?:0|-?[1-9]\d{0,17})$/;
/** Plain decimal text that fits NUMERIC whatever its leading zeros (29 integer digits, 9 decimals). */
const plainNumeric = /^-?\d{1,29}(?:\.\d{1,9})?$/;
const plainBigNumeric = /^-?\d{1,38}(?:\.\d{1,38})?$/;

/**
 * Reads decimal text exactly, exponent forms included ("1.5e3" is 15 × 10^2). Undefined when it is not
 * decimal text, or when the exponent is so large that no BigQuery type could hold the value anyway.
 */
function exactDecimal(text: string): ExactDecimal | undefined {
  const m = decimalPattern.exec(text);
  if (m === null || (m[1] === '' && (m[2] ?? '') === '')) return undefined;
  const exponent = Number(m[3] ?? '0');
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > 10_000) return undefined;
  let digits = `${m[1]}${m[2] ?? ''}`.replace(/^0+/, '');
  let scale = (m[2] ?? '').length - exponent;
  if (digits === '') return { unscaled: 0n, scale: 0 };
  const trailing = digits.length - digits.replace(/0+$/, '').length;
  digits = digits.slice(0, digits.length - trailing);
  scale -= trailing;
  const unscaled = BigInt(digits) * (text.startsWith('-') ? -1n : 1n);
  return { unscaled, scale };
}

export function decimal(v: JsonValue, type: string, path: string): string {
  // The common form first: plain decimal text within the type's digits goes through as it is.
  if (typeof v === 'string' && (type === 'NUMERIC' ? plainNumeric : plainBigNumeric).test(v)) return v;
  const text =
    typeof v === 'number' ? (Number.isFinite(v) ? String(v) : '') : typeof v === 'string' ? v.trim() : '';
  const exact = text === '' ? undefined : exactDecimal(text);
  if (exact === undefined) throw new Invalid(path, `must be a ${type}, not ${kindOf(v)}`);
  const [maxInteger, maxScale] = type === 'NUMERIC' ? [29, 9] : [38, 38];
  const magnitude = (exact.unscaled < 0n ? -exact.unscaled : exact.unscaled).toString();
  const integerDigits = exact.unscaled === 0n ? 0 : magnitude.length - exact.scale;
  if (integerDigits > maxInteger)
    throw new Invalid(path, `${text} has more than ${maxInteger} integer digits for ${type}`);
  if (exact.scale > maxScale)
    throw new Invalid(path, `${text} has more than ${maxScale} decimal places for ${type}`);
  // Plain text only where the record used an exponent; otherwise the record's own text goes through.
  return /[eE]/.test(text) ? decimalText(exact) : text;
}

export function timestamp(v: JsonValue, path: string): JsonValue {
  if (typeof v === 'number') {
    // Seconds since the epoch, as BigQuery reads a number for a TIMESTAMP.
    if (!Number.isFinite(v) || Math.abs(v) > 253_402_300_799)
      throw new Invalid(path, `${v} is not a TIMESTAMP in range`);
    return v;
  }
  if (typeof v !== 'string') throw new Invalid(path, `must be a TIMESTAMP, not ${kindOf(v)}`);
  if (canonicalUtc(v)) return v;
  const m =
    /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(Z|[+-]\d{2}(?::?\d{2})?| ?UTC)?$/i.exec(
      v.trim(),
    );
  if (m === null || !validDate(m[1]!) || !validTime(m[2]!.length === 5 ? `${m[2]}:00` : m[2]!)) {
    throw new Invalid(path, `"${v.slice(0, 40)}" is not a TIMESTAMP (YYYY-MM-DD[T ]HH:MM:SS[.ffffff][zone])`);
  }
  // A UTC offset of more than 14 hours (the widest in use) or 59 minutes is no time zone.
  const offset = /^[+-](\d{2}):?(\d{2})?$/.exec(m[3] ?? '');
  if (offset !== null && (Number(offset[1]) > 14 || Number(offset[2] ?? 0) > 59)) {
    throw new Invalid(path, `"${v.slice(0, 40)}" has a UTC offset out of range (at most ±14:59)`);
  }
  return v;
}

export function validDate(text: string): boolean {
  return validDateAt(text, 0, text.length);
}

export function validTime(text: string): boolean {
  return validTimeAt(text, 0, text.length);
}
