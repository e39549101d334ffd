import protobuf from 'protobufjs';
import type { JsonValue } from '../../kernel/records.js';
import {
  bigOf,
  type CompiledSchema,
  columnName,
  joinPath,
  microsText,
  UnmappableSchemaError,
  ValueError,
} from '../mapped.js';
import type { RegisteredSchema, SchemaRegistry } from '../schema-registry.js';
import { readMessageIndexes } from '../wire.js';
import { addFile, wellKnownFiles } from './files.js';
import { type MessagePlan, messagePlan } from './plans.js';
import { writeMessage } from './rows.js';
import { textMessage } from './text.js';
import { type Mapping, mapKey, modeOf, scalar, structJson, wrappers } from './types.js';

/**
 * Protobuf → BigQuery. The registry's schema is .proto text (or, as some serializers register it, a
 * base64 FileDescriptorProto); its imports are the registry's references, fetched by subject and
 * version, and Google's well-known types are protobufjs's own. Each record names its message by the
 * wire format's index list; a message type compiles once to its columns and its conversion.
 */

/** Compiles a registered Protobuf schema (and what it references) to a decoder of its messages. */
export async function compileProtobuf(
  schema: RegisteredSchema,
  registry: SchemaRegistry,
): Promise<CompiledSchema> {
  const root = new protobuf.Root();
  for (const file of wellKnownFiles) {
    const json = protobuf.common.get(file);
    if (json !== undefined) root.addJSON((json as { nested: protobuf.INamespace['nested'] }).nested ?? {});
  }
  const seen = new Set<string>();
  async function addReferences(refs: RegisteredSchema['references']): Promise<void> {
    for (const ref of refs) {
      if (seen.has(ref.name) || ref.name.startsWith('google/protobuf/')) continue;
      seen.add(ref.name);
      const referenced = await registry.subjectVersion(ref.subject, ref.version);
      await addReferences(referenced.references);
      addFile(root, referenced.schema, ref.name);
    }
  }
  await addReferences(schema.references);
  const topLevel = addFile(root, schema.schema, 'main');
  try {
    root.resolveAll();
  } catch (error) {
    throw new UnmappableSchemaError(`the Protobuf schema does not resolve: ${(error as Error).message}`);
  }
  const messages = new Map<string, { type: protobuf.Type; mapping: Mapping }>();
  const byIndexes = (indexes: readonly number[]): protobuf.Type | undefined => {
    let type: protobuf.Type | undefined =
      topLevel.length > indexes[0]! ? root.lookupType(topLevel[indexes[0]!]!) : undefined;
    for (const i of indexes.slice(1))
      type = type?.nestedArray.filter((n) => n instanceof protobuf.Type)[i] as protobuf.Type | undefined;
    return type;
  };
  const compiledOf = (type: protobuf.Type) => {
    let known = messages.get(type.fullName);
    if (known === undefined) {
      known = { type, mapping: new ProtobufMapper().message(type) };
      messages.set(type.fullName, known);
    }
    return known;
  };
  if (topLevel.length === 0) throw new UnmappableSchemaError('the Protobuf schema defines no message');
  // The table's columns are the first message's, as the serializers' default (index [0]) writes it.
  const firstType = root.lookupType(topLevel[0]!);
  const first = compiledOf(firstType);
  /** The message type a payload names by its message indexes (from `start`), and where its bytes begin. */
  const messageAt = (payload: Buffer, start: number): { type: protobuf.Type; offset: number } | undefined => {
    if (payload[start] === 0) return { type: firstType, offset: start + 1 };
    const read = readMessageIndexes(payload, start);
    const type = read.ok ? byIndexes(read.indexes) : undefined;
    return type === undefined || !read.ok ? undefined : { type, offset: read.offset };
  };
  return {
    fields: first.mapping.fields!,
    membersText(columns) {
      // As `rows`, per message type: the payload's fields as a row's JSON text (protobuf/text.ts).
      const plans = new Map<protobuf.Type, MessagePlan | null>();
      return (payload, start) => {
        const read = messageAt(payload, start);
        if (read === undefined) return undefined;
        let plan = plans.get(read.type);
        if (plan === undefined) {
          plan = messagePlan(read.type, columns, true) ?? null;
          plans.set(read.type, plan);
        }
        return plan === null ? undefined : textMessage(payload, read.offset, payload.length, plan);
      };
    },
    rows(target) {
      // Per message type the records name, its plan onto the table (null: the general path's).
      const plans = new Map<protobuf.Type, MessagePlan | null>();
      return (writer, payload, start) => {
        const read = messageAt(payload, start);
        if (read === undefined) return false;
        let plan = plans.get(read.type);
        if (plan === undefined) {
          plan = messagePlan(read.type, target, true) ?? null;
          plans.set(read.type, plan);
        }
        return plan !== null && writeMessage(writer, payload, read.offset, payload.length, plan);
      };
    },
    recordName(payload) {
      const read = readMessageIndexes(payload, 0);
      return read.ok ? byIndexes(read.indexes)?.fullName.replace(/^\./, '') : undefined;
    },
    decode(payload) {
      const read = readMessageIndexes(payload, 0);
      if (!read.ok) throw new ValueError('', read.message, 'decode');
      const type = byIndexes(read.indexes);
      if (type === undefined)
        throw new ValueError(
          '',
          `the message index [${read.indexes.join(', ')}] names no message of the schema`,
          'decode',
        );
      const { mapping } = compiledOf(type);
      let message: protobuf.Message;
      try {
        message = type.decode(payload.subarray(read.offset));
      } catch (error) {
        throw new ValueError(
          '',
          `value is not a Protobuf ${type.name}: ${(error as Error).message}`,
          'decode',
        );
      }
      return mapping.convert(message, '') as Record<string, JsonValue>;
    },
  };
}

class ProtobufMapper {
  private readonly mapping = new Set<string>();

  message(type: protobuf.Type): Mapping {
    if (this.mapping.has(type.fullName))
      throw new UnmappableSchemaError(
        `the message ${type.fullName.slice(1)} is recursive: BigQuery columns cannot nest without end`,
      );
    this.mapping.add(type.fullName);
    try {
      const fields = type.fieldsArray.map((field) => ({
        field,
        column: columnName(field.name),
        mode: modeOf(field),
        // Presence: message fields, oneof members and proto3 `optional` are null when unset; other scalars
        // are their default, as proto3 reads them.
        tracksPresence: field.partOf !== null || field.resolvedType instanceof protobuf.Type,
        mapping: this.field(field),
      }));
      return {
        type: 'RECORD',
        fields: fields.map(({ column, mode, mapping }) => ({
          name: column,
          type: mapping.type,
          mode,
          ...(mapping.fields === undefined ? {} : { fields: mapping.fields }),
        })),
        convert(value, path) {
          const message = value as Record<string, unknown>;
          const out: Record<string, JsonValue> = {};
          for (const { field, column, mode, tracksPresence, mapping } of fields) {
            const v = message[field.name];
            const at = joinPath(path, field.name);
            if (mode === 'REPEATED') {
              out[column] = field.map
                ? Object.entries((v ?? {}) as Record<string, unknown>).map(([key, item]) =>
                    mapping.convert({ key, value: item }, at),
                  )
                : ((v ?? []) as unknown[]).map((item, i) => mapping.convert(item, `${at}[${i}]`));
            } else if (
              v === null ||
              v === undefined ||
              (tracksPresence && !Object.hasOwn(message, field.name))
            ) {
              out[column] = null;
            } else out[column] = mapping.convert(v, at);
          }
          return out;
        },
      };
    } finally {
      this.mapping.delete(type.fullName);
    }
  }

  private field(field: protobuf.Field): Mapping {
    if (field instanceof protobuf.MapField) {
      const key = mapKey(field.keyType);
      const value = this.single(field);
      return {
        type: 'RECORD',
        fields: [
          { name: 'key', type: key.type, mode: 'NULLABLE' },
          {
            name: 'value',
            type: value.type,
            mode: 'NULLABLE',
            ...(value.fields === undefined ? {} : { fields: value.fields }),
          },
        ],
        convert(entry, path) {
          const { key: k, value: v } = entry as { key: string; value: unknown };
          return {
            key: key.convert(k, path),
            value: v === null || v === undefined ? null : value.convert(v, `${path}[${JSON.stringify(k)}]`),
          };
        },
      };
    }
    return this.single(field);
  }

  private single(field: protobuf.Field): Mapping {
    const resolved = field.resolvedType;
    if (resolved instanceof protobuf.Enum) {
      const names = resolved.valuesById;
      // An enum number the schema does not name (proto3 enums are open): its number, as text.
      return { type: 'STRING', convert: (v) => names[v as number] ?? String(v) };
    }
    if (resolved instanceof protobuf.Type) return this.wellKnown(resolved) ?? this.message(resolved);
    return scalar(field.type);
  }

  private wellKnown(type: protobuf.Type): Mapping | undefined {
    const name = type.fullName.slice(1);
    if (name === 'google.protobuf.Timestamp')
      return {
        type: 'TIMESTAMP',
        convert: (v) => {
          const t = v as { seconds: unknown; nanos: number };
          // BigQuery keeps microseconds: nanoseconds are cut toward the past.
          return `${microsText(bigOf(t.seconds) * 1_000_000n + BigInt(Math.floor((t.nanos ?? 0) / 1000)))}Z`;
        },
      };
    const wrapped = wrappers[name];
    if (wrapped !== undefined) {
      const inner = scalar(wrapped);
      return { type: inner.type, convert: (v, path) => inner.convert((v as { value: unknown }).value, path) };
    }
    if (
      name === 'google.protobuf.Struct' ||
      name === 'google.protobuf.Value' ||
      name === 'google.protobuf.ListValue'
    ) {
      return {
        type: 'JSON',
        convert: (v) =>
          JSON.stringify(structJson(name, type.toObject(v as protobuf.Message, { json: true }))),
      };
    }
    return undefined;
  }
}

/** Struct, Value and ListValue as the JSON they stand for (protobufjs gives their message form). */
