/**
 * How Protobuf's types map to BigQuery's: the scalars, map keys, the wrappers and Struct of Google's
 * well-known types, each with the conversion of its values.
 */
import protobuf from 'protobufjs';
import type { JsonValue } from '../../kernel/records.js';
import type { SchemaField } from '../../schema/table-schema.js';
import { bigOf, floatValue, int64Value, UnmappableSchemaError } from '../mapped.js';

export type Convert = (value: unknown, path: string) => JsonValue;
export type Mode = 'NULLABLE' | 'REQUIRED' | 'REPEATED';
export interface Mapping {
  readonly type: string;
  readonly fields?: SchemaField[];
  readonly convert: Convert;
}

export const wrappers: Record<string, string> = {
  'google.protobuf.DoubleValue': 'double',
  'google.protobuf.FloatValue': 'float',
  'google.protobuf.Int64Value': 'int64',
  'google.protobuf.UInt64Value': 'uint64',
  'google.protobuf.Int32Value': 'int32',
  'google.protobuf.UInt32Value': 'uint32',
  'google.protobuf.BoolValue': 'bool',
  'google.protobuf.StringValue': 'string',
  'google.protobuf.BytesValue': 'bytes',
};

export function structJson(name: string, v: unknown): unknown {
  const m = (v ?? {}) as Record<string, unknown>;
  if (name === 'google.protobuf.Struct')
    return Object.fromEntries(
      Object.entries((m.fields ?? {}) as Record<string, unknown>).map(([k, x]) => [
        k,
        structJson('google.protobuf.Value', x),
      ]),
    );
  if (name === 'google.protobuf.ListValue')
    return ((m.values ?? []) as unknown[]).map((x) => structJson('google.protobuf.Value', x));
  if (m.structValue != null) return structJson('google.protobuf.Struct', m.structValue);
  if (m.listValue != null) return structJson('google.protobuf.ListValue', m.listValue);
  for (const kind of ['numberValue', 'stringValue', 'boolValue'])
    if (m[kind] !== undefined && m[kind] !== null) return m[kind];
  return null;
}

/** Map keys as protobufjs gives them (text; 64-bit keys as an 8-character hash), as their column's type. */
export function mapKey(type: string): Mapping {
  const column = scalar(type);
  if (['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64'].includes(type)) {
    const unsigned = type === 'uint64' || type === 'fixed64';
    return {
      type: column.type,
      convert: (k) => column.convert(protobuf.util.LongBits.fromHash(k as string).toLong(unsigned), ''),
    };
  }
  if (type === 'bool') return { type: column.type, convert: (k) => k === 'true' };
  if (column.type === 'INT64') return { type: column.type, convert: (k) => Number(k) };
  return column;
}

export function modeOf(field: protobuf.Field): Mode {
  if (field.repeated || field instanceof protobuf.MapField) return 'REPEATED';
  return field.required ? 'REQUIRED' : 'NULLABLE';
}

export function scalar(type: string): Mapping {
  switch (type) {
    case 'double':
    case 'float':
      return { type: 'FLOAT64', convert: (v) => floatValue(v as number) };
    case 'int32':
    case 'sint32':
    case 'sfixed32':
    case 'uint32':
    case 'fixed32':
    case 'int64':
    case 'sint64':
    case 'sfixed64':
      return { type: 'INT64', convert: int64Value };
    case 'uint64':
    case 'fixed64':
      // Up to 2^64 - 1: beyond INT64, so an exact NUMERIC.
      return { type: 'NUMERIC', convert: (v) => bigOf(v).toString() };
    case 'bool':
      return { type: 'BOOL', convert: (v) => v as boolean };
    case 'string':
      return { type: 'STRING', convert: (v) => v as string };
    case 'bytes':
      return { type: 'BYTES', convert: (v) => Buffer.from(v as Uint8Array).toString('base64') };
    default:
      throw new UnmappableSchemaError(`the Protobuf type ${type} has no BigQuery column`);
  }
}
