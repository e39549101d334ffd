/**
 * Kafka Connect's values in the forms BigQuery ingests: with a schema (the JSON converter's wrapper, or a
 * registry format's logical types), each field's logical type (`io.debezium.time.*`, Kafka Connect's
 * `Decimal`, `VariableScaleDecimal`, ...) turns its value into exact decimal text, dates, times and
 * timestamps as text.
 */
import type { JsonValue } from '../kernel/records.js';
import { dateText, microsText, scaledText, timeOfDayText } from './mapped.js';

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
    out[name] = f === undefined ? v : convertValue(v, f);
  }
  return out;
}

/** One value by its Kafka Connect schema: logical types to BigQuery's forms, structs and arrays inside. */
export function convertValue(v: JsonValue, schema: ConnectSchema): JsonValue {
  if (v === null) return null;
  if (typeof v === 'number' && Number.isFinite(v) && temporalNames.has(schema.name ?? '')) {
    return temporalText(schema.name, BigInt(Math.trunc(v)))!;
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
  return v;
}

/** The names temporalText converts. */
const temporalNames = new Set([
  'io.debezium.time.Time',
  'org.apache.kafka.connect.data.Time',
  'io.debezium.time.MicroTime',
  'io.debezium.time.NanoTime',
  'io.debezium.time.Timestamp',
  'org.apache.kafka.connect.data.Timestamp',
  'io.debezium.time.MicroTimestamp',
  'io.debezium.time.NanoTimestamp',
]);

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
