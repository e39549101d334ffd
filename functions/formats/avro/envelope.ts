/**
 * Debezium's change events in Avro (the Confluent converter's envelope: `before`, `after`, `source`, `op`,
 * `ts_ms`, `transaction`), straight to the cdc table's row (#42): for a row created, read or updated (`op`
 * `c`, `r`, `u`), the `after` record's fields written as a record's are (avro/rows.ts); for a row deleted
 * (`d`, `after` null), the primary key's columns of its `before` record, and `envelopeChange` says so. The
 * rest of the envelope is read past. Compiled once per writer schema, table and primary key. A record the
 * path is not sure of takes the general path (debezium.ts), which then gives it its fate: an event without
 * the row its op needs, a value the row's plans refuse in `after` or in `before` (read by them, its
 * columns beyond the key not kept: their conversion there may refuse it), an envelope part of a type whose
 * conversion could fail.
 */

import type { ProtoWriter } from '../../encoders/proto-writer.js';
import type { SchemaField } from '../../schema/table-schema.js';
import { type CompiledRows, envelopeChange } from '../mapped.js';
import type { ValueWriter } from './leaves.js';
import { inside, isObject, resolve, type Scope, scopeOf } from './names.js';
import { fieldPlans } from './plans.js';
import { at, blockCount, zigzag } from './read.js';
import { fieldWriters, writeFields } from './rows.js';
import { connectMapping } from './types.js';

/** Reads past one value at `at.pos`; false where it cannot be read. */
type Skip = (payload: Buffer) => boolean;

/** One envelope field: read past, the `before` row read (and not kept) or the `after` row written, `op` checked. */
type Step =
  | { readonly kind: 'skip'; readonly skip: Skip }
  | {
      readonly kind: 'before' | 'after';
      readonly nullBranch: number;
      /** The row's fields' writers (avro/rows.ts). */
      readonly fields: readonly ValueWriter[];
      /** Per field, whether its column is the primary key's (what a delete's row keeps of `before`). */
      readonly key: readonly boolean[];
    }
  | { readonly kind: 'op' };

/** Ops that upsert the `after` row: create, snapshot read, update (as `c`, `r`, `u` in UTF-8). */
const upsertOps = new Set([0x63, 0x72, 0x75]);
/** The op that deletes the `before` row's key (`d`). */
const deleteOp = 0x64;

/**
 * The compiled rows of a Debezium envelope's writer schema into the cdc table (`target`: its columns,
 * metadata included, the `after` record's fields among them), or undefined where this path does not apply.
 * Deletes are taken only when the table's primary key is given (its columns REQUIRED in `target`).
 */
export function compileEnvelopeRows(
  schema: unknown,
  target: readonly SchemaField[],
  primaryKey?: readonly string[],
): CompiledRows | undefined {
  if (!isObject(schema) || !Array.isArray(schema.fields)) return undefined;
  const scope = scopeOf(schema);
  const steps: Step[] = [];
  for (const field of schema.fields as { name?: unknown; type?: unknown }[]) {
    const step = stepOf(field.name, field.type, target, scope, primaryKey ?? []);
    if (step === undefined) return undefined;
    steps.push(step);
  }
  if (
    steps.filter((s) => s.kind === 'after').length !== 1 ||
    steps.filter((s) => s.kind === 'op').length !== 1
  )
    return undefined;
  const deletes = primaryKey !== undefined && primaryKey.length > 0;
  return (w, payload, start) => writeEnvelope(w, payload, start, steps, deletes);
}

function writeEnvelope(
  w: ProtoWriter,
  payload: Buffer,
  start: number,
  steps: readonly Step[],
  deletes: boolean,
): boolean {
  at.pos = start;
  at.bad = false;
  envelopeChange.deleted = false;
  // Where the `before` row's key columns stand in the message (-1: none written), and whether `after` was.
  let keyAt = -1;
  let after = false;
  for (const step of steps) {
    switch (step.kind) {
      case 'skip':
        if (!step.skip(payload)) return false;
        break;
      case 'before': {
        const branch = zigzag(payload);
        if (at.bad) return false;
        if (branch === step.nullBranch) break;
        // The row as it was, read by the row's writers (which refuse whatever the general path might), its
        // key's columns kept in the message for a delete; an `after` row written takes their place.
        const mark = w.position;
        if (!writeFields(w, payload, step.fields, step.key)) return false;
        if (after || !deletes) w.position = mark;
        else keyAt = mark;
        break;
      }
      case 'after': {
        const branch = zigzag(payload);
        if (at.bad) return false;
        if (branch === step.nullBranch) break;
        if (branch !== 1 - step.nullBranch) return false;
        if (keyAt >= 0) w.position = keyAt;
        keyAt = -1;
        after = true;
        if (!writeFields(w, payload, step.fields)) return false;
        break;
      }
      case 'op': {
        const length = zigzag(payload);
        if (at.bad || length !== 1 || at.pos >= payload.length) return false;
        const op = payload[at.pos++]!;
        if (op === deleteOp) envelopeChange.deleted = true;
        else if (!upsertOps.has(op)) return false;
        break;
      }
    }
  }
  if (at.pos !== payload.length) return false;
  // A delete: its `before` row's key alone (an `after` row with it: the general path's); an upsert: its `after`.
  if (envelopeChange.deleted) return keyAt >= 0 && !after;
  return after;
}

function stepOf(
  name: unknown,
  type: unknown,
  target: readonly SchemaField[],
  scope: Scope,
  primaryKey: readonly string[],
): Step | undefined {
  if (name === 'op') return type === 'string' ? { kind: 'op' } : undefined;
  if (name === 'before' || name === 'after') {
    // A union of null and the row's record (defined here, or named: Debezium defines it in `before`).
    if (!Array.isArray(type) || type.length !== 2) return undefined;
    const nullBranch = type.indexOf('null');
    if (nullBranch < 0) return undefined;
    const row = resolve(type[1 - nullBranch], scope);
    const within = inside(row, scope);
    const plans = within && fieldPlans(row, target, true, within);
    if (plans === undefined) return undefined;
    // fieldPlans makes one plan per field of the record, in its order.
    const fields = (row as { fields: { name: string }[] }).fields;
    return {
      kind: name,
      nullBranch,
      fields: fieldWriters(plans),
      key: fields.map((f) => primaryKey.includes(f.name)),
    };
  }
  const skip = skipOf(type, scope);
  return skip === undefined ? undefined : { kind: 'skip', skip };
}

/** A reader past values of a type whose conversion on the general path cannot fail; else undefined. */
function skipOf(type: unknown, scope: Scope): Skip | undefined {
  if (scope.depth > 16) return undefined;
  if (Array.isArray(type)) {
    const branches = type.map((t) => skipOf(t, scope));
    if (branches.some((b) => b === undefined)) return undefined;
    return (payload) => {
      const branch = zigzag(payload);
      return !at.bad && branch >= 0 && branch < branches.length && branches[branch]!(payload);
    };
  }
  if (typeof type === 'string') {
    const primitive = Object.hasOwn(primitiveSkips, type) ? primitiveSkips[type] : undefined;
    if (primitive !== undefined) return primitive;
    const named = resolve(type, scope);
    const within = inside(named, scope);
    return named === undefined || within === undefined ? undefined : skipOf(named, within);
  }
  if (!isObject(type)) return undefined;
  // Logical types and Debezium's semantic types (times, decimals, ...) are converted there: their
  // conversion may refuse a value, so they are not read past here.
  if (type.logicalType !== undefined) return undefined;
  if (
    typeof type['connect.name'] === 'string' &&
    connectMapping(type as Parameters<typeof connectMapping>[0])
  )
    return undefined;
  switch (type.type) {
    case 'record': {
      const fields = Array.isArray(type.fields) ? (type.fields as { type?: unknown }[]) : undefined;
      const within = inside(type, scope);
      const skips = within && fields?.map((f) => skipOf(f.type, within));
      if (skips === undefined || skips.some((s) => s === undefined)) return undefined;
      return (payload) => skips.every((s) => s!(payload));
    }
    case 'enum': {
      const count = Array.isArray(type.symbols) ? type.symbols.length : 0;
      return (payload) => {
        const index = zigzag(payload);
        return !at.bad && index >= 0 && index < count;
      };
    }
    case 'fixed':
      return Number.isInteger(type.size) ? sized(type.size as number) : undefined;
    case 'array': {
      // An array's null item is refused by the general path's conversion: arrays of unions are not read past.
      const item = Array.isArray(type.items) ? undefined : skipOf(type.items, scope);
      return item === undefined ? undefined : (payload) => blocks(payload, item);
    }
    default:
      return typeof type.type === 'string' && Object.hasOwn(primitiveSkips, type.type)
        ? primitiveSkips[type.type]
        : undefined;
  }
}

/** An array's blocks of items read past. */
function blocks(payload: Buffer, item: Skip): boolean {
  for (;;) {
    const count = blockCount(payload);
    if (count < 0) return false;
    if (count === 0) return true;
    for (let i = 0; i < count; i++) if (!item(payload)) return false;
  }
}

function sized(size: number): Skip {
  return (payload) => {
    at.pos += size;
    return at.pos <= payload.length;
  };
}

/** An int's or a long's zigzag varint. */
function varint(payload: Buffer): boolean {
  zigzag(payload);
  return !at.bad;
}

/** A string's or bytes' length, then its bytes. */
const counted: Skip = (payload) => {
  const length = zigzag(payload);
  if (at.bad || length < 0) return false;
  at.pos += length;
  return at.pos <= payload.length;
};

const primitiveSkips: Record<string, Skip> = {
  null: () => true,
  boolean: sized(1),
  int: varint,
  long: varint,
  float: sized(4),
  double: sized(8),
  string: counted,
  bytes: counted,
};
