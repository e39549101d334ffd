/**
 * Avro's binary straight to a row's JSON text, for the modes that send rows as JSON (insert-all, merge,
 * load; #42): the same plans and the same reading as the compiled path to protocol buffer rows
 * (avro/rows.ts), each value written as the general path's row holds it after validation (exact integers,
 * `"NaN"` and the infinities as BigQuery's JSON strings, decimals as their exact text, dates and
 * timestamps in its text forms, bytes as base64), nulls left out (BigQuery reads a missing field as NULL
 * and a missing REPEATED as empty). Whatever the compiled path leaves to the general one, this does too
 * (undefined); `test/unit/avro-rows.test.ts` compares what BigQuery reads of both, record by record.
 */
import { canonicalMicrosIn } from '../../encoders/civil-time.js';
import { isJsonText } from '../../encoders/json-cursor.js';
import { JsonText } from '../../encoders/json-text.js';
import type { SchemaField } from '../../schema/table-schema.js';
import { dateText, floatValue, isoMicros, timeOfDayText } from '../mapped.js';
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

/**
 * A payload's fields as the members of a JSON object (no braces), as UTF-8 bytes good until the next call
 * (a view of the writer's buffer), or undefined: the general path's.
 */
export type AvroText = (payload: Buffer, start: number) => Buffer | undefined;

/** The row's text as it is written (one record at a time). */
const out = new JsonText();

/** The text of a writer schema's records onto `columns` (the table's user columns), or undefined. */
export function compileAvroText(schema: unknown, columns: readonly SchemaField[]): AvroText | undefined {
  const fields = fieldPlans(schema, columns, true);
  if (fields === undefined) return undefined;
  return (payload, start) => {
    at.pos = start;
    at.bad = false;
    out.reset();
    return membersOf(payload, fields, true) && at.pos === payload.length ? out.written() : undefined;
  };
}

/** The fields as members, each after a comma but for the object's first (`first`: none written yet). */
function membersOf(payload: Buffer, plans: readonly Plan[], first: boolean): boolean {
  for (let f = 0; f < plans.length; f++) {
    const plan = plans[f]!;
    if (plan.kind === 'union' || plan.nullBranch >= 0) {
      const branch = unionBranch(payload, plan.nullBranch, plan.required);
      if (branch === refused) return false;
      if (branch === absent) continue;
      if (plan.kind === 'union') {
        // The branch's member alone in the union's object (the others are NULL: left out).
        const taken = plan.branches[branch];
        if (taken === undefined) return false;
        if (!first) out.byte(44);
        first = false;
        out.raw(plan.key!);
        out.byte(123);
        out.raw(taken.key!);
        if (!textOf(payload, taken)) return false;
        out.byte(125);
        continue;
      }
      if (branch !== 1 - plan.nullBranch) return false;
    }
    if (!first) out.byte(44);
    first = false;
    out.raw(plan.key!);
    if (!textOf(payload, plan)) return false;
  }
  return true;
}

function textOf(payload: Buffer, plan: Plan): boolean {
  switch (plan.kind) {
    case 'record':
      out.byte(123);
      if (!membersOf(payload, plan.fields, true)) return false;
      out.byte(125);
      return true;
    case 'array':
      return arrayOf(payload, plan.item);
    case 'map':
      return mapOf(payload, plan);
    case 'union':
      return false; // read by membersOf
    case 'boolean': {
      const byte = payload[at.pos++];
      if (byte !== 0 && byte !== 1) return false;
      out.raw(byte === 1 ? 'true' : 'false');
      return true;
    }
    case 'float':
    case 'double': {
      const size = plan.kind === 'float' ? 4 : 8;
      if (at.pos + size > payload.length) return false;
      const value = size === 4 ? payload.readFloatLE(at.pos) : payload.readDoubleLE(at.pos);
      at.pos += size;
      out.raw(JSON.stringify(floatValue(value)));
      return true;
    }
    case 'variable-scale': {
      const text = variableScaleText(payload, plan.plain);
      if (text === undefined) return false;
      out.quoted(text);
      return true;
    }
    case 'enum': {
      const text = plan.texts[zigzag(payload)];
      if (at.bad || text === undefined) return false;
      out.raw(text);
      return true;
    }
    default:
      return plan.kind === 'fixed' ||
        plan.kind === 'decimal' ||
        plan.kind === 'string' ||
        plan.kind === 'json' ||
        plan.kind === 'zoned' ||
        plan.kind === 'bytes'
        ? bytesOf(payload, plan)
        : plan.kind === 'int' || plan.kind === 'long' || plan.kind === 'date'
          ? integerOf(payload, plan.kind)
          : temporalOf(payload, plan.kind);
  }
}

/** int, long and date: a zigzag varint, in the text the general path's row holds. */
function integerOf(payload: Buffer, kind: 'int' | 'long' | 'date'): boolean {
  const n = zigzag(payload);
  if (at.bad) return false;
  if (kind !== 'date') out.integer(n);
  else if (n < minDays || n > maxDays) return false;
  else if (!out.date(n)) out.quoted(dateText(n));
  return true;
}

/** Timestamps (`…Z`), DATETIME (no zone) and TIME in BigQuery's text forms. */
function temporalOf(payload: Buffer, kind: Temporal): boolean {
  const micros = temporal(payload, kind);
  if (Number.isNaN(micros)) return false;
  if (isTimeOfDay(kind)) out.quoted(timeOfDayText(micros, timeDecimals(kind)));
  else {
    const zoned = kind === 'millis' || kind === 'micros' || kind === 'nanos';
    if (!out.dateTime(micros, zoned)) out.quoted(zoned ? `${isoMicros(micros)}Z` : isoMicros(micros));
  }
  return true;
}

/** Strings, bytes, fixed and decimals: their bytes (a length first, but for fixed), as text. */
function bytesOf(payload: Buffer, plan: Plan): boolean {
  const size = plan.kind === 'fixed' || (plan.kind === 'decimal' && plan.size >= 0) ? plan.size : -1;
  const length = size >= 0 ? size : zigzag(payload);
  const end = at.pos + length;
  if (at.bad || length < 0 || end > payload.length) return false;
  const start = at.pos;
  at.pos = end;
  switch (plan.kind) {
    case 'string':
    case 'json':
      // JSON's text as a string, as the general path's row holds it, where it parses.
      if (plan.kind === 'json' && !isJsonText(payload, start, end)) return false;
      return out.utf8From(payload, start, end);
    case 'zoned':
      // As it is, where it is canonical UTC (ASCII, nothing to escape); else the general path's.
      if (Number.isNaN(canonicalMicrosIn(payload, start, end))) return false;
      out.stringFrom(payload, start, end);
      return true;
    case 'decimal': {
      if (plan.digits && length > 0 && length <= 6) {
        out.decimal(payload.readIntBE(start, length), plan.scale);
        return true;
      }
      const text = decimalText(payload.subarray(start, end), plan.scale);
      if (!plan.plain.test(text)) return false;
      out.quoted(text);
      return true;
    }
    default:
      out.base64From(payload, start, end);
      return true;
  }
}

/** An array's blocks of items, ended by a block of none. */
function arrayOf(payload: Buffer, item: Plan): boolean {
  out.byte(91);
  let first = true;
  let count = blockCount(payload);
  for (; count > 0; count = blockCount(payload))
    for (let i = 0; i < count; i++) {
      if (!first) out.byte(44);
      first = false;
      if (!textOf(payload, item)) return false;
    }
  out.byte(93);
  return count === 0;
}

/** A map's blocks of entries: the general path's records of the key and the value (a null one left out). */
function mapOf(payload: Buffer, plan: Extract<Plan, { kind: 'map' }>): boolean {
  const seen = new Set<string>();
  out.byte(91);
  let first = true;
  let count = blockCount(payload);
  for (; count > 0; count = blockCount(payload))
    for (let i = 0; i < count; i++) {
      const start = mapKey(payload, seen);
      if (start < 0) return false;
      if (!first) out.byte(44);
      first = false;
      out.byte(123);
      out.raw(plan.keyMember);
      out.stringFrom(payload, start, at.pos);
      if (!membersOf(payload, plan.value, false)) return false;
      out.byte(125);
    }
  out.byte(93);
  return count === 0;
}
