/**
 * The compiled Protobuf path's plans (protobuf/rows.ts): per field of a registry message, which column it
 * fills, how its wire value is read and how it is written there, decided once per message type and table.
 * A message compiles when every field maps onto a column of its name and a type the path writes exactly;
 * maps with keys other than text, proto2 declared defaults, a field the table lacks, a metadata column's name
 * or a REQUIRED column no field fills leave it to the general path (undefined).
 */
import protobuf from 'protobufjs';
import { metadataColumns, type SchemaField } from '../../schema/table-schema.js';
import { columnName } from '../mapped.js';
import { wrappers } from './types.js';

export type ProtoKind =
  | 'int32'
  | 'uint32'
  | 'sint32'
  | 'int64'
  | 'uint64'
  | 'sint64'
  | 'bool'
  | 'enum'
  | 'fixed32'
  | 'sfixed32'
  | 'fixed64'
  | 'sfixed64'
  | 'double'
  | 'float'
  | 'string'
  | 'bytes'
  | 'message'
  | 'timestamp'
  | 'wrapper'
  | 'struct'
  | 'map';

/** The well-known types that stand for JSON (protobuf/struct.ts). */
export type StructKind = 'Struct' | 'Value' | 'ListValue';

/** How one field is read (its number and wire type in the payload) and written (its column's tag). */
export interface FieldPlan {
  readonly number: number;
  /** The wire type of one value in the payload (a packed repeated field comes as 2 as well). */
  readonly wire: number;
  readonly kind: ProtoKind;
  /** The column's tag (field number and wire type) in the table's message. */
  readonly tag: number;
  /** The column's name as JSON text (`"name":`), for rows sent as JSON text (protobuf/text.ts). */
  readonly key: string;
  readonly repeated: boolean;
  /** Null when absent (message fields, oneof members, proto3 `optional`); else its default. */
  readonly presence: boolean;
  /** The column is REQUIRED: an absent value cannot be written. */
  readonly required: boolean;
  /** proto2 `required`: absent, the payload does not decode (the general path says so). */
  readonly mustBePresent: boolean;
  /** The field's oneof among its message's (-1: none); two members present go the general way. */
  readonly oneof: number;
  /** An enum's names as UTF-8, by number (an unnamed number is written as its digits). */
  readonly names?: ReadonlyMap<number, Buffer>;
  /** A nested message's fields. */
  readonly message?: MessagePlan;
  /** A wrapper's value field (number 1). */
  readonly inner?: FieldPlan;
  /** Struct, Value or ListValue (onto a JSON column, as the JSON text they stand for). */
  readonly structKind?: StructKind;
  /** A map's entries: the key column's tag, and the value (number 2) onto the value column. */
  readonly entry?: { readonly keyTag: number; readonly value: FieldPlan };
}

export interface MessagePlan {
  /** In the table's column order: the order the general path writes them. */
  readonly fields: readonly FieldPlan[];
  /** A payload field number → its index in `fields` (-1: a field the message does not declare). */
  readonly slotOf: Int16Array;
  readonly oneofs: number;
  /** Scratch of one pass: where each field's (last) value starts, or how often a repeated one came. */
  readonly found: Int32Array;
  readonly counts: Int32Array;
  readonly oneofSeen: Int32Array;
  /** Payloads out of the table's order less those in it (protobuf/rows.ts: when to stop trying one pass). */
  unordered: number;
}

const wireOf: Record<ProtoKind, number> = {
  int32: 0,
  uint32: 0,
  sint32: 0,
  int64: 0,
  uint64: 0,
  sint64: 0,
  bool: 0,
  enum: 0,
  fixed32: 5,
  sfixed32: 5,
  fixed64: 1,
  sfixed64: 1,
  double: 1,
  float: 5,
  string: 2,
  bytes: 2,
  message: 2,
  timestamp: 2,
  wrapper: 2,
  struct: 2,
  map: 2,
};

/** The column types each kind is written into, and the wire type it has there. */
const columnOf: Record<string, { types: readonly string[]; wire: number }> = {
  int: { types: ['INT64', 'INTEGER'], wire: 0 },
  decimal: { types: ['NUMERIC', 'BIGNUMERIC'], wire: 2 },
  float: { types: ['FLOAT64', 'FLOAT'], wire: 1 },
  bool: { types: ['BOOL', 'BOOLEAN'], wire: 0 },
  string: { types: ['STRING'], wire: 2 },
  bytes: { types: ['BYTES'], wire: 2 },
  timestamp: { types: ['TIMESTAMP'], wire: 0 },
  record: { types: ['RECORD', 'STRUCT'], wire: 2 },
  json: { types: ['JSON'], wire: 2 },
};

const columnKind: Record<ProtoKind, string> = {
  int32: 'int',
  uint32: 'int',
  sint32: 'int',
  int64: 'int',
  sint64: 'int',
  fixed32: 'int',
  sfixed32: 'int',
  sfixed64: 'int',
  uint64: 'decimal',
  fixed64: 'decimal',
  double: 'float',
  float: 'float',
  bool: 'bool',
  string: 'string',
  enum: 'string',
  bytes: 'bytes',
  timestamp: 'timestamp',
  message: 'record',
  wrapper: '',
  struct: 'json',
  map: '',
};

const reserved = new Set<string>(metadataColumns);

/** Field numbers above this are not compiled (their slots are a dense array). */
const maxNumber = 4096;

/** A message's fields onto the columns of their names (the top level: not the metadata columns). */
export function messagePlan(
  type: protobuf.Type,
  columns: readonly SchemaField[],
  top: boolean,
  seen: ReadonlySet<string> = new Set(),
): MessagePlan | undefined {
  if (seen.has(type.fullName)) return undefined;
  const inside = new Set([...seen, type.fullName]);
  const oneofs = type.oneofsArray;
  const planned: { index: number; plan: FieldPlan }[] = [];
  for (const field of type.fieldsArray) {
    if (field.id > maxNumber) return undefined;
    const index = columns.findIndex((c) => c.name === columnName(field.name));
    if (index < 0 || planned.some((p) => p.index === index)) return undefined;
    const column = columns[index]!;
    if (top && reserved.has(column.name)) return undefined;
    const plan = fieldPlan(
      field,
      column,
      index + 1,
      inside,
      field.partOf ? oneofs.indexOf(field.partOf) : -1,
    );
    if (plan === undefined) return undefined;
    planned.push({ index, plan });
  }
  const filled = new Set(planned.map((p) => p.index));
  if (columns.some((c, i) => c.mode === 'REQUIRED' && !filled.has(i) && !(top && reserved.has(c.name))))
    return undefined;
  planned.sort((a, b) => a.index - b.index);
  const fields = planned.map((p) => p.plan);
  const slotOf = new Int16Array(Math.max(0, ...fields.map((f) => f.number)) + 1).fill(-1);
  fields.forEach((f, i) => {
    slotOf[f.number] = i;
  });
  return {
    fields,
    slotOf,
    oneofs: oneofs.length,
    found: new Int32Array(fields.length),
    counts: new Int32Array(fields.length),
    oneofSeen: new Int32Array(oneofs.length),
    unordered: 0,
  };
}

function fieldPlan(
  field: protobuf.Field,
  column: SchemaField,
  number: number,
  seen: ReadonlySet<string>,
  oneof: number,
): FieldPlan | undefined {
  if (field instanceof protobuf.MapField) return mapPlan(field, column, number, seen);
  return valuePlan(field, column, number, seen, oneof);
}

/**
 * A map with text keys onto the general path's column for it: REPEATED records of a STRING `key` and a
 * `value` (no other REQUIRED field). Its entries are the field's occurrences; each is written as the key,
 * then the value (absent: its default, or NULL for a message), as protobufjs reads them.
 */
function mapPlan(
  field: protobuf.MapField,
  column: SchemaField,
  number: number,
  seen: ReadonlySet<string>,
): FieldPlan | undefined {
  if (field.keyType !== 'string' || column.mode !== 'REPEATED') return undefined;
  if (!columnOf.record!.types.includes(column.type)) return undefined;
  const columns = column.fields ?? [];
  const k = columns.findIndex((c) => c.name === 'key');
  const v = columns.findIndex((c) => c.name === 'value');
  if (k < 0 || v < 0 || columns[k]!.type !== 'STRING' || columns[k]!.mode === 'REPEATED') return undefined;
  if (columns.some((c, i) => i !== k && i !== v && c.mode === 'REQUIRED')) return undefined;
  // A MapField is a Field of its value type (not repeated, no oneof, no default).
  const value = valuePlan(field as unknown as protobuf.Field, columns[v]!, v + 1, seen, -1);
  if (value === undefined || value.repeated) return undefined;
  return {
    key: `${JSON.stringify(column.name)}:`,
    number: field.id,
    wire: 2,
    kind: 'map',
    tag: (number << 3) | 2,
    repeated: true,
    presence: false,
    required: false,
    mustBePresent: false,
    oneof: -1,
    entry: { keyTag: ((k + 1) << 3) | 2, value: { ...value, number: 2 } },
  };
}

/** A field (or a map's value) onto its column. */
function valuePlan(
  field: protobuf.Field,
  column: SchemaField,
  number: number,
  seen: ReadonlySet<string>,
  oneof: number,
): FieldPlan | undefined {
  if (field.options?.default !== undefined) return undefined;
  const repeated = field.repeated;
  if (repeated !== (column.mode === 'REPEATED')) return undefined;
  const resolved = field.resolvedType;
  const base = {
    key: `${JSON.stringify(column.name)}:`,
    number: field.id,
    repeated,
    presence: field.partOf !== null || resolved instanceof protobuf.Type,
    required: column.mode === 'REQUIRED',
    mustBePresent: field.required,
    oneof,
  };
  const onto = (kind: ProtoKind, as: string, extra: Partial<FieldPlan> = {}): FieldPlan | undefined => {
    const target = columnOf[as];
    if (target === undefined || !target.types.includes(column.type)) return undefined;
    return { ...base, kind, wire: wireOf[kind], tag: (number << 3) | target.wire, ...extra };
  };
  if (resolved instanceof protobuf.Enum) {
    const names = new Map<number, Buffer>();
    for (const [id, name] of Object.entries(resolved.valuesById)) names.set(Number(id), Buffer.from(name));
    return onto('enum', 'string', { names });
  }
  if (resolved instanceof protobuf.Type) {
    const name = resolved.fullName.slice(1);
    if (name === 'google.protobuf.Timestamp') return onto('timestamp', 'timestamp');
    const wrapped = wrappers[name];
    if (wrapped !== undefined) {
      const kind = wrapped as ProtoKind;
      const inner = onto(kind, columnKind[kind]!, { number: 1, presence: false, repeated: false, oneof: -1 });
      return inner === undefined ? undefined : { ...inner, ...base, kind: 'wrapper', wire: 2, inner };
    }
    const struct = /^google\.protobuf\.(Struct|Value|ListValue)$/.exec(name)?.[1] as StructKind | undefined;
    if (struct !== undefined) return onto('struct', 'json', { structKind: struct });
    if (name.startsWith('google.protobuf.') && /(Struct|Value|ListValue)$/.test(name)) return undefined;
    const message = messagePlan(resolved, column.fields ?? [], false, seen);
    return message === undefined ? undefined : onto('message', 'record', { message });
  }
  const kind = field.type as ProtoKind;
  if (['message', 'timestamp', 'wrapper', 'struct', 'map'].includes(kind) || !(kind in wireOf))
    return undefined;
  return onto(kind, columnKind[kind]!);
}
