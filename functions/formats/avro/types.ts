/**
 * How Avro's types map to BigQuery's: the primitives, the logical types (decimals, dates, times,
 * timestamps, UUIDs) and Kafka Connect's named types, each with the conversion of its values.
 */
import type { JsonValue } from '../../kernel/records.js';
import type { SchemaField } from '../../schema/table-schema.js';
import { convertValue, temporalText } from '../connect/types.js';
import {
  bigOf,
  dateText,
  decimalColumn,
  floatValue,
  int64Value,
  isoMicros,
  microsText,
  scaledText,
  timeOfDayText,
  ValueError,
} from '../mapped.js';

export type AvroSchema = string | AvroSchema[] | { type: AvroSchema; [key: string]: unknown };
export type Convert = (value: unknown, path: string) => JsonValue;
export type Mode = 'NULLABLE' | 'REQUIRED' | 'REPEATED';
export interface Mapping {
  readonly type: string;
  readonly mode: Mode;
  readonly fields?: SchemaField[];
  readonly convert: Convert;
}

export const bytesMapping: Mapping = {
  type: 'BYTES',
  mode: 'REQUIRED',
  convert: (v) => (v as Buffer).toString('base64'),
};

export const primitives: Record<string, Mapping> = {
  boolean: { type: 'BOOL', mode: 'REQUIRED', convert: (v) => v as boolean },
  int: { type: 'INT64', mode: 'REQUIRED', convert: (v) => v as number },
  long: { type: 'INT64', mode: 'REQUIRED', convert: int64Value },
  float: { type: 'FLOAT64', mode: 'REQUIRED', convert: (v) => floatValue(v as number) },
  double: { type: 'FLOAT64', mode: 'REQUIRED', convert: (v) => floatValue(v as number) },
  bytes: bytesMapping,
  string: { type: 'STRING', mode: 'REQUIRED', convert: (v) => v as string },
};

/** The logical types BigQuery has a column for; others fall back to their underlying type. */
export function logicalMapping(schema: { type: AvroSchema; [key: string]: unknown }): Mapping | undefined {
  const base = schema.type;
  switch (schema.logicalType) {
    case 'decimal': {
      if (base !== 'bytes' && base !== 'fixed') return undefined;
      const precision = Number(schema.precision);
      const scale = Number(schema.scale ?? 0);
      if (
        !Number.isInteger(precision) ||
        precision < 1 ||
        !Number.isInteger(scale) ||
        scale < 0 ||
        scale > precision
      )
        return undefined; // an invalid decimal is its underlying type, as the Avro spec says
      return {
        type: decimalColumn(precision, scale),
        mode: 'REQUIRED',
        convert: (v) => decimalOf(v as Buffer, scale),
      };
    }
    case 'timestamp-millis':
    case 'local-timestamp-millis':
      if (base !== 'long') return undefined;
      return timestampMapping(schema.logicalType, (v) => bigOf(v) * 1000n);
    case 'timestamp-micros':
    case 'local-timestamp-micros':
      if (base !== 'long') return undefined;
      return timestampMapping(schema.logicalType, bigOf);
    case 'timestamp-nanos':
    case 'local-timestamp-nanos':
      // BigQuery keeps microseconds: nanoseconds are cut (toward the past), as its own loads do.
      if (base !== 'long') return undefined;
      return timestampMapping(schema.logicalType, (v) => floorDiv(bigOf(v), 1000n));
    case 'date':
      if (base !== 'int') return undefined;
      return { type: 'DATE', mode: 'REQUIRED', convert: (v) => dateText(v as number) };
    case 'time-millis':
      if (base !== 'int') return undefined;
      return timeMapping(3, (v) => BigInt(v as number) * 1000n);
    case 'time-micros':
      if (base !== 'long') return undefined;
      return timeMapping(6, bigOf);
    case 'uuid':
      if (base === 'string') return { type: 'STRING', mode: 'REQUIRED', convert: (v) => v as string };
      if (typeof base === 'string' || schema.size !== 16) return undefined;
      return { type: 'STRING', mode: 'REQUIRED', convert: (v) => uuidText(v as Buffer) };
    default:
      return undefined;
  }
}

/**
 * Kafka Connect's and Debezium's semantic types, as Connect's Avro converter writes them: the plain Avro
 * type with a `connect.name` (Debezium's `io.debezium.time.*`, `Json`, `Uuid`, `VariableScaleDecimal`);
 * Connect's own logical types also carry an Avro `logicalType`, taken above.
 */
export function connectMapping(schema: { type: AvroSchema; [key: string]: unknown }): Mapping | undefined {
  const name = schema['connect.name'] as string;
  const column = connectColumns[name];
  if (column === undefined) return undefined;
  const connect = { type: typeof schema.type === 'string' ? schema.type : 'struct', name };
  return {
    type: column,
    mode: 'REQUIRED',
    // A long beyond 2^53 comes as a bigint: its time converted exactly, not through the number below.
    convert: (v) =>
      (typeof v === 'bigint' ? temporalText(name, v) : undefined) ?? convertValue(connectJson(v), connect),
  };
}

/** A value as avsc decodes it → the JSON converter's form, which convertValue reads (bytes as base64). */
function connectJson(v: unknown): JsonValue {
  if (typeof v === 'bigint') return Number(v);
  if (Buffer.isBuffer(v)) return v.toString('base64');
  if (v !== null && typeof v === 'object' && !Array.isArray(v))
    return Object.fromEntries(Object.entries(v).map(([k, inner]) => [k, connectJson(inner)]));
  return v as JsonValue;
}

const connectColumns: Record<string, string> = {
  'io.debezium.time.Date': 'DATE',
  'io.debezium.time.Time': 'TIME',
  'io.debezium.time.MicroTime': 'TIME',
  'io.debezium.time.NanoTime': 'TIME',
  'io.debezium.time.Timestamp': 'DATETIME',
  'io.debezium.time.MicroTimestamp': 'DATETIME',
  'io.debezium.time.NanoTimestamp': 'DATETIME',
  'io.debezium.time.ZonedTimestamp': 'TIMESTAMP',
  'io.debezium.data.Json': 'JSON',
  'io.debezium.data.Uuid': 'STRING',
  'io.debezium.data.VariableScaleDecimal': 'BIGNUMERIC',
};

function timestampMapping(logicalType: string, micros: (v: unknown) => bigint): Mapping {
  const local = logicalType.startsWith('local-');
  const perMicro = logicalType.endsWith('millis') ? 1000 : logicalType.endsWith('micros') ? 1 : 0;
  return {
    type: local ? 'DATETIME' : 'TIMESTAMP',
    mode: 'REQUIRED',
    convert: (v) => {
      // The common case in plain numbers: a safe count of microseconds (isoMicros falls back outside
      // years 0000-9999, where toISOString's width changes).
      const text =
        typeof v === 'number' && perMicro !== 0 && Number.isSafeInteger(v * perMicro)
          ? isoMicros(v * perMicro)
          : microsText(micros(v));
      return local ? text : `${text}Z`;
    },
  };
}

function timeMapping(digits: 3 | 6, micros: (v: unknown) => bigint): Mapping {
  return {
    type: 'TIME',
    mode: 'REQUIRED',
    convert: (v, path) => {
      const t = micros(v);
      if (t < 0n || t >= 86_400_000_000n) throw new ValueError(path, `${String(v)} is not a time of day`);
      return timeOfDayText(t, digits);
    },
  };
}

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n ? q - 1n : q;
}

/** Avro decimals: the unscaled value as big-endian two's complement. */
/** Exact decimal text; up to 6 bytes (most amounts) in plain numbers, longer through a bigint. */
export function decimalOf(bytes: Buffer, scale: number): string {
  if (bytes.length === 0 || bytes.length > 6) return scaledText(twosComplement(bytes), scale);
  const n = bytes.readIntBE(0, bytes.length);
  if (scale === 0) return String(n);
  const digits = String(Math.abs(n)).padStart(scale + 1, '0');
  return `${n < 0 ? '-' : ''}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

function twosComplement(bytes: Buffer): bigint {
  if (bytes.length === 0) return 0n;
  const unsigned = BigInt(`0x${bytes.toString('hex')}`);
  return (bytes[0]! & 0x80) === 0 ? unsigned : unsigned - (1n << BigInt(bytes.length * 8));
}

function uuidText(bytes: Buffer): string {
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The key avsc's wrapped unions give a branch: the primitive's name or the named type's full name. */
export function branchKey(schema: AvroSchema, namespace: string): string {
  if (typeof schema === 'string') {
    if (primitives[schema] !== undefined || schema.includes('.') || namespace === '') return schema;
    return `${namespace}.${schema}`;
  }
  if (Array.isArray(schema)) return 'union';
  const kind = schema.type;
  if (typeof schema.name === 'string' && ['record', 'error', 'enum', 'fixed'].includes(kind as string)) {
    const ns = typeof schema.namespace === 'string' ? schema.namespace : namespace;
    return schema.name.includes('.') || ns === '' ? schema.name : `${ns}.${schema.name}`;
  }
  return typeof kind === 'string' ? kind : 'union';
}
