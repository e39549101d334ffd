/**
 * Avro's binary straight to the table's protocol buffer row, field by field, in one pass over the bytes:
 * no decoded object, no conversion to BigQuery's text forms, no validation of a tree, no second walk to
 * encode it (#42). Compiled once per writer schema and table, for the records of the common kind: a
 * record of primitives (boolean, int, long, float, double, string, bytes), `date`, `timestamp-millis`,
 * `timestamp-micros`, `decimal` (bytes), nested records and arrays of any of these, each maybe in a union
 * with null, each onto a column of the same name and its type.
 * Any other schema is not compiled (undefined), and any value the path is not sure of (a long beyond 2^53,
 * a timestamp outside the years 1684 to 2255 that microseconds hold exactly in a double, text that is not
 * UTF-8, a null for a REQUIRED column) makes it say false: that record takes the general path, so every
 * record gets exactly the fate and the bytes that path gives it (`test/unit/avro-rows.test.ts` compares
 * them on randomized records).
 */
import { isUtf8 } from 'node:buffer';
import { metadataColumns, type SchemaField } from '../schema/table-schema.js';
import type { ProtoWriter } from '../sinks/proto-writer.js';
import { decimalOf as decimalText } from './avro-types.js';

/** Writes a payload's user columns (the wire format's header already skipped); false: the general path. */
export type AvroRows = (writer: ProtoWriter, payload: Buffer, start: number) => boolean;

type Scalar =
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

/** How one value is read and written: its tag, whether null is refused, and what it is. */
type Plan = {
  /** The column's tag (field number and wire type). */
  readonly tag: number;
  /** The union's branch that is null (-1: not a union with null). */
  readonly nullBranch: number;
  readonly required: boolean;
} & (
  | { readonly kind: Scalar }
  | { readonly kind: 'decimal'; readonly scale: number; readonly plain: RegExp }
  | { readonly kind: 'record'; readonly fields: readonly Plan[] }
  | { readonly kind: 'array'; readonly item: Plan }
);

const columnTypes: Record<Scalar, readonly string[]> = {
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

const wireOf: Record<Scalar, number> = {
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

/** Plain decimal text within NUMERIC's and BIGNUMERIC's digits: what validation passes as it is. */
const plainText: Record<string, RegExp> = {
  NUMERIC: /^-?\d{1,29}(?:\.\d{1,9})?$/,
  BIGNUMERIC: /^-?\d{1,38}(?:\.\d{1,38})?$/,
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
  const fields = fieldPlans(schema, target, true);
  return fields === undefined ? undefined : (w, payload, start) => writeRecord(w, payload, start, fields);
}

/** A record's fields onto the columns of the same names (the top level: not the metadata columns). */
function fieldPlans(schema: unknown, columns: readonly SchemaField[], top: boolean): Plan[] | undefined {
  if (schema === null || typeof schema !== 'object' || (schema as { type?: unknown }).type !== 'record')
    return undefined;
  const fields = (schema as { fields?: unknown }).fields;
  if (!Array.isArray(fields)) return undefined;
  const plans: Plan[] = [];
  const seen = new Set<string>();
  for (const field of fields as { name?: unknown; type?: unknown }[]) {
    if (typeof field.name !== 'string') return undefined;
    const index = columns.findIndex((c) => c.name === field.name);
    if (index < 0) return undefined; // a field the table lacks: the general path's rules
    const column = columns[index]!;
    if (top && reserved.has(column.name)) return undefined; // a metadata column's name: refused there
    const plan = planOf(field.type, column, index + 1);
    if (plan === undefined) return undefined;
    seen.add(column.name);
    plans.push(plan);
  }
  // A REQUIRED column the schema does not fill: the general path says so of each record.
  if (columns.some((c) => c.mode === 'REQUIRED' && !seen.has(c.name) && !(top && reserved.has(c.name))))
    return undefined;
  return plans;
}

/** How a field's values are written into its column (field number `number`), or undefined. */
function planOf(type: unknown, column: SchemaField, number: number): Plan | undefined {
  let nullBranch = -1;
  let inner = type;
  if (Array.isArray(type)) {
    if (type.length !== 2) return undefined;
    nullBranch = type.findIndex((t) => t === 'null');
    if (nullBranch < 0) return undefined;
    inner = type[1 - nullBranch];
    if (Array.isArray(inner) || inner === 'null') return undefined;
  }
  const required = column.mode === 'REQUIRED';
  if (inner !== null && typeof inner === 'object' && (inner as { type?: unknown }).type === 'array') {
    if (column.mode !== 'REPEATED') return undefined;
    const item = planOf((inner as { items?: unknown }).items, { ...column, mode: 'REQUIRED' }, number);
    if (item === undefined || item.nullBranch >= 0) return undefined;
    return { tag: item.tag, nullBranch, required: false, kind: 'array', item };
  }
  if (column.mode === 'REPEATED') return undefined;
  if (inner !== null && typeof inner === 'object' && (inner as { type?: unknown }).type === 'record') {
    if (column.type !== 'RECORD' && column.type !== 'STRUCT') return undefined;
    const fields = fieldPlans(inner, column.fields ?? [], false);
    return fields === undefined
      ? undefined
      : { tag: (number << 3) | 2, nullBranch, required, kind: 'record', fields };
  }
  const decimal = decimalOf(inner);
  if (decimal !== undefined) {
    const plain = plainText[column.type];
    if (plain === undefined) return undefined;
    return { tag: (number << 3) | 2, nullBranch, required, kind: 'decimal', scale: decimal, plain };
  }
  const kind = scalarOf(inner);
  if (kind === undefined || !columnTypes[kind].includes(column.type)) return undefined;
  return { tag: (number << 3) | wireOf[kind], nullBranch, required, kind };
}

/** A decimal's scale (Avro bytes with logicalType decimal, valid precision and scale), or undefined. */
function decimalOf(type: unknown): number | undefined {
  if (type === null || typeof type !== 'object') return undefined;
  const { type: base, logicalType, precision, scale = 0 } = type as Record<string, unknown>;
  if (logicalType !== 'decimal' || base !== 'bytes') return undefined;
  if (!Number.isInteger(precision) || !Number.isInteger(scale)) return undefined;
  const [p, s] = [precision as number, scale as number];
  return p >= 1 && s >= 0 && s <= p ? s : undefined;
}

function scalarOf(type: unknown): Scalar | undefined {
  if (typeof type === 'string')
    return ['boolean', 'int', 'long', 'float', 'double', 'string', 'bytes'].includes(type)
      ? (type as Scalar)
      : undefined;
  if (type === null || typeof type !== 'object') return undefined;
  const { type: base, logicalType } = type as { type?: unknown; logicalType?: unknown };
  if (logicalType === undefined) return scalarOf(base);
  if (logicalType === 'date' && base === 'int') return 'date';
  if (logicalType === 'timestamp-millis' && base === 'long') return 'millis';
  if (logicalType === 'timestamp-micros' && base === 'long') return 'micros';
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

function writeRecord(w: ProtoWriter, payload: Buffer, start: number, plans: readonly Plan[]): boolean {
  at.pos = start;
  at.bad = false;
  return writeFields(w, payload, plans) && at.pos === payload.length;
}

function writeFields(w: ProtoWriter, payload: Buffer, plans: readonly Plan[]): boolean {
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
  return true;
}

function writeValue(w: ProtoWriter, payload: Buffer, plan: Plan): boolean {
  switch (plan.kind) {
    case 'record': {
      w.varint(plan.tag);
      const begun = w.begin();
      if (!writeFields(w, payload, plan.fields)) return false;
      w.end(begun);
      return true;
    }
    case 'array': {
      // Blocks of items, ended by a block of none; a negative count is followed by the block's size.
      for (;;) {
        let count = zigzag(payload);
        if (at.bad) return false;
        if (count === 0) return true;
        if (count < 0) {
          count = -count;
          zigzag(payload);
          if (at.bad) return false;
        }
        for (let i = 0; i < count; i++) if (!writeValue(w, payload, plan.item)) return false;
      }
    }
    case 'decimal': {
      const length = zigzag(payload);
      const end = at.pos + length;
      if (at.bad || length < 0 || end > payload.length) return false;
      const text = decimalText(payload.subarray(at.pos, end), plan.scale);
      if (!plan.plain.test(text)) return false;
      at.pos = end;
      w.varint(plan.tag);
      w.string(text);
      return true;
    }
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
