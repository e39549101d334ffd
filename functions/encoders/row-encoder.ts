/**
 * A validated row (in the JSON forms insertAll takes) straight to the protocol buffer bytes the Storage
 * Write API appends, by an encoder compiled once per table schema. It writes what the official
 * `JSONWriter` would (the message `adapt.convertStorageSchemaToProto2Descriptor` describes: field numbers
 * in schema order, DATE as int32 days, TIMESTAMP as int64 microseconds, INT64 as int64, NUMERIC,
 * BIGNUMERIC, DATETIME, TIME, JSON and GEOGRAPHY as text) without its deep copy of every row, its
 * conversion pass, protobufjs's reflection and its writer's operation per field (proto-writer.ts). Exact throughout: INT64 and TIMESTAMP
 * never pass through a float that was not one already.
 */
import type { JsonValue, Row } from '../kernel/records.js';
import type { SchemaField } from '../schema/table-schema.js';
import { daysFromCivilParts, digitsAt } from './civil-time.js';
import { ProtoWriter } from './proto-writer.js';

type Encode = (writer: ProtoWriter, value: JsonValue) => void;

enum Wire {
  Varint = 0,
  Fixed64 = 1,
  Delimited = 2,
}

/**
 * A row's message bytes; `many` encodes a whole append's rows into one buffer (each row a view of it), and
 * `batch` does the same a row at a time.
 */
export interface RowEncoder {
  (row: Row): Uint8Array;
  many(rows: readonly Row[]): Uint8Array[];
  batch(): RowBatch;
}

/** Rows encoded one after another into one buffer. */
export interface RowBatch {
  add(row: Row): void;
  /**
   * A row written by `write(writer, a, b)`, kept when it returns true (and forgotten, nothing written, when
   * false). Its arguments are passed, not captured: no closure a row.
   */
  addWith<A, B>(write: (writer: ProtoWriter, a: A, b: B) => boolean, a: A, b: B): boolean;
  /** Each row's bytes, in order: views of the one buffer. */
  finish(): Uint8Array[];
}

/** One row at a time (tests, the odd dead letter): one writer, its bytes copied out. */
const shared = new ProtoWriter();

/** How much of a batch's rows one buffer holds. */
const chunkBytes = 64 * 1024;

/**
 * A batch's rows in chunks of about `chunkBytes`: a buffer of a whole batch (megabytes, outside the heap)
 * would be copied as it grows, and pressures the garbage collector for as long as the batch waits. A
 * class, not closures made per batch: one shape and one compiled code for every batch of the run.
 */
class ChunkedRows implements RowBatch {
  private readonly views: Uint8Array[] = [];
  private writer = new ProtoWriter(chunkBytes + chunkBytes / 4);
  private start = 0;

  constructor(private readonly message: (writer: ProtoWriter, row: Row) => void) {}

  add(row: Row): void {
    this.message(this.writer, row);
    this.kept();
  }

  addWith<A, B>(write: (writer: ProtoWriter, a: A, b: B) => boolean, a: A, b: B): boolean {
    if (!write(this.writer, a, b)) {
      this.writer.position = this.start;
      return false;
    }
    this.kept();
    return true;
  }

  finish(): Uint8Array[] {
    return this.views;
  }

  private kept(): void {
    const writer = this.writer;
    this.views.push(writer.buffer.subarray(this.start, writer.position));
    this.start = writer.position;
    if (this.start >= chunkBytes) {
      this.writer = new ProtoWriter(chunkBytes + chunkBytes / 4);
      this.start = 0;
    }
  }
}

export function compileRowEncoder(fields: readonly SchemaField[]): RowEncoder {
  const message = compileMessage(fields);
  const batch = (): RowBatch => new ChunkedRows(message);
  const many = (rows: readonly Row[]): Uint8Array[] => {
    const encoding = batch();
    for (const row of rows) encoding.add(row);
    return encoding.finish();
  };
  const one = (row: Row): Uint8Array => {
    shared.position = 0;
    message(shared, row);
    return Uint8Array.prototype.slice.call(shared.buffer, 0, shared.position);
  };
  return Object.assign(one, { many, batch });
}

/** Writes a message's fields (not its length: the caller delimits nested ones). */
function compileMessage(fields: readonly SchemaField[]): (writer: ProtoWriter, row: Row) => void {
  const writes = fields.map((field, i) => compileField(field, i + 1));
  // Generated, as protobufjs generates its encoders: each column read by its own name (JSON-quoted, so
  // any name is a string literal) and written by its own call, both of which V8 then caches per column; a
  // loop over the fields looks every name up by key and calls every writer through one call site. About a
  // quarter of the encoding's CPU on the bench's wide rows.
  const body = fields
    .map((f, i) => `v = row[${JSON.stringify(f.name)}]; if (v !== null && v !== undefined) w${i}(writer, v);`)
    .join('\n');
  const make = new Function(
    ...writes.map((_, i) => `w${i}`),
    `return function message(writer, row) { let v; ${body} };`,
  ) as (...writes: Encode[]) => (writer: ProtoWriter, row: Row) => void;
  return make(...writes);
}

function compileField(field: SchemaField, number: number): Encode {
  const type = field.type.toUpperCase();
  if (type === 'RECORD' || type === 'STRUCT') {
    const nested = compileMessage(field.fields ?? []);
    const tag = (number << 3) | Wire.Delimited;
    const one: Encode = (writer, value) => {
      writer.varint(tag);
      const start = writer.begin();
      nested(writer, value as Row);
      writer.end(start);
    };
    return field.mode === 'REPEATED' ? each(one) : one;
  }
  const scalar = scalarOf(type);
  const tag = (number << 3) | scalar.wire;
  const one: Encode = (writer, value) => {
    writer.varint(tag);
    scalar.write(writer, value);
  };
  // Repeated values one by one, as the official writer sends them (protobufjs from the client's
  // descriptor does not pack; a proto parser takes both).
  return field.mode === 'REPEATED' ? each(one) : one;
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
      return { wire: Wire.Varint, write: (w, v) => int64(w, v) };
    case 'FLOAT':
    case 'FLOAT64':
      return { wire: Wire.Fixed64, write: (w, v) => w.double(typeof v === 'number' ? v : Number(v)) };
    case 'BOOLEAN':
    case 'BOOL':
      return { wire: Wire.Varint, write: (w, v) => w.varint(v === true || v === 'true' ? 1 : 0) };
    case 'BYTES':
      return { wire: Wire.Delimited, write: (w, v) => w.bytes(Buffer.from(String(v), 'base64')) };
    case 'DATE':
      return { wire: Wire.Varint, write: (w, v) => w.integer(daysFromCivil(String(v))) };
    case 'TIMESTAMP':
      return {
        wire: Wire.Varint,
        write: (w, v) => {
          const micros = epochMicrosOf(v);
          if (typeof micros === 'number') w.integer(micros);
          else w.bigVarint(micros);
        },
      };
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

/** An INT64, exactly: a safe number as it is, decimal text of up to 15 digits as a number, longer as a bigint. */
function int64(writer: ProtoWriter, value: JsonValue): void {
  if (typeof value === 'number') {
    writer.integer(value);
    return;
  }
  const text = String(value);
  if (text.length <= 15 || (text.length === 16 && text[0] === '-')) writer.integer(Number(text));
  else writer.bigVarint(BigInt(text));
}

/** Days since 1970-01-01 of `YYYY-MM-DD`, proleptic Gregorian (Howard Hinnant's days_from_civil). */
export function daysFromCivil(date: string): number {
  return daysFromCivilParts(
    Number(date.slice(0, date.length - 6)),
    Number(date.slice(-5, -3)),
    Number(date.slice(-2)),
  );
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
  // The form JavaScript writes (toISOString, as the metadata columns are): parsed natively, exact while
  // the microseconds stay below 2^53.
  if (typeof value === 'string') {
    const micros = canonicalMicros(value);
    if (micros !== undefined) return micros;
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

/**
 * `YYYY-MM-DDTHH:MM:SS[.fff|.ffffff]Z` (toISOString's form, the metadata columns' and most producers'),
 * read digit by digit: microseconds since the epoch, or undefined for any other form (validation has
 * already judged the value; the general path reads the rest).
 */
function canonicalMicros(v: string): number | undefined {
  const n = v.length;
  if ((n !== 20 && n !== 24 && n !== 27) || v.charCodeAt(n - 1) !== 90 /* Z */) return undefined;
  if (v.charCodeAt(4) !== 45 || v.charCodeAt(7) !== 45 || v.charCodeAt(10) !== 84) return undefined;
  if (v.charCodeAt(13) !== 58 || v.charCodeAt(16) !== 58) return undefined;
  const y = digitsAt(v, 0, 4);
  const mo = digitsAt(v, 5, 2);
  const d = digitsAt(v, 8, 2);
  const h = digitsAt(v, 11, 2);
  const mi = digitsAt(v, 14, 2);
  const s = digitsAt(v, 17, 2);
  let fraction = 0;
  if (n > 20) {
    if (v.charCodeAt(19) !== 46) return undefined;
    fraction = digitsAt(v, 20, n - 21);
    if (fraction < 0) return undefined;
    if (n === 24) fraction *= 1000;
  }
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || mi < 0 || s < 0) return undefined;
  const seconds = daysFromCivilParts(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s;
  // Seconds within ±9e9 (years 1685–2255) keep microseconds below 2^53: exact as a number.
  return Math.abs(seconds) < 9e9 ? seconds * 1_000_000 + fraction : undefined;
}

function exact(micros: bigint): number | bigint {
  return micros >= BigInt(Number.MIN_SAFE_INTEGER) && micros <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(micros)
    : micros;
}
