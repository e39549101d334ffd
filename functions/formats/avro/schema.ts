import avro from 'avsc';
import type { JsonValue } from '../../kernel/records.js';
import type { SchemaField } from '../../schema/table-schema.js';
import { type CompiledSchema, columnName, joinPath, UnmappableSchemaError, ValueError } from '../mapped.js';
import { compileEnvelopeRows } from './envelope.js';
import { exactLong } from './long.js';
import { compileAvroRows } from './rows.js';
import { compileAvroText } from './text.js';
import {
  type AvroSchema,
  branchKey,
  bytesMapping,
  connectMapping,
  logicalMapping,
  type Mapping,
  primitives,
} from './types.js';

/**
 * Avro → BigQuery. Decoding is avsc's (the writer's schema, from the registry or a schema file); the
 * mapping of each value to the form BigQuery ingests is compiled once per schema from the schema itself,
 * logical types included (avro/types.ts), so that decimals stay exact and longs beyond 2^53 stay whole.
 */
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
    // Every long exact: `"long"` by name through the registry, and `{"type": "long", ...}` (the timestamps,
    // `time-micros`) through the hook; avsc makes its own, rounding, long type for the latter.
    type = avro.Type.forSchema(schema as avro.Schema, {
      wrapUnions: true,
      registry: { long: exactLong },
      typeHook: (s) =>
        typeof s === 'object' && s !== null && (s as { type?: unknown }).type === 'long'
          ? exactLong
          : undefined,
    });
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
    recordName: () => type.name,
    rows: (target) => compileAvroRows(schema, target),
    envelopeRows: (target, primaryKey) => compileEnvelopeRows(schema, target, primaryKey),
    membersText: (columns) => compileAvroText(schema, columns),
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
