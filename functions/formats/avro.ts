import avro from 'avsc';
import type { JsonValue } from '../kernel/records.js';
import type { SchemaField } from '../schema/table-schema.js';
import { exactLong } from './avro-long.js';
import { convertValue } from './connect.js';
import {
  bigOf,
  type CompiledSchema,
  columnName,
  dateText,
  decimalColumn,
  floatValue,
  int64Value,
  joinPath,
  microsText,
  scaledText,
  timeOfDayText,
  UnmappableSchemaError,
  ValueError,
} from './mapped.js';

/**
 * Avro → BigQuery. Decoding is avsc's (the writer's schema, from the registry or a schema file); the
 * mapping of each value to the form BigQuery ingests is compiled once per schema from the schema itself,
 * logical types included, so that decimals stay exact and longs beyond 2^53 stay whole.
 */
type AvroSchema = string | AvroSchema[] | { type: AvroSchema; [key: string]: unknown };
type Convert = (value: unknown, path: string) => JsonValue;
type Mode = 'NULLABLE' | 'REQUIRED' | 'REPEATED';
interface Mapping {
  readonly type: string;
  readonly mode: Mode;
  readonly fields?: SchemaField[];
  readonly convert: Convert;
}

/** An Avro schema compiled: its columns, its avsc type, and the conversion of its values. */
export interface AvroCompiled extends CompiledSchema {
  readonly type: avro.Type;
  readonly name: string;
  /** A value as avsc decoded it → the row's user columns. */
  convert(value: unknown): Record<string, JsonValue>;
}

export function compileAvro(schemaText: string): AvroCompiled {
  let schema: AvroSchema;
  try {
    schema = JSON.parse(schemaText) as AvroSchema;
  } catch {
    // A bare primitive name ("string") is valid Avro schema text too.
    schema = schemaText.trim();
  }
  let type: avro.Type;
  try {
    type = avro.Type.forSchema(schema as avro.Schema, { wrapUnions: true, registry: { long: exactLong } });
  } catch (error) {
    throw new UnmappableSchemaError(`the schema is not valid Avro: ${(error as Error).message}`);
  }
  const mapping = new AvroMapper().map(schema, '');
  if (mapping.type !== 'RECORD' || mapping.mode === 'REPEATED')
    throw new UnmappableSchemaError('the value schema is not a record: a table needs named fields');
  const name = nameOf(schema);
  const convert = (value: unknown) => mapping.convert(value, '') as Record<string, JsonValue>;
  return {
    fields: mapping.fields!,
    type,
    name,
    convert,
    decode: (payload) => convert(readAvro(() => type.fromBuffer(payload), name)),
  };
}

function readAvro(read: () => unknown, name: string): unknown {
  try {
    return read();
  } catch (error) {
    throw new ValueError('', `value is not Avro of schema ${name}: ${(error as Error).message}`, 'decode');
  }
}

function nameOf(schema: AvroSchema): string {
  return typeof schema === 'object' && !Array.isArray(schema) && typeof schema.name === 'string'
    ? schema.name
    : JSON.stringify(schema).slice(0, 40);
}

class AvroMapper {
  /** Named types by full name, for references further on; a name still being mapped is recursion. */
  private readonly named = new Map<string, AvroSchema>();
  private readonly mapping = new Set<string>();

  map(schema: AvroSchema, namespace: string): Mapping {
    if (Array.isArray(schema)) return this.union(schema, namespace);
    if (typeof schema === 'string') {
      const primitive = primitives[schema];
      if (primitive !== undefined) return primitive;
      const fullName = schema.includes('.')
        ? schema
        : this.named.has(`${namespace}.${schema}`)
          ? `${namespace}.${schema}`
          : schema;
      const found = this.named.get(fullName) ?? this.named.get(schema);
      if (found === undefined) throw new UnmappableSchemaError(`the schema names an unknown type ${schema}`);
      if (this.mapping.has(fullName))
        throw new UnmappableSchemaError(
          `the type ${fullName} is recursive: BigQuery columns cannot nest without end`,
        );
      return this.map(found, namespace);
    }
    const logical = typeof schema.logicalType === 'string' ? logicalMapping(schema) : undefined;
    if (logical !== undefined) return logical;
    const semantic = typeof schema['connect.name'] === 'string' ? connectMapping(schema) : undefined;
    if (semantic !== undefined && typeof schema.name !== 'string') return semantic;
    const kind = schema.type;
    if (
      typeof kind !== 'string' ||
      primitives[kind] !== undefined ||
      !['record', 'error', 'enum', 'fixed', 'array', 'map'].includes(kind)
    )
      return this.map(kind, namespace);
    let inner = namespace;
    if (typeof schema.name === 'string') {
      const ns = typeof schema.namespace === 'string' ? schema.namespace : namespace;
      const fullName = schema.name.includes('.')
        ? schema.name
        : ns === ''
          ? schema.name
          : `${ns}.${schema.name}`;
      this.named.set(fullName, schema);
      if (!fullName.includes('.')) this.named.set(schema.name, schema);
      inner = fullName.includes('.') ? fullName.slice(0, fullName.lastIndexOf('.')) : '';
      if (semantic !== undefined) return semantic; // a named semantic type (VariableScaleDecimal)
      if (kind === 'record' || kind === 'error') {
        this.mapping.add(fullName);
        try {
          return this.record(schema, inner);
        } finally {
          this.mapping.delete(fullName);
        }
      }
    }
    switch (kind) {
      case 'enum':
        return { type: 'STRING', mode: 'REQUIRED', convert: (v) => v as string };
      case 'fixed':
        return bytesMapping;
      case 'array':
        return this.array(this.map(schema.items as AvroSchema, inner));
      case 'map':
        return this.mapOf(this.map(schema.values as AvroSchema, inner));
      default:
        return this.record(schema, inner);
    }
  }

  private record(schema: { [key: string]: unknown }, namespace: string): Mapping {
    const declared = (schema.fields ?? []) as { name: string; type: AvroSchema }[];
    const fields = declared.map((f) => ({
      name: f.name,
      column: columnName(f.name),
      mapping: this.map(f.type, namespace),
    }));
    return {
      type: 'RECORD',
      mode: 'REQUIRED',
      fields: fields.map(({ column, mapping }) => fieldOf(column, mapping)),
      convert(value, path) {
        const record = value as Record<string, unknown>;
        const out: Record<string, JsonValue> = {};
        for (const { name, column, mapping } of fields) {
          const v = record[name];
          out[column] = v === null || v === undefined ? null : mapping.convert(v, joinPath(path, name));
        }
        return out;
      },
    };
  }

  private array(items: Mapping): Mapping {
    // BigQuery has no array of arrays: an inner array becomes a record holding it.
    const item = items.mode === 'REPEATED' ? wrapRepeated(items) : items;
    return {
      type: item.type,
      mode: 'REPEATED',
      ...(item.fields === undefined ? {} : { fields: item.fields }),
      convert(value, path) {
        const list = value as unknown[];
        return list.map((v, i) => {
          if (v === null)
            throw new ValueError(
              `${path}[${i}]`,
              'an array item is null, which a REPEATED column cannot hold',
            );
          return item.convert(v, `${path}[${i}]`);
        });
      },
    };
  }

  private mapOf(values: Mapping): Mapping {
    const valueField = fieldOf('value', values);
    return {
      type: 'RECORD',
      mode: 'REPEATED',
      fields: [{ name: 'key', type: 'STRING', mode: 'REQUIRED' }, valueField],
      convert(value, path) {
        return Object.entries(value as Record<string, unknown>).map(([key, v]) => ({
          key,
          value: v === null ? null : values.convert(v, `${path}[${JSON.stringify(key)}]`),
        }));
      },
    };
  }

  private union(branches: AvroSchema[], namespace: string): Mapping {
    const nonNull = branches.filter((b) => b !== 'null');
    const nullable = nonNull.length < branches.length;
    const mapped = nonNull.map((b) => ({ key: branchKey(b, namespace), mapping: this.map(b, namespace) }));
    if (mapped.length === 1) {
      // [null, T]: a NULLABLE T (a REPEATED T stays REPEATED: null is an empty list).
      const only = mapped[0]!;
      return {
        ...only.mapping,
        mode: only.mapping.mode === 'REPEATED' ? 'REPEATED' : nullable ? 'NULLABLE' : only.mapping.mode,
        convert: (v, path) => {
          if (v === null) return null;
          const inner = (v as Record<string, unknown>)[only.key];
          return only.mapping.convert(inner, path);
        },
      };
    }
    // Other unions: a record with a field per branch, the one the value took set.
    const columns = new Map<string, string>();
    for (const { key } of mapped) {
      let column = columnName(key.slice(key.lastIndexOf('.') + 1));
      if ([...columns.values()].includes(column)) column = columnName(key);
      columns.set(key, column);
    }
    return {
      type: 'RECORD',
      mode: nullable ? 'NULLABLE' : 'REQUIRED',
      fields: mapped.map(({ key, mapping }) =>
        fieldOf(columns.get(key)!, {
          ...mapping,
          mode: mapping.mode === 'REPEATED' ? 'REPEATED' : 'NULLABLE',
        }),
      ),
      convert(v, path) {
        if (v === null) return null;
        const [key, inner] = Object.entries(v as Record<string, unknown>)[0]!;
        const out: Record<string, JsonValue> = {};
        for (const { key: k } of mapped) out[columns.get(k)!] = null;
        const branch = mapped.find((m) => m.key === key)!;
        out[columns.get(key)!] = branch.mapping.convert(inner, joinPath(path, columns.get(key)!));
        return out;
      },
    };
  }
}

/** The key avsc's wrapped unions give a branch: the primitive's name or the named type's full name. */
function branchKey(schema: AvroSchema, namespace: string): string {
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

function fieldOf(name: string, mapping: Mapping): SchemaField {
  return {
    name,
    type: mapping.type,
    mode: mapping.mode,
    ...(mapping.fields === undefined ? {} : { fields: mapping.fields }),
  };
}

function wrapRepeated(inner: Mapping): Mapping {
  return {
    type: 'RECORD',
    mode: 'REQUIRED',
    fields: [fieldOf('value', inner)],
    convert: (v, path) => ({ value: inner.convert(v, path) }),
  };
}

const bytesMapping: Mapping = {
  type: 'BYTES',
  mode: 'REQUIRED',
  convert: (v) => (v as Buffer).toString('base64'),
};

const primitives: Record<string, Mapping> = {
  boolean: { type: 'BOOL', mode: 'REQUIRED', convert: (v) => v as boolean },
  int: { type: 'INT64', mode: 'REQUIRED', convert: (v) => v as number },
  long: { type: 'INT64', mode: 'REQUIRED', convert: int64Value },
  float: { type: 'FLOAT64', mode: 'REQUIRED', convert: (v) => floatValue(v as number) },
  double: { type: 'FLOAT64', mode: 'REQUIRED', convert: (v) => floatValue(v as number) },
  bytes: bytesMapping,
  string: { type: 'STRING', mode: 'REQUIRED', convert: (v) => v as string },
};

/** The logical types BigQuery has a column for; others fall back to their underlying type. */
function logicalMapping(schema: { type: AvroSchema; [key: string]: unknown }): Mapping | undefined {
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
function connectMapping(schema: { type: AvroSchema; [key: string]: unknown }): Mapping | undefined {
  const name = schema['connect.name'] as string;
  const column = connectColumns[name];
  if (column === undefined) return undefined;
  const connect = { type: typeof schema.type === 'string' ? schema.type : 'struct', name };
  return {
    type: column,
    mode: 'REQUIRED',
    convert: (v) => convertValue(connectJson(v), connect),
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

/** Microseconds since the epoch (a safe number in years 0000-9999) → `YYYY-MM-DDTHH:MM:SS.ffffff`. */
function isoMicros(micros: number): string {
  const ms = Math.floor(micros / 1000);
  const iso = new Date(ms).toISOString();
  if (iso.length !== 24) return microsText(BigInt(micros));
  return `${iso.slice(0, 23)}${String(micros - ms * 1000).padStart(3, '0')}`;
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
function decimalOf(bytes: Buffer, scale: number): string {
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
