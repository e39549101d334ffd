/**
 * Avro's binary straight to a row's JSON text, for the modes that send rows as JSON (insert-all, merge,
 * load; #42): the same plans and the same reading as the compiled path to protocol buffer rows
 * (avro-rows.ts), each value written as the general path's row holds it after validation (exact integers,
 * `"NaN"` and the infinities as BigQuery's JSON strings, decimals as their exact text, dates and
 * timestamps in its text forms, bytes as base64), nulls left out (BigQuery reads a missing field as NULL
 * and a missing REPEATED as empty). Whatever the compiled path leaves to the general one, this does too
 * (undefined); `test/unit/avro-rows.test.ts` compares what BigQuery reads of both, record by record.
 */
import type { SchemaField } from '../schema/table-schema.js';
import { fieldPlans, maxDays, minDays, type Plan } from './avro-plans.js';
import { at, blockCount, mapKey, type Temporal, temporal, zigzag } from './avro-read.js';
import { decimalOf as decimalText, isoMicros } from './avro-types.js';
import { dateText, floatValue, isUtf8At, timeOfDayText } from './mapped.js';

/** A payload's fields as the members of a JSON object (no braces), or undefined: the general path's. */
export type AvroText = (payload: Buffer, start: number) => string | undefined;

/** The text of a writer schema's records onto `columns` (the table's user columns), or undefined. */
export function compileAvroText(schema: unknown, columns: readonly SchemaField[]): AvroText | undefined {
  const fields = fieldPlans(schema, columns, true);
  if (fields === undefined) return undefined;
  return (payload, start) => {
    at.pos = start;
    at.bad = false;
    const text = membersOf(payload, fields);
    return text !== undefined && at.pos === payload.length ? text : undefined;
  };
}

function membersOf(payload: Buffer, plans: readonly Plan[]): string | undefined {
  let out = '';
  for (let f = 0; f < plans.length; f++) {
    const plan = plans[f]!;
    if (plan.nullBranch >= 0) {
      const branch = zigzag(payload);
      if (at.bad) return undefined;
      if (branch === plan.nullBranch) {
        if (plan.required) return undefined;
        continue;
      }
      if (branch !== 1 - plan.nullBranch) return undefined;
    }
    const value = textOf(payload, plan);
    if (value === undefined) return undefined;
    out += out === '' ? `${plan.key}${value}` : `,${plan.key}${value}`;
  }
  return out;
}

function textOf(payload: Buffer, plan: Plan): string | undefined {
  switch (plan.kind) {
    case 'record': {
      const members = membersOf(payload, plan.fields);
      return members === undefined ? undefined : `{${members}}`;
    }
    case 'array':
      return arrayOf(payload, plan.item);
    case 'map':
      return mapOf(payload, plan);
    case 'boolean': {
      const byte = payload[at.pos++];
      return byte === 1 ? 'true' : byte === 0 ? 'false' : undefined;
    }
    case 'float':
    case 'double': {
      const size = plan.kind === 'float' ? 4 : 8;
      if (at.pos + size > payload.length) return undefined;
      const value = size === 4 ? payload.readFloatLE(at.pos) : payload.readDoubleLE(at.pos);
      at.pos += size;
      return JSON.stringify(floatValue(value));
    }
    case 'enum': {
      const text = plan.texts[zigzag(payload)];
      return at.bad ? undefined : text;
    }
    default:
      return plan.kind === 'fixed' ||
        plan.kind === 'decimal' ||
        plan.kind === 'string' ||
        plan.kind === 'bytes'
        ? bytesOf(payload, plan)
        : plan.kind === 'int' || plan.kind === 'long' || plan.kind === 'date'
          ? integerOf(payload, plan.kind)
          : temporalOf(payload, plan.kind);
  }
}

/** int, long and date: a zigzag varint, in the text the general path's row holds. */
function integerOf(payload: Buffer, kind: 'int' | 'long' | 'date'): string | undefined {
  const n = zigzag(payload);
  if (at.bad) return undefined;
  if (kind !== 'date') return String(n);
  return n < minDays || n > maxDays ? undefined : `"${dateText(n)}"`;
}

/** Timestamps (`…Z`), DATETIME (no zone) and TIME in BigQuery's text forms. */
function temporalOf(payload: Buffer, kind: Temporal): string | undefined {
  const micros = temporal(payload, kind);
  if (Number.isNaN(micros)) return undefined;
  if (kind === 'time-millis' || kind === 'time-micros')
    return `"${timeOfDayText(micros, kind === 'time-millis' ? 3 : 6)}"`;
  return kind === 'millis' || kind === 'micros' || kind === 'nanos'
    ? `"${isoMicros(micros)}Z"`
    : `"${isoMicros(micros)}"`;
}

/** Strings, bytes, fixed and decimals: their bytes (a length first, but for fixed), as text. */
function bytesOf(payload: Buffer, plan: Plan): string | undefined {
  const size = plan.kind === 'fixed' || (plan.kind === 'decimal' && plan.size >= 0) ? plan.size : -1;
  const length = size >= 0 ? size : zigzag(payload);
  const end = at.pos + length;
  if (at.bad || length < 0 || end > payload.length) return undefined;
  const start = at.pos;
  at.pos = end;
  switch (plan.kind) {
    case 'string':
      return isUtf8At(payload, start, end) ? JSON.stringify(payload.toString('utf8', start, end)) : undefined;
    case 'decimal': {
      const text = decimalText(payload.subarray(start, end), plan.scale);
      return plan.plain.test(text) ? `"${text}"` : undefined;
    }
    default:
      return `"${payload.toString('base64', start, end)}"`;
  }
}

/** An array's blocks of items, ended by a block of none. */
function arrayOf(payload: Buffer, item: Plan): string | undefined {
  let out = '';
  let count = blockCount(payload);
  for (; count > 0; count = blockCount(payload))
    for (let i = 0; i < count; i++) {
      const value = textOf(payload, item);
      if (value === undefined) return undefined;
      out += out === '' ? value : `,${value}`;
    }
  return count === 0 ? `[${out}]` : undefined;
}

/** A map's blocks of entries: the general path's records of the key and the value (a null one left out). */
function mapOf(payload: Buffer, plan: Extract<Plan, { kind: 'map' }>): string | undefined {
  const seen = new Set<string>();
  let out = '';
  let count = blockCount(payload);
  for (; count > 0; count = blockCount(payload))
    for (let i = 0; i < count; i++) {
      const start = mapKey(payload, seen);
      if (start < 0) return undefined;
      const key = JSON.stringify(payload.toString('utf8', start, at.pos));
      const value = membersOf(payload, plan.value);
      if (value === undefined) return undefined;
      const entry = `{${plan.keyMember}${key}${value === '' ? '' : `,${value}`}}`;
      out += out === '' ? entry : `,${entry}`;
    }
  return count === 0 ? `[${out}]` : undefined;
}
