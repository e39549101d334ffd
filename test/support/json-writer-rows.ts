/**
 * The forms the official `JSONWriter` takes, no longer the drain's path (it encodes rows itself:
 * functions/encoders/row-encoder.ts): the reference the encoder's tests compare bytes against, and the bench's
 * bare official writer. A validated row (in the JSON forms insertAll takes) → the values the Storage Write
 * API's protocol buffer encoding takes, by the table schema: DATE as days since the epoch, TIMESTAMP as microseconds since the
 * epoch, BYTES as bytes, INT64 as exact decimal text (protobufjs reads it into a 64-bit integer without
 * passing through a float), NUMERIC/BIGNUMERIC/DATETIME/TIME/JSON/GEOGRAPHY as text. Exact throughout:
 * no value goes through a JavaScript number that was not one already.
 */
import type { JsonValue, Row } from '../../functions/kernel/records.js';
import type { SchemaField } from '../../functions/schema/table-schema.js';

export type StorageValue = string | number | boolean | Buffer | null | StorageValue[] | StorageRow;
export interface StorageRow {
  [column: string]: StorageValue;
}

export function toStorageRow(row: Row, fields: readonly SchemaField[]): StorageRow {
  const out: StorageRow = {};
  const byName = new Map(fields.map((f) => [f.name, f]));
  for (const [name, value] of Object.entries(row)) {
    const field = byName.get(name);
    if (field === undefined || value === null || value === undefined) continue;
    out[name] =
      field.mode === 'REPEATED'
        ? (value as JsonValue[]).map((item) => convert(item, field, name))
        : convert(value, field, name);
  }
  return out;
}

function convert(value: JsonValue, field: SchemaField, path: string): StorageValue {
  switch (field.type.toUpperCase()) {
    case 'RECORD':
    case 'STRUCT':
      return toStorageRow(value as Row, field.fields ?? []);
    case 'INTEGER':
    case 'INT64':
      return typeof value === 'number' ? value.toFixed(0) : String(value);
    case 'FLOAT':
    case 'FLOAT64':
      return typeof value === 'number' ? value : Number(value);
    case 'BOOLEAN':
    case 'BOOL':
      return value === true || value === 'true';
    case 'BYTES':
      return Buffer.from(String(value), 'base64');
    case 'DATE':
      return epochDays(String(value));
    case 'TIMESTAMP':
      return epochMicros(value, path);
    case 'DATETIME':
      // The Storage Write API's civil datetime text: a space between date and time.
      return String(value).replace('T', ' ');
    case 'JSON':
      return typeof value === 'string' ? value : JSON.stringify(value);
    default:
      // STRING, NUMERIC, BIGNUMERIC, TIME, GEOGRAPHY: text as it is.
      return typeof value === 'string' ? value : String(value);
  }
}

/** Days since 1970-01-01 of a `YYYY-MM-DD` date (proleptic Gregorian, as BigQuery). */
export function epochDays(date: string): number {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const at = new Date(0);
  at.setUTCFullYear(y, m - 1, d);
  return Math.round(at.getTime() / 86_400_000);
}

const timestampForm =
  /^(\d{4}-\d{2}-\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?| ?UTC)?$/i;

/**
 * Microseconds since the epoch, as exact decimal text, of a TIMESTAMP in any form validation accepts:
 * text with an optional zone (none means UTC), or a number of seconds (fractions kept to the microsecond).
 */
export function epochMicros(value: JsonValue, path = 'value'): string {
  if (typeof value === 'number') {
    const [whole, fraction = ''] = Math.abs(value).toFixed(6).split('.');
    const micros = BigInt(whole!) * 1_000_000n + BigInt(fraction.padEnd(6, '0').slice(0, 6));
    return (value < 0 ? -micros : micros).toString();
  }
  const m = timestampForm.exec(String(value).trim());
  if (m === null) throw new RangeError(`${path}: "${String(value)}" is not a TIMESTAMP`);
  const [, date, hh, mm, ss = '0', fraction = '', zone = 'Z'] = m;
  let seconds = BigInt(epochDays(date!)) * 86_400n + BigInt(Number(hh) * 3600 + Number(mm) * 60 + Number(ss));
  const offset = /^[+-]/.test(zone) ? zone : null;
  if (offset !== null) {
    const digits = offset.slice(1).replace(':', '');
    const minutes = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2) || '0');
    seconds -= BigInt((offset.startsWith('-') ? -1 : 1) * minutes * 60);
  }
  // Nanoseconds past the microsecond are dropped, as BigQuery truncates.
  return (seconds * 1_000_000n + BigInt(fraction.padEnd(6, '0').slice(0, 6))).toString();
}
