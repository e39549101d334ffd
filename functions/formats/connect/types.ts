/**
 * Kafka Connect's values in the forms BigQuery ingests: with a schema (the JSON converter's wrapper, or a
 * registry format's logical types), each field's logical type (`io.debezium.time.*`, Kafka Connect's
 * `Decimal`, `VariableScaleDecimal`, ...) turns its value into exact decimal text, dates, times and
 * timestamps as text.
 */
import type { JsonValue } from '../../kernel/records.js';
import { dateText, microsText, scaledText, timeOfDayText } from '../mapped.js';

/** A Kafka Connect schema, as the JSON converter's wrapper carries it. */
export interface ConnectSchema {
  readonly type: string;
  readonly name?: string;
  readonly field?: string;
  readonly optional?: boolean;
  readonly parameters?: Record<string, string>;
  readonly fields?: readonly ConnectSchema[];
  readonly items?: ConnectSchema;
}

/** A struct's fields, each by its own schema (a Debezium envelope's `before` and `after`). */
export function convertStruct(value: Record<string, JsonValue>, schema: ConnectSchema): JsonValue {
  if (schema.name === 'io.debezium.data.VariableScaleDecimal') return variableScaleDecimal(value);
  const out: Record<string, JsonValue> = {};
  const fields = new Map((schema.fields ?? []).map((f) => [f.field, f]));
  for (const [name, v] of Object.entries(value)) {
    const f = fields.get(name);
    out[name] = f === undefined ? settleLongs(v) : convertValue(v, f);
  }
  return out;
}

/** One value by its Kafka Connect schema: logical types to BigQuery's forms, structs and arrays inside. */
export function convertValue(v: JsonValue, schema: ConnectSchema): JsonValue {
  if (v === null) return null;
  if (typeof v === 'bigint') {
    // A long parseConnectJson kept exact: a time, an INT64's digits, or the number JSON.parse gives.
    const n: bigint = v;
    return temporalText(schema.name, n) ?? (schema.type === 'int64' ? n.toString() : Number(n));
  }
  if (typeof v === 'number' && Number.isFinite(v) && schema.name !== undefined) {
    const text = temporalText(schema.name, BigInt(Math.trunc(v)));
    if (text !== undefined) return text;
  }
  switch (schema.name) {
    case 'io.debezium.time.Date':
    case 'org.apache.kafka.connect.data.Date':
      return typeof v === 'number' ? dateText(v) : v;
    case 'org.apache.kafka.connect.data.Decimal':
      return typeof v === 'string' ? scaledText(unscaledOf(v), Number(schema.parameters?.scale ?? 0)) : v;
    case 'io.debezium.data.VariableScaleDecimal':
      return typeof v === 'object' && !Array.isArray(v) ? variableScaleDecimal(v) : v;
    // ZonedTimestamp (ISO-8601 with its offset), Json (JSON text), Uuid: text BigQuery takes as it is.
    default:
      break;
  }
  if (schema.type === 'struct' && typeof v === 'object' && !Array.isArray(v)) return convertStruct(v, schema);
  if (schema.type === 'array' && Array.isArray(v) && schema.items !== undefined) {
    const items = schema.items;
    return v.map((item) => convertValue(item, items));
  }
  return settleLongs(v);
}

/**
 * A time or timestamp of Connect's or Debezium's given as a whole number (exact: a long beyond 2^53 too,
 * as the Avro path gives it) → BigQuery's text; undefined for any other schema name.
 */
export function temporalText(name: string | undefined, n: bigint): string | undefined {
  switch (name) {
    case 'io.debezium.time.Time':
    case 'org.apache.kafka.connect.data.Time':
      return timeOfDayText(n * 1000n, 6);
    case 'io.debezium.time.MicroTime':
      return timeOfDayText(n, 6);
    case 'io.debezium.time.NanoTime':
      return timeOfDayText(n / 1000n, 6);
    case 'io.debezium.time.Timestamp':
    case 'org.apache.kafka.connect.data.Timestamp':
      return microsText(n * 1000n);
    case 'io.debezium.time.MicroTimestamp':
      return microsText(n);
    case 'io.debezium.time.NanoTimestamp':
      // BigQuery keeps microseconds: the nanoseconds below them are dropped, toward the past.
      return microsText(n / 1000n - (n < 0n && n % 1000n !== 0n ? 1n : 0n));
    default:
      return undefined;
  }
}

/** Kafka Connect's decimal bytes: the unscaled value, big-endian two's complement, base64 in JSON. */
function unscaledOf(base64: string): bigint {
  const bytes = Buffer.from(base64, 'base64');
  if (bytes.length === 0) return 0n;
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  return bytes[0]! & 0x80 ? n - (1n << BigInt(bytes.length * 8)) : n;
}

function variableScaleDecimal(v: Record<string, JsonValue>): JsonValue {
  if (typeof v.value !== 'string' || typeof v.scale !== 'number') return v;
  return scaledText(unscaledOf(v.value), v.scale);
}

/**
 * Kafka Connect's JSON converter writes an int64 as a JSON number, and JSON.parse rounds one beyond 2^53
 * to a double: a Debezium `NanoTimestamp` of today (about 1.7e18) came out up to a microsecond off, a
 * BIGINT key of that size a few units off. This parse gives such an integer as a bigint (JsonValue holds
 * none otherwise), which convertValue turns into the exact time, or the exact digits where the field's
 * schema says int64; anywhere else settleLongs gives it back as JSON.parse's number. Text JSON.parse
 * refuses is refused alike.
 */
export function parseConnectJson(text: string): JsonValue {
  // Integers of 15 digits or fewer are exact as doubles; `\u0000` in the text would make the marks below
  // ambiguous (such text is parsed as JSON.parse does).
  if (!/\d{16}/.test(text) || /\\u0000/i.test(text)) return JSON.parse(text) as JsonValue;
  const marked = markLongs(text);
  if (marked === text) return JSON.parse(text) as JsonValue;
  return unmark(JSON.parse(marked) as JsonValue);
}

/** A long beyond 2^53 outside a string → the string `"\u0000<digits>"`; keys and invalid numbers kept. */
function markLongs(text: string): string {
  const parts: string[] = [];
  const inObject: boolean[] = [];
  let from = 0;
  let previous = 0; // the last character outside strings and whitespace
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i++;
      while (i < text.length && text.charCodeAt(i) !== 0x22) i += text.charCodeAt(i) === 0x5c ? 2 : 1;
      i++;
      previous = 0x22;
      continue;
    }
    if (c === 0x2d || isDigit(c)) {
      const start = i;
      i++;
      while (i < text.length && isDigit(text.charCodeAt(i))) i++;
      const end = i;
      while (i < text.length && isNumberPart(text.charCodeAt(i))) i++;
      const digits = text.slice(start, end);
      const key = inObject.at(-1) === true && (previous === 0x7b || previous === 0x2c);
      if (i === end && !key && /^-?[1-9]\d{15,}$/.test(digits) && !Number.isSafeInteger(Number(digits))) {
        parts.push(text.slice(from, start), '"\\u0000', digits, '"');
        from = end;
      }
      previous = 0x30;
      continue;
    }
    if (c === 0x7b || c === 0x5b) inObject.push(c === 0x7b);
    else if (c === 0x7d || c === 0x5d) inObject.pop();
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) previous = c;
    i++;
  }
  if (parts.length === 0) return text;
  parts.push(text.slice(from));
  return parts.join('');
}

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isNumberPart = (c: number) =>
  isDigit(c) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d;

/** The marked strings → bigints (the text held no `\u0000`: every string that starts with it is a mark). */
function unmark(v: JsonValue): JsonValue {
  if (typeof v === 'string') return v.charCodeAt(0) === 0 ? (BigInt(v.slice(1)) as unknown as JsonValue) : v;
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(unmark);
  const out: Record<string, JsonValue> = {};
  for (const [k, item] of Object.entries(v)) out[k] = unmark(item);
  return out;
}

/** A value with any long parseConnectJson kept → as JSON.parse would give it (a number, rounded). */
export function settleLongs(v: JsonValue): JsonValue {
  if (typeof v === 'bigint') return Number(v);
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.some(holdsLong) ? v.map(settleLongs) : v;
  if (!Object.values(v).some(holdsLong)) return v;
  const out: Record<string, JsonValue> = {};
  for (const [k, item] of Object.entries(v)) out[k] = settleLongs(item);
  return out;
}

function holdsLong(v: JsonValue): boolean {
  if (typeof v === 'bigint') return true;
  if (v === null || typeof v !== 'object') return false;
  return Array.isArray(v) ? v.some(holdsLong) : Object.values(v).some(holdsLong);
}
