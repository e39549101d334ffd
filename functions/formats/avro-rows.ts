/**
 * Avro's binary straight to the table's protocol buffer row, field by field, in one pass over the bytes:
 * no decoded object, no conversion to BigQuery's text forms, no validation of a tree, no second walk to
 * encode it (#42). Compiled once per writer schema and table, for the records of the common kind: a
 * record of primitives (boolean, int, long, float, double, string, bytes), `date`, `timestamp-millis` and
 * `timestamp-micros`, each maybe in a union with null, each onto a column of the same name and its type.
 * Any other schema is not compiled (undefined), and any value the path is not sure of (a long beyond 2^53,
 * a timestamp outside the years 1684 to 2255 that microseconds hold exactly in a double, text that is not
 * UTF-8, a null for a REQUIRED column) makes it say false: that record takes the general path, so every
 * record gets exactly the fate and the bytes that path gives it (`test/unit/avro-rows.test.ts` compares
 * them on randomized records).
 */
import { isUtf8 } from 'node:buffer';
import { metadataColumns, type SchemaField } from '../schema/table-schema.js';
import type { ProtoWriter } from '../sinks/proto-writer.js';

/** Writes a payload's user columns (the wire format's header already skipped); false: the general path. */
export type AvroRows = (writer: ProtoWriter, payload: Buffer, start: number) => boolean;

type Kind =
  | 'boolean'
  | 'int'
  | 'long'
  | 'float'
  | 'double'
  | 'string'
  | 'bytes'
  | 'date'
  | 'millis'
  | 'micros';

interface FieldPlan {
  readonly kind: Kind;
  /** The union's branch that is null (-1: not a union with null). */
  readonly nullBranch: number;
  /** The column's tag (field number and wire type), and whether a null is refused. */
  readonly tag: number;
  readonly required: boolean;
}

const columnTypes: Record<Kind, readonly string[]> = {
  boolean: ['BOOL', 'BOOLEAN'],
  int: ['INT64', 'INTEGER'],
  long: ['INT64', 'INTEGER'],
  float: ['FLOAT64', 'FLOAT'],
  double: ['FLOAT64', 'FLOAT'],
  string: ['STRING'],
  bytes: ['BYTES'],
  date: ['DATE'],
  millis: ['TIMESTAMP'],
  micros: ['TIMESTAMP'],
};

const wireOf: Record<Kind, number> = {
  boolean: 0,
  int: 0,
  long: 0,
  float: 1,
  double: 1,
  string: 2,
  bytes: 2,
  date: 0,
  millis: 0,
  micros: 0,
};

const reserved = new Set<string>(metadataColumns);

/** BigQuery's DATE range in days from 1970-01-01: 0001-01-01 to 9999-12-31. */
const minDays = -719_162;
const maxDays = 2_932_896;

/**
 * The compiled rows of a writer schema (Avro schema JSON) into a table (`target`: its columns, metadata
 * included, in the order that numbers the message's fields), or undefined where this path does not apply.
 */
export function compileAvroRows(schema: unknown, target: readonly SchemaField[]): AvroRows | undefined {
  if (schema === null || typeof schema !== 'object' || (schema as { type?: unknown }).type !== 'record')
    return undefined;
  const fields = (schema as { fields?: unknown }).fields;
  if (!Array.isArray(fields)) return undefined;
  const plans: FieldPlan[] = [];
  const seen = new Set<string>();
  for (const field of fields as { name?: unknown; type?: unknown }[]) {
    if (typeof field.name !== 'string') return undefined;
    const index = target.findIndex((c) => c.name === field.name);
    if (index < 0) return undefined; // a field the table lacks: the general path's rules
    const column = target[index]!;
    if (reserved.has(column.name)) return undefined; // a metadata column's name: the general path refuses it
    const typed = kindOf(field.type);
    if (typed === undefined || !columnTypes[typed.kind].includes(column.type)) return undefined;
    if (column.mode === 'REPEATED') return undefined;
    seen.add(column.name);
    plans.push({
      ...typed,
      tag: ((index + 1) << 3) | wireOf[typed.kind],
      required: column.mode === 'REQUIRED',
    });
  }
  // A REQUIRED column the schema does not fill: the general path says so of each record.
  if (target.some((c) => c.mode === 'REQUIRED' && !seen.has(c.name) && !reserved.has(c.name)))
    return undefined;
  return (w, payload, start) => writeRecord(w, payload, start, plans);
}

/** A field's type as this path reads it, or undefined. */
function kindOf(type: unknown): { kind: Kind; nullBranch: number } | undefined {
  if (Array.isArray(type)) {
    if (type.length !== 2) return undefined;
    const nullBranch = type.findIndex((t) => t === 'null');
    if (nullBranch < 0) return undefined;
    const inner = kindOf(type[1 - nullBranch]);
    return inner === undefined || inner.nullBranch >= 0 ? undefined : { kind: inner.kind, nullBranch };
  }
  if (typeof type === 'string') {
    return ['boolean', 'int', 'long', 'float', 'double', 'string', 'bytes'].includes(type)
      ? { kind: type as Kind, nullBranch: -1 }
      : undefined;
  }
  if (type === null || typeof type !== 'object') return undefined;
  const { type: base, logicalType } = type as { type?: unknown; logicalType?: unknown };
  if (logicalType === undefined) return kindOf(base);
  if (logicalType === 'date' && base === 'int') return { kind: 'date', nullBranch: -1 };
  if (logicalType === 'timestamp-millis' && base === 'long') return { kind: 'millis', nullBranch: -1 };
  if (logicalType === 'timestamp-micros' && base === 'long') return { kind: 'micros', nullBranch: -1 };
  return undefined;
}

/** Where reading stands; `bad` when a varint ran past the payload or beyond what a double holds exactly. */
const at = { pos: 0, bad: false };

/** A zigzag varint (Avro's int and long) as a safe integer; sets `at.bad` otherwise. */
function zigzag(payload: Buffer): number {
  let value = 0;
  let scale = 1;
  for (;;) {
    if (at.pos >= payload.length || scale > 2 ** 49) {
      at.bad = true;
      return 0;
    }
    const byte = payload[at.pos++]!;
    value += (byte & 0x7f) * scale;
    if ((byte & 0x80) === 0) break;
    scale *= 128;
  }
  if (value > Number.MAX_SAFE_INTEGER) {
    at.bad = true;
    return 0;
  }
  return value % 2 === 0 ? value / 2 : -(value + 1) / 2;
}

function writeRecord(w: ProtoWriter, payload: Buffer, start: number, plans: readonly FieldPlan[]): boolean {
  at.pos = start;
  at.bad = false;
  for (let f = 0; f < plans.length; f++) {
    const plan = plans[f]!;
    if (plan.nullBranch >= 0) {
      const branch = zigzag(payload);
      if (at.bad) return false;
      if (branch === plan.nullBranch) {
        if (plan.required) return false;
        continue;
      }
      if (branch !== 1 - plan.nullBranch) return false;
    }
    if (!writeValue(w, payload, plan)) return false;
  }
  return at.pos === payload.length;
}

function writeValue(w: ProtoWriter, payload: Buffer, plan: FieldPlan): boolean {
  switch (plan.kind) {
    case 'boolean': {
      const byte = payload[at.pos++];
      if (byte !== 0 && byte !== 1) return false;
      w.varint(plan.tag);
      w.varint(byte);
      return true;
    }
    case 'int':
    case 'long': {
      const n = zigzag(payload);
      if (at.bad) return false;
      w.varint(plan.tag);
      w.integer(n);
      return true;
    }
    case 'date': {
      const days = zigzag(payload);
      if (at.bad || days < minDays || days > maxDays) return false;
      w.varint(plan.tag);
      w.integer(days);
      return true;
    }
    case 'millis':
    case 'micros': {
      const n = zigzag(payload);
      const micros = plan.kind === 'millis' ? n * 1000 : n;
      if (at.bad || !Number.isSafeInteger(micros)) return false;
      w.varint(plan.tag);
      w.integer(micros);
      return true;
    }
    case 'float':
    case 'double': {
      const size = plan.kind === 'float' ? 4 : 8;
      if (at.pos + size > payload.length) return false;
      const value = size === 4 ? payload.readFloatLE(at.pos) : payload.readDoubleLE(at.pos);
      at.pos += size;
      w.varint(plan.tag);
      w.double(value);
      return true;
    }
    default: {
      // string, bytes: a length, then the bytes, copied as they are (a string's must be UTF-8).
      const length = zigzag(payload);
      const end = at.pos + length;
      if (at.bad || length < 0 || end > payload.length) return false;
      if (plan.kind === 'string' && !isUtf8(payload.subarray(at.pos, end))) return false;
      w.varint(plan.tag);
      w.delimitedFrom(payload, at.pos, end);
      at.pos = end;
      return true;
    }
  }
}
