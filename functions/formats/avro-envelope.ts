/**
 * Debezium's change events in Avro (the Confluent converter's envelope: `before`, `after`, `source`, `op`,
 * `ts_ms`, `transaction`), straight to the cdc table's row: the `after` record's fields are written as a
 * record's are (avro-rows.ts), the rest of the envelope is read past, and `op` must say the row was
 * created, read or updated (#42). Compiled once per writer schema and table. A record the path is not sure
 * of takes the general path (debezium.ts), which then gives it its fate: a delete, an event without
 * `after`, a value the row's plans refuse in `after` or in `before` (read by them and not kept: its
 * conversion there may refuse it), an envelope part of a type whose conversion could fail.
 */
import type { SchemaField } from '../schema/table-schema.js';
import type { ProtoWriter } from '../sinks/proto-writer.js';
import { inside, isObject, resolve, type Scope, scopeOf } from './avro-names.js';
import { fieldPlans, type Plan } from './avro-plans.js';
import { at, blockCount, zigzag } from './avro-read.js';
import { writeFields } from './avro-rows.js';
import { connectMapping } from './avro-types.js';
import type { CompiledRows } from './mapped.js';

/** Reads past one value at `at.pos`; false where it cannot be read. */
type Skip = (payload: Buffer) => boolean;

/** One envelope field: read past, the `before` row read (and not kept) or the `after` row written, `op` checked. */
type Step =
  | { readonly kind: 'skip'; readonly skip: Skip }
  | { readonly kind: 'before' | 'after'; readonly nullBranch: number; readonly plans: readonly Plan[] }
  | { readonly kind: 'op' };

/** Ops that upsert the `after` row: create, snapshot read, update (as `c`, `r`, `u` in UTF-8). */
const upsertOps = new Set([0x63, 0x72, 0x75]);

/**
 * The compiled rows of a Debezium envelope's writer schema into the cdc table (`target`: its columns,
 * metadata included, the `after` record's fields among them), or undefined where this path does not apply.
 */
export function compileEnvelopeRows(
  schema: unknown,
  target: readonly SchemaField[],
): CompiledRows | undefined {
  if (!isObject(schema) || !Array.isArray(schema.fields)) return undefined;
  const scope = scopeOf(schema);
  const steps: Step[] = [];
  for (const field of schema.fields as { name?: unknown; type?: unknown }[]) {
    const step = stepOf(field.name, field.type, target, scope);
    if (step === undefined) return undefined;
    steps.push(step);
  }
  if (
    steps.filter((s) => s.kind === 'after').length !== 1 ||
    steps.filter((s) => s.kind === 'op').length !== 1
  )
    return undefined;
  return (w, payload, start) => writeEnvelope(w, payload, start, steps);
}

function writeEnvelope(w: ProtoWriter, payload: Buffer, start: number, steps: readonly Step[]): boolean {
  at.pos = start;
  at.bad = false;
  for (const step of steps) {
    switch (step.kind) {
      case 'skip':
        if (!step.skip(payload)) return false;
        break;
      case 'before': {
        const branch = zigzag(payload);
        if (at.bad) return false;
        if (branch === step.nullBranch) break;
        // The row as it was, read by the row's plans (which refuse whatever the general path might) and
        // written where the next field's bytes then go: nothing of it is kept.
        const mark = w.position;
        if (!writeFields(w, payload, step.plans)) return false;
        w.position = mark;
        break;
      }
      case 'after':
        if (zigzag(payload) !== 1 - step.nullBranch || at.bad) return false;
        if (!writeFields(w, payload, step.plans)) return false;
        break;
      case 'op': {
        const length = zigzag(payload);
        if (at.bad || length !== 1 || at.pos >= payload.length) return false;
        if (!upsertOps.has(payload[at.pos++]!)) return false;
        break;
      }
    }
  }
  return at.pos === payload.length;
}

function stepOf(
  name: unknown,
  type: unknown,
  target: readonly SchemaField[],
  scope: Scope,
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
    return plans === undefined ? undefined : { kind: name, nullBranch, plans };
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
