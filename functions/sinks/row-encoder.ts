/**
 * A validated row (in the JSON forms insertAll takes) straight to the protocol buffer bytes the Storage
 * Write API appends, by an encoder compiled once per table schema. It writes what the official
 * `JSONWriter` would (the message `adapt.convertStorageSchemaToProto2Descriptor` describes: field numbers
 * in schema order, DATE as int32 days, TIMESTAMP as int64 microseconds, INT64 as int64, NUMERIC,
 * BIGNUMERIC, DATETIME, TIME, JSON and GEOGRAPHY as text) without its deep copy
 * of every row, its conversion pass and protobufjs's reflection. Exact throughout: INT64 and TIMESTAMP
 * never pass through a float that was not one already.
 */
import protobuf from 'protobufjs';
import type { JsonValue, Row } from '../drain/types.js';
import type { SchemaField } from './table-schema.js';

type Writer = protobuf.Writer;
type Encode = (writer: Writer, value: JsonValue) => void;

const { Writer: ProtoWriter } = protobuf;
const Long = protobuf.util.Long as unknown as { fromString(text: string): protobuf.Long } | undefined;

enum Wire {
  Varint = 0,
  Fixed64 = 1,
  Delimited = 2,
}

/** Returns the row's message bytes. */
export type RowEncoder = (row: Row) => Uint8Array;

export function compileRowEncoder(fields: readonly SchemaField[]): RowEncoder {
  const message = compileMessage(fields);
  return (row) => {
    const writer = ProtoWriter.create();
    message(writer, row);
    return writer.finish();
  };
}

/** Writes a message's fields (not its length: the caller delimits nested ones). */
function compileMessage(fields: readonly SchemaField[]): (writer: Writer, row: Row) => void {
  const compiled = fields.map((field, i) => ({ name: field.name, write: compileField(field, i + 1) }));
  return (writer, row) => {
    for (const { name, write } of compiled) {
      const value = row[name];
      if (value !== null && value !== undefined) write(writer, value);
    }
  };
}

function compileField(field: SchemaField, number: number): Encode {
  const type = field.type.toUpperCase();
  if (type === 'RECORD' || type === 'STRUCT') {
    const nested = compileMessage(field.fields ?? []);
    const tag = (number << 3) | Wire.Delimited;
    const one: Encode = (writer, value) => {
      writer.uint32(tag).fork();
      nested(writer, value as Row);
      writer.ldelim();
    };
    return field.mode === 'REPEATED' ? each(one) : one;
  }
  const scalar = scalarOf(type);
  if (field.mode !== 'REPEATED') {
    const tag = (number << 3) | scalar.wire;
    return (writer, value) => scalar.write(writer.uint32(tag), value);
  }
  // Repeated values one by one, as the official writer sends them (protobufjs from the client's
  // descriptor does not pack; a proto parser takes both).
  const tag = (number << 3) | scalar.wire;
  return each((writer, value) => scalar.write(writer.uint32(tag), value));
}

function each(one: Encode): Encode {
  return (writer, value) => {
    for (const item of value as JsonValue[]) one(writer, item);
  };
}

function scalarOf(type: string): { wire: Wire; write: Encode } {
  switch (type) {
    case 'INTEGER':
    case 'INT64':
      return { wire: Wire.Varint, write: (w, v) => w.int64(int64(v)) };
    case 'FLOAT':
    case 'FLOAT64':
      return { wire: Wire.Fixed64, write: (w, v) => w.double(typeof v === 'number' ? v : Number(v)) };
    case 'BOOLEAN':
    case 'BOOL':
      return { wire: Wire.Varint, write: (w, v) => w.bool(v === true || v === 'true') };
    case 'BYTES':
      return { wire: Wire.Delimited, write: (w, v) => w.bytes(Buffer.from(String(v), 'base64')) };
    case 'DATE':
      return { wire: Wire.Varint, write: (w, v) => w.int32(daysFromCivil(String(v))) };
    case 'TIMESTAMP':
      return { wire: Wire.Varint, write: (w, v) => w.int64(int64(epochMicrosOf(v))) };
    case 'DATETIME':
      // The Storage Write API's civil datetime text: a space between date and time.
      return { wire: Wire.Delimited, write: (w, v) => w.string(String(v).replace('T', ' ')) };
    case 'JSON':
      return {
        wire: Wire.Delimited,
        write: (w, v) => w.string(typeof v === 'string' ? v : JSON.stringify(v)),
      };
    default:
      // STRING, NUMERIC, BIGNUMERIC, TIME, GEOGRAPHY: text as it is.
      return { wire: Wire.Delimited, write: (w, v) => w.string(typeof v === 'string' ? v : String(v)) };
  }
}

/** An INT64 as protobufjs writes it exactly: a safe number as it is, anything longer through Long. */
function int64(value: JsonValue | bigint): number | protobuf.Long {
  if (typeof value === 'number') return value;
  const text = typeof value === 'bigint' ? value.toString() : String(value);
  // Up to 15 digits is always a safe integer.
  if (text.length <= 15 || (text.length === 16 && text.startsWith('-'))) return Number(text);
  if (Long === undefined) throw new Error('protobufjs has no Long: INT64 values would not be exact');
  return Long.fromString(text);
}

/** Days since 1970-01-01 of `YYYY-MM-DD`, proleptic Gregorian (Howard Hinnant's days_from_civil). */
export function daysFromCivil(date: string): number {
  const y0 = Number(date.slice(0, date.length - 6));
  const m = Number(date.slice(-5, -3));
  const d = Number(date.slice(-2));
  const y = m <= 2 ? y0 - 1 : y0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

const timestampForm =
  /^(\d{4}-\d{2}-\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?| ?UTC)?$/i;

/**
 * Microseconds since the epoch of a TIMESTAMP in any form validation accepts (text with an optional
 * zone, none meaning UTC; or a number of seconds): a number while it is exactly one, else a bigint.
 */
export function epochMicrosOf(value: JsonValue): number | bigint {
  if (typeof value === 'number') {
    const [whole, fraction = ''] = Math.abs(value).toFixed(6).split('.');
    const micros = BigInt(whole!) * 1_000_000n + BigInt(fraction.padEnd(6, '0').slice(0, 6));
    return exact(value < 0 ? -micros : micros);
  }
  const m = timestampForm.exec(String(value).trim());
  if (m === null) throw new RangeError(`"${String(value)}" is not a TIMESTAMP`);
  const [, date, hh, mm, ss = '0', fraction = '', zone = 'Z'] = m;
  let seconds = daysFromCivil(date!) * 86_400 + Number(hh) * 3600 + Number(mm) * 60 + Number(ss);
  if (zone[0] === '+' || zone[0] === '-') {
    const digits = zone.slice(1).replace(':', '');
    const minutes = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2) || '0');
    seconds -= (zone[0] === '-' ? -1 : 1) * minutes * 60;
  }
  // Nanoseconds past the microsecond are dropped, as BigQuery truncates.
  const micros = Number(fraction.padEnd(6, '0').slice(0, 6));
  // Seconds within ±9e9 (years 1685–2255) keep microseconds below 2^53: exact as a number.
  if (Math.abs(seconds) < 9e9) return seconds * 1_000_000 + micros;
  return BigInt(seconds) * 1_000_000n + BigInt(micros);
}

function exact(micros: bigint): number | bigint {
  return micros >= BigInt(Number.MIN_SAFE_INTEGER) && micros <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(micros)
    : micros;
}
