import { decimalText, type ExactDecimal, floatValue } from '../formats/mapped.js';
import type { JsonValue } from '../kernel/records.js';
import type { SchemaField } from '../schema/table-schema.js';
import { canonicalUtc, validDateAt, validTimeAt } from './civil-time.js';
import { geographyProblem } from './geography.js';

/**
 * A record's JSON against the table schema, the way BigQuery's JSON ingestion would judge it, so that a
 * bad value becomes a `schema` dead letter naming its path (`items[3].price`) instead of a rejected row
 * or, on some backends, a failed request. Returns the row with values in the form BigQuery ingests.
 */
export type Validation =
  | { ok: true; row: Record<string, JsonValue> }
  | { ok: false; path: string; message: string };

export type UnknownFields = 'reject' | 'ignore';

class Invalid extends Error {
  constructor(
    /** Relative to the value being checked ('' is the value itself); prefixed on the way out. */
    readonly path: string,
    message: string,
  ) {
    super(message);
  }

  /** The same failure, seen from the record that holds the value at `segment` (`name` or `name[3]`). */
  under(segment: string): Invalid {
    const path =
      this.path === ''
        ? segment
        : this.path.startsWith('[')
          ? `${segment}${this.path}`
          : `${segment}.${this.path}`;
    return new Invalid(path, this.message);
  }
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Checks a value (throwing an Invalid relative to it) and returns it in the form BigQuery ingests. */
type Check = (value: JsonValue) => JsonValue;

type Compiled = (value: Record<string, JsonValue>) => Record<string, JsonValue>;

/** Validators compiled once per schema (the table's fields array) and unknown-field rule. */
const compiled = new WeakMap<readonly SchemaField[], Map<UnknownFields, Compiled>>();

export function validateRecord(
  value: Record<string, JsonValue>,
  fields: readonly SchemaField[],
  unknownFields: UnknownFields,
): Validation {
  const byRule = compiled.get(fields) ?? new Map<UnknownFields, Compiled>();
  compiled.set(fields, byRule);
  const check = byRule.get(unknownFields) ?? compileRecord(fields, unknownFields);
  byRule.set(unknownFields, check);
  try {
    return { ok: true, row: check(value) };
  } catch (error) {
    if (error instanceof Invalid)
      return { ok: false, path: error.path, message: `${error.path}: ${error.message}` };
    throw error;
  }
}

/**
 * A record's validator, compiled: per field its name, mode and checker; paths are only spelled out when a
 * value fails (the hot path builds no strings). With UNKNOWN_FIELDS=reject the record is checked in
 * place (a value is replaced only where BigQuery's form differs, e.g. "true" → true): every key is a
 * column, so the record is the row, and no copy of it is made. With `ignore` the row is a copy holding
 * the table's columns only.
 */
function compileRecord(fields: readonly SchemaField[], unknownFields: UnknownFields): Compiled {
  const checks = fields.map((field) => ({
    name: field.name,
    mode: field.mode ?? 'NULLABLE',
    check: compileValue(field, unknownFields),
    // A name Object.prototype has ("constructor") must be the record's own to count as present.
    inherited: field.name in Object.prototype,
  }));
  const known = new Set(fields.map((f) => f.name));
  const inPlace = unknownFields === 'reject';
  return (value) => {
    const out: Record<string, JsonValue> = inPlace ? value : {};
    let present = 0;
    for (let f = 0; f < checks.length; f++) {
      const { name, mode, check, inherited } = checks[f]!;
      const v = inherited && !Object.hasOwn(value, name) ? undefined : value[name];
      if (v !== undefined) present++;
      if (mode === 'REPEATED') {
        // BigQuery stores a missing or null repeated field as empty.
        if (v === undefined || v === null) {
          if (inPlace && v === null) out[name] = [];
          continue;
        }
        if (!Array.isArray(v)) throw new Invalid(name, 'is REPEATED and must be an array');
        const items: JsonValue[] = inPlace ? v : new Array(v.length);
        for (let i = 0; i < v.length; i++) {
          const item = v[i]!;
          if (item === null) throw new Invalid(`${name}[${i}]`, 'a REPEATED field cannot hold null');
          let checked: JsonValue;
          try {
            checked = check(item);
          } catch (error) {
            throw error instanceof Invalid ? error.under(`${name}[${i}]`) : error;
          }
          if (checked !== item || !inPlace) items[i] = checked;
        }
        if (!inPlace) out[name] = items;
        continue;
      }
      if (v === undefined || v === null) {
        if (mode === 'REQUIRED')
          throw new Invalid(name, v === null ? 'is REQUIRED and is null' : 'is REQUIRED and missing');
        continue;
      }
      let checked: JsonValue;
      try {
        checked = check(v);
      } catch (error) {
        throw error instanceof Invalid ? error.under(name) : error;
      }
      if (checked !== v || !inPlace) out[name] = checked;
    }
    if (inPlace) {
      // As many keys as columns found: none unknown (only when they differ is each key looked up).
      let keys = 0;
      for (const _ in value) keys++;
      if (keys !== present) {
        for (const key in value) {
          if (!known.has(key) && Object.hasOwn(value, key))
            throw new Invalid(key, 'is not a column of the table');
        }
      }
    }
    return out;
  };
}

function compileValue(field: SchemaField, unknownFields: UnknownFields): Check {
  const type = field.type.toUpperCase();
  if (type === 'RECORD' || type === 'STRUCT') {
    const nested = compileRecord(field.fields ?? [], unknownFields);
    return (v) => {
      if (v === null || typeof v !== 'object' || Array.isArray(v))
        throw new Invalid('', `is a ${type} and must be an object`);
      return nested(v);
    };
  }
  return scalarCheck(type);
}

/** The check of one scalar type, chosen once: the common types have their own, the rest go through `scalar`. */
function scalarCheck(type: string): Check {
  switch (type) {
    case 'STRING':
      return (v) => {
        if (typeof v !== 'string') throw new Invalid('', `must be a string, not ${kindOf(v)}`);
        return v;
      };
    case 'INTEGER':
    case 'INT64':
      return (v) => int64(v, '');
    case 'FLOAT':
    case 'FLOAT64':
      return (v) => (typeof v === 'number' ? floatValue(v) : scalar(v, type, ''));
    case 'BOOLEAN':
    case 'BOOL':
      return (v) => (typeof v === 'boolean' ? v : scalar(v, type, ''));
    case 'NUMERIC':
    case 'BIGNUMERIC':
      return (v) => decimal(v, type, '');
    case 'TIMESTAMP':
      return (v) => timestamp(v, '');
    case 'DATE':
      return (v) => {
        if (typeof v !== 'string' || !validDateAt(v, 0, v.length))
          throw new Invalid('', 'must be a DATE (YYYY-MM-DD)');
        return v;
      };
    default:
      return (v) => scalar(v, type, '');
  }
}

function scalar(v: JsonValue, type: string, path: string): JsonValue {
  switch (type) {
    case 'STRING':
      if (typeof v !== 'string') throw new Invalid(path, `must be a string, not ${kindOf(v)}`);
      return v;
    case 'BYTES':
      if (typeof v !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(v) || v.length % 4 !== 0) {
        throw new Invalid(path, 'must be base64-encoded bytes');
      }
      return v;
    case 'INTEGER':
    case 'INT64':
      return int64(v, path);
    case 'FLOAT':
    case 'FLOAT64':
      if (typeof v === 'number') return floatValue(v);
      if (v === 'NaN' || v === 'Infinity' || v === '-Infinity') return v;
      throw new Invalid(path, `must be a number, not ${kindOf(v)}`);
    case 'NUMERIC':
    case 'BIGNUMERIC':
      return decimal(v, type, path);
    case 'BOOLEAN':
    case 'BOOL':
      if (typeof v === 'boolean') return v;
      if (v === 'true' || v === 'false') return v === 'true';
      throw new Invalid(path, `must be true or false, not ${kindOf(v)}`);
    case 'TIMESTAMP':
      return timestamp(v, path);
    case 'DATE':
      if (typeof v !== 'string' || !validDate(v)) throw new Invalid(path, 'must be a DATE (YYYY-MM-DD)');
      return v;
    case 'TIME':
      if (typeof v !== 'string' || !validTime(v))
        throw new Invalid(path, 'must be a TIME (HH:MM:SS[.ffffff])');
      return v;
    case 'DATETIME': {
      const m = typeof v === 'string' ? /^(\d{4}-\d{2}-\d{2})[T ](.+)$/.exec(v) : null;
      if (m === null || !validDate(m[1]!) || !validTime(m[2]!)) {
        throw new Invalid(path, 'must be a DATETIME (YYYY-MM-DD[T ]HH:MM:SS[.ffffff])');
      }
      return v;
    }
    case 'JSON':
      // BigQuery ingests a JSON column as JSON text; text that does not parse is refused.
      if (typeof v !== 'string') return JSON.stringify(v);
      try {
        JSON.parse(v);
      } catch {
        throw new Invalid(path, 'is JSON text that does not parse');
      }
      return v;
    case 'GEOGRAPHY': {
      if (typeof v !== 'string' || v.trim() === '')
        throw new Invalid(path, 'must be a GEOGRAPHY as WKT or GeoJSON text');
      const problem = geographyProblem(v);
      if (problem !== undefined) throw new Invalid(path, `is not a GEOGRAPHY BigQuery takes: ${problem}`);
      return v;
    }
    default:
      throw new Invalid(path, `has the type ${type}, which this drain does not validate`);
  }
}

/** An INT64: a safe integer or exact decimal text (exponent forms too), within the 64-bit range. */
function int64(v: JsonValue, path: string): JsonValue {
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

function decimal(v: JsonValue, type: string, path: string): string {
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

function timestamp(v: JsonValue, path: string): JsonValue {
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

function validDate(text: string): boolean {
  return validDateAt(text, 0, text.length);
}

function validTime(text: string): boolean {
  return validTimeAt(text, 0, text.length);
}

function kindOf(v: JsonValue): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return `the string "${v.length > 30 ? `${v.slice(0, 30)}...` : v}"`;
  return `${typeof v} ${String(v)}`;
}
