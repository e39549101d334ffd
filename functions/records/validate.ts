import { validDateAt } from '../encoders/civil-time.js';
import type { UnknownFields } from '../encoders/row-shape.js';
import { floatValue } from '../formats/mapped.js';
import type { JsonValue } from '../kernel/records.js';
import type { SchemaField } from '../schema/table-schema.js';
import { geographyProblem } from './geography.js';
import { Invalid, kindOf } from './invalid.js';
import { decimal, int64, timestamp, validDate, validTime } from './scalar-values.js';

/**
 * A record's JSON against the table schema, the way BigQuery's JSON ingestion would judge it, so that a
 * bad value becomes a `schema` dead letter naming its path (`items[3].price`) instead of a rejected row
 * or, on some backends, a failed request. Returns the row with values in the form BigQuery ingests.
 */
export type Validation =
  | { ok: true; row: Record<string, JsonValue> }
  | { ok: false; path: string; message: string };

export type { UnknownFields };

/** The JSON column that holds, with UNKNOWN_FIELDS=json, a record's fields the table lacks. */
export const extraColumn = '_extra';

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
  const keepExtra = unknownFields === 'json' && known.has(extraColumn);
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
    if (keepExtra) keepUnknown(value, known, out);
    return out;
  };
}

/** UNKNOWN_FIELDS=json: the record's fields the table lacks, whole, as the JSON text of `_extra`. */
function keepUnknown(
  value: Record<string, JsonValue>,
  known: ReadonlySet<string>,
  out: Record<string, JsonValue>,
): void {
  let extra: Record<string, JsonValue> | undefined;
  for (const key in value) {
    if (known.has(key) || !Object.hasOwn(value, key)) continue;
    extra ??= {};
    extra[key] = value[key]!;
  }
  if (extra === undefined) return;
  if (out[extraColumn] !== undefined && out[extraColumn] !== null)
    throw new Invalid(extraColumn, 'is set by the record, and the fields the table lacks would go there too');
  out[extraColumn] = JSON.stringify(extra);
}

function compileValue(field: SchemaField, unknownFields: UnknownFields): Check {
  const type = field.type.toUpperCase();
  if (type === 'RECORD' || type === 'STRUCT') {
    // Only a record's top-level fields go to `_extra`: inside a RECORD column the table's fields are all.
    const nested = compileRecord(field.fields ?? [], unknownFields === 'json' ? 'reject' : unknownFields);
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
