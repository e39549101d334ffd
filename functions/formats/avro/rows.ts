/**
 * Avro's binary straight to the table's protocol buffer row, field by field, in one pass over the bytes:
 * no decoded object, no conversion to BigQuery's text forms, no validation of a tree, no second walk to
 * encode it (#42). Compiled once per writer schema and table, for the records of the common kind: a
 * record of primitives (boolean, int, long, float, double, string, bytes), `date`, the timestamps
 * (`timestamp-*`, `local-timestamp-*`: millis, micros, nanos), `time-millis`, `time-micros` (and
 * Debezium's times, `Json`, `VariableScaleDecimal`), `decimal` (bytes, fixed), `uuid`, enums, `fixed`,
 * nested records, arrays and maps of any of these, each maybe in a union with null, unions of several of
 * them but arrays (a record of a column per branch), named types used again by name, each onto a column
 * of the same name and its type.
 * Any other schema is not compiled (undefined), and any value the path is not sure of (a long beyond ±2^52,
 * a timestamp outside about 1827 to 2112 (1684 to 2255 in milliseconds), text that is not
 * UTF-8, a null for a REQUIRED column, a map key JavaScript's objects would reorder or drop) makes it say
 * false: that record takes the general path, so every record gets exactly the fate and the bytes that path
 * gives it (`test/unit/avro-rows.test.ts` compares them on randomized records). */
import { canonicalMicrosIn } from '../../encoders/civil-time.js';
import { isJsonText } from '../../encoders/json-cursor.js';
import type { ProtoWriter } from '../../encoders/proto-writer.js';
import type { SchemaField } from '../../schema/table-schema.js';
import { type CompiledRows, isoMicros, timeOfDayText } from '../mapped.js';
import { fieldPlans, maxDays, minDays, type Plan } from './plans.js';
import {
  absent,
  at,
  blockCount,
  isTimeOfDay,
  mapKey,
  refused,
  type Temporal,
  temporal,
  timeDecimals,
  unionBranch,
  variableScaleText,
  zigzag,
} from './read.js';
import { decimalOf as decimalText } from './types.js';

export type AvroRows = CompiledRows;

/**
 * The compiled rows of a writer schema (Avro schema JSON) into a table (`target`: its columns, metadata
 * included, in the order that numbers the message's fields), or undefined where this path does not apply.
 */
export function compileAvroRows(schema: unknown, target: readonly SchemaField[]): AvroRows | undefined {
  const fields = fieldPlans(schema, target, true);
  return fields === undefined ? undefined : (w, payload, start) => writeRecord(w, payload, start, fields);
}

function writeRecord(w: ProtoWriter, payload: Buffer, start: number, plans: readonly Plan[]): boolean {
  at.pos = start;
  at.bad = false;
  return writeFields(w, payload, plans) && at.pos === payload.length;
}

/**
 * A record's fields at `at.pos`, each by its plan (a Debezium envelope's rows too: avro/envelope.ts); with
 * `keep`, only the fields it marks stay in the message (the others are read, checked, and written over).
 */
export function writeFields(
  w: ProtoWriter,
  payload: Buffer,
  plans: readonly Plan[],
  keep?: readonly boolean[],
): boolean {
  for (let f = 0; f < plans.length; f++) {
    const mark = w.position;
    if (!writeField(w, payload, plans[f]!)) return false;
    if (keep !== undefined && !keep[f]) w.position = mark;
  }
  return true;
}

/** One field's value (nothing where it is null and may be). */
function writeField(w: ProtoWriter, payload: Buffer, plan: Plan): boolean {
  if (plan.kind === 'union' || plan.nullBranch >= 0) {
    const branch = unionBranch(payload, plan.nullBranch, plan.required);
    if (branch === refused) return false;
    if (branch === absent) return true;
    if (plan.kind === 'union') {
      // The branch's column alone in the union's record (the others are NULL: absent).
      const taken = plan.branches[branch];
      if (taken === undefined) return false;
      w.varint(plan.tag);
      const begun = w.begin();
      if (!writeValue(w, payload, taken)) return false;
      w.end(begun);
      return true;
    }
    if (branch !== 1 - plan.nullBranch) return false;
  }
  return writeValue(w, payload, plan);
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
    case 'array':
      return writeArray(w, payload, plan.item);
    case 'map':
      return writeMap(w, payload, plan);
    case 'decimal':
      return writeDecimal(w, payload, plan);
    case 'variable-scale': {
      const text = variableScaleText(payload, plan.plain);
      if (text === undefined) return false;
      w.varint(plan.tag);
      w.string(text);
      return true;
    }
    case 'enum':
    case 'fixed':
      return writeNamed(w, payload, plan);
    case 'union':
      return false; // read by writeFields
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
    case 'zoned':
    case 'string':
    case 'json':
    case 'bytes':
      return writeCounted(w, payload, plan.tag, plan.kind);
    default:
      return writeTemporal(w, payload, plan.tag, plan.kind);
  }
}

/**
 * A length, then the bytes: copied as they are (a string's must be UTF-8, JSON's text parse whole), or a
 * `ZonedTimestamp`'s text read where it stands, as microseconds where it is canonical UTC.
 */
function writeCounted(
  w: ProtoWriter,
  payload: Buffer,
  tag: number,
  kind: 'zoned' | 'string' | 'json' | 'bytes',
): boolean {
  const length = zigzag(payload);
  const start = at.pos;
  const end = start + length;
  if (at.bad || length < 0 || end > payload.length) return false;
  if (kind === 'zoned') {
    const micros = canonicalMicrosIn(payload, start, end);
    if (Number.isNaN(micros)) return false;
    w.varint(tag);
    w.integer(micros);
  } else if (kind === 'bytes') {
    w.varint(tag);
    w.delimitedFrom(payload, start, end);
  } else {
    if (kind === 'json' && !isJsonText(payload, start, end)) return false;
    w.varint(tag);
    if (!w.utf8From(payload, start, end)) return false;
  }
  at.pos = end;
  return true;
}

/** Timestamps as microseconds; DATETIME and TIME as the Storage Write API's civil text. */
function writeTemporal(w: ProtoWriter, payload: Buffer, tag: number, kind: Temporal): boolean {
  const micros = temporal(payload, kind);
  if (Number.isNaN(micros)) return false;
  w.varint(tag);
  if (kind === 'millis' || kind === 'micros' || kind === 'nanos') w.integer(micros);
  else if (isTimeOfDay(kind)) w.string(timeOfDayText(micros, timeDecimals(kind)));
  else if (!w.dateTime(micros)) {
    const text = isoMicros(micros);
    w.string(`${text.slice(0, 10)} ${text.slice(11)}`);
  }
  return true;
}

/** An enum (its index → its symbol's text) or a plain `fixed` (its size in bytes, copied). */
function writeNamed(
  w: ProtoWriter,
  payload: Buffer,
  plan: Extract<Plan, { kind: 'enum' | 'fixed' }>,
): boolean {
  if (plan.kind === 'enum') {
    const symbol = plan.symbols[zigzag(payload)];
    if (at.bad || symbol === undefined) return false;
    w.varint(plan.tag);
    w.bytes(symbol);
    return true;
  }
  const end = at.pos + plan.size;
  if (end > payload.length) return false;
  w.varint(plan.tag);
  w.delimitedFrom(payload, at.pos, end);
  at.pos = end;
  return true;
}

/** An array's blocks of items, ended by a block of none. */
function writeArray(w: ProtoWriter, payload: Buffer, item: Plan): boolean {
  let count = blockCount(payload);
  for (; count > 0; count = blockCount(payload))
    for (let i = 0; i < count; i++) if (!writeValue(w, payload, item)) return false;
  return count === 0;
}

/** A map's blocks of entries: each the general path's record of the key and the value. */
function writeMap(w: ProtoWriter, payload: Buffer, plan: Extract<Plan, { kind: 'map' }>): boolean {
  const seen = new Set<string>();
  let count = blockCount(payload);
  for (; count > 0; count = blockCount(payload))
    for (let i = 0; i < count; i++) {
      const start = mapKey(payload, seen);
      if (start < 0) return false;
      w.varint(plan.tag);
      const begun = w.begin();
      w.varint(plan.keyTag);
      w.delimitedFrom(payload, start, at.pos);
      if (!writeFields(w, payload, plan.value)) return false;
      w.end(begun);
    }
  return count === 0;
}

/** A decimal's bytes (`bytes`: their length first; `fixed`: its size) as the general path's exact text. */
function writeDecimal(w: ProtoWriter, payload: Buffer, plan: Extract<Plan, { kind: 'decimal' }>): boolean {
  const length = plan.size >= 0 ? plan.size : zigzag(payload);
  const end = at.pos + length;
  if (at.bad || length < 0 || end > payload.length) return false;
  if (plan.digits && length > 0 && length <= 6) {
    // Up to 6 bytes: a safe integer, written by digits.
    const unscaled = payload.readIntBE(at.pos, length);
    at.pos = end;
    w.varint(plan.tag);
    w.decimal(unscaled, plan.scale);
    return true;
  }
  const text = decimalText(payload.subarray(at.pos, end), plan.scale);
  if (!plan.plain.test(text)) return false;
  at.pos = end;
  w.varint(plan.tag);
  w.string(text);
  return true;
}
