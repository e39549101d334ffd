import { isUtf8 } from 'node:buffer';
import { JsonCursor } from '../../encoders/json-cursor.js';
import { readingOf } from '../../encoders/json-plans.js';
import { readRecord } from '../../encoders/json-reader.js';
import type { JsonValue } from '../../kernel/records.js';
import type { SchemaField } from '../../schema/table-schema.js';
import { type CompiledSchema, columnName, joinPath, UnmappableSchemaError, ValueError } from '../mapped.js';

/**
 * JSON Schema → BigQuery. The payload is JSON text; the schema gives the columns: types, nullability
 * (`"type": [T, "null"]`, or an anyOf/oneOf with null), `required`, the formats date-time / date / time,
 * nested objects, arrays, and local `$ref`s (`#/definitions/...`, `#/$defs/...`). An object without
 * properties, and any other combination, is a JSON column. Properties the schema does not name are left
 * out, as the serializer's consumers do.
 */
type Json = Record<string, unknown>;
type Convert = (value: JsonValue, path: string) => JsonValue;
interface Mapping {
  readonly type: string;
  readonly nullable: boolean;
  readonly repeated: boolean;
  readonly fields?: SchemaField[];
  readonly convert: Convert;
}

export function compileJsonSchema(text: string): CompiledSchema {
  let root: Json;
  try {
    root = JSON.parse(text) as Json;
  } catch (error) {
    throw new UnmappableSchemaError(`the JSON Schema is not JSON: ${(error as Error).message}`);
  }
  const mapper = new JsonSchemaMapper(root);
  const mapping = mapper.map(root, '#');
  if (mapping.type !== 'RECORD' || mapping.repeated)
    throw new UnmappableSchemaError(
      'the JSON Schema is not an object with properties: a table needs named fields',
    );
  const title =
    typeof (root as { title?: unknown }).title === 'string' ? (root as { title: string }).title : undefined;
  return {
    fields: mapping.fields!,
    recordName: () => title,
    rows(target) {
      // The values are JSON text: where the schema's columns are the values' own fields (no JSON column,
      // no renamed property, no array of arrays), the JSON path's one-pass reader writes the row from the
      // text after the header, as the general path would (fields the schema does not name are left out).
      if (!mapper.plain) return undefined;
      const reading = readingOf({ fields: mapping.fields!, unknownFields: 'ignore' }, target, false);
      if (reading === undefined) return undefined;
      const c = new JsonCursor();
      return (writer, payload, start) => readRecord(c, payload.subarray(start), reading, writer) >= 0;
    },
    ...(mapper.plain ? { textFields: mapping.fields! } : {}),
    decode(payload) {
      let value: JsonValue;
      try {
        if (!isUtf8(payload)) throw new Error('not UTF-8');
        value = JSON.parse(payload.toString('utf8')) as JsonValue;
      } catch (error) {
        throw new ValueError('', `value is not JSON: ${(error as Error).message}`, 'decode');
      }
      if (value === null || typeof value !== 'object' || Array.isArray(value))
        throw new ValueError('', 'value is not a JSON object', 'decode');
      return mapping.convert(value, '') as Record<string, JsonValue>;
    },
  };
}

class JsonSchemaMapper {
  private readonly mapping = new Set<string>();
  /** Every column is a field of the values as it is: no JSON column, renamed property or wrapped array. */
  plain = true;

  constructor(private readonly root: Json) {}

  map(schema: unknown, at: string): Mapping {
    if (schema === true || schema === undefined || schema === null || typeof schema !== 'object')
      return this.json(true);
    const s = schema as Json;
    if (typeof s.$ref === 'string') return this.ref(s.$ref);
    const alternatives = (s.anyOf ?? s.oneOf) as unknown[] | undefined;
    if (Array.isArray(alternatives)) {
      const others = alternatives.filter((a) => !isNullSchema(a));
      if (others.length === 1) return { ...this.map(others[0], at), nullable: true };
      return this.json(others.length < alternatives.length);
    }
    const types = Array.isArray(s.type) ? (s.type as string[]) : typeof s.type === 'string' ? [s.type] : [];
    const nullable = types.includes('null');
    const kinds = types.filter((t) => t !== 'null');
    const kind =
      kinds.length === 1 ? kinds[0] : kinds.length === 0 && s.properties !== undefined ? 'object' : undefined;
    switch (kind) {
      case 'string': {
        const type =
          s.format === 'date-time'
            ? 'TIMESTAMP'
            : s.format === 'date'
              ? 'DATE'
              : s.format === 'time'
                ? 'TIME'
                : 'STRING';
        return { type, nullable, repeated: false, convert: (v) => v };
      }
      case 'integer':
        return { type: 'INT64', nullable, repeated: false, convert: (v) => v };
      case 'number':
        return { type: 'FLOAT64', nullable, repeated: false, convert: (v) => v };
      case 'boolean':
        return { type: 'BOOL', nullable, repeated: false, convert: (v) => v };
      case 'object':
        return s.properties === undefined ? this.json(nullable) : { ...this.object(s, at), nullable };
      case 'array': {
        if (s.items === undefined || Array.isArray(s.items)) return this.json(nullable);
        const items = this.map(s.items, `${at}/items`);
        // BigQuery has no array of arrays: an inner array becomes a record holding it.
        const item = items.repeated ? this.wrapped(items) : items;
        return {
          type: item.type,
          nullable,
          repeated: true,
          ...(item.fields === undefined ? {} : { fields: item.fields }),
          convert: (v, path) => {
            if (!Array.isArray(v)) throw new ValueError(path, 'must be an array');
            return v.map((x, i) => (x === null ? x : item.convert(x, `${path}[${i}]`)));
          },
        };
      }
      default:
        return this.json(nullable);
    }
  }

  private json(nullable: boolean): Mapping {
    this.plain = false;
    return jsonColumn(nullable);
  }

  private wrapped(inner: Mapping): Mapping {
    this.plain = false;
    return wrapRepeated(inner);
  }

  private object(s: Json, at: string): Mapping {
    if (this.mapping.has(at))
      throw new UnmappableSchemaError(`${at} is recursive: BigQuery columns cannot nest without end`);
    this.mapping.add(at);
    try {
      const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
      const properties = Object.entries(s.properties as Json).map(([name, schema]) => ({
        name,
        column: columnName(name),
        mapping: this.map(schema, `${at}/properties/${name}`),
      }));
      if (properties.some((p) => p.name !== p.column)) this.plain = false;
      return {
        type: 'RECORD',
        nullable: false,
        repeated: false,
        fields: properties.map(({ name, column, mapping }) => ({
          name: column,
          type: mapping.type,
          mode: mapping.repeated
            ? 'REPEATED'
            : required.has(name) && !mapping.nullable
              ? 'REQUIRED'
              : 'NULLABLE',
          ...(mapping.fields === undefined ? {} : { fields: mapping.fields }),
        })),
        convert: (v, path) => {
          if (v === null || typeof v !== 'object' || Array.isArray(v))
            throw new ValueError(path, 'must be an object');
          const out: Record<string, JsonValue> = {};
          for (const { name, column, mapping } of properties) {
            const x = Object.hasOwn(v, name) ? v[name]! : null;
            out[column] = x === null ? null : mapping.convert(x, joinPath(path, name));
          }
          return out;
        },
      };
    } finally {
      this.mapping.delete(at);
    }
  }

  private ref(ref: string): Mapping {
    const m = /^#\/(definitions|\$defs)\/([^/]+)$/.exec(ref);
    const target =
      m === null
        ? undefined
        : ((this.root[m[1]!] as Json | undefined)?.[decodeURIComponent(m[2]!)] as unknown);
    if (target === undefined) throw new UnmappableSchemaError(`the $ref ${ref} is not a local definition`);
    return this.map(target, ref);
  }
}

function isNullSchema(s: unknown): boolean {
  return typeof s === 'object' && s !== null && (s as Json).type === 'null';
}

function jsonColumn(nullable: boolean): Mapping {
  return { type: 'JSON', nullable, repeated: false, convert: (v) => JSON.stringify(v) };
}

function wrapRepeated(inner: Mapping): Mapping {
  return {
    type: 'RECORD',
    nullable: false,
    repeated: false,
    fields: [
      {
        name: 'value',
        type: inner.type,
        mode: 'REPEATED',
        ...(inner.fields === undefined ? {} : { fields: inner.fields }),
      },
    ],
    convert: (v, path) => ({ value: inner.convert(v, path) }),
  };
}
