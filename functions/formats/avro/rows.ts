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
import type { ProtoWriter } from '../../encoders/proto-writer.js';
import type { SchemaField } from '../../schema/table-schema.js';
import type { CompiledRows } from '../mapped.js';
import { leafWriter, type ValueWriter } from './leaves.js';
import { fieldPlans, type Plan } from './plans.js';
import { absent, at, blockCount, mapKey, refused, unionBranch } from './read.js';

export type AvroRows = CompiledRows;

/**
 * The compiled rows of a writer schema (Avro schema JSON) into a table (`target`: its columns, metadata
 * included, in the order that numbers the message's fields), or undefined where this path does not apply.
 */
export function compileAvroRows(schema: unknown, target: readonly SchemaField[]): AvroRows | undefined {
  const plans = fieldPlans(schema, target, true);
  if (plans === undefined) return undefined;
  const fields = fieldWriters(plans);
  return (w, payload, start) => {
    at.pos = start;
    at.bad = false;
    return writeFields(w, payload, fields) && at.pos === payload.length;
  };
}

/** A record's fields' writers, one per plan, in order (each writes nothing where its value is a null it may be). */
export function fieldWriters(plans: readonly Plan[]): ValueWriter[] {
  return plans.map(fieldWriter);
}

/**
 * A record's fields at `at.pos`, each by its writer (a Debezium envelope's rows too: avro/envelope.ts); with
 * `keep`, only the fields it marks stay in the message (the others are read, checked, and written over).
 */
export function writeFields(
  w: ProtoWriter,
  payload: Buffer,
  fields: readonly ValueWriter[],
  keep?: readonly boolean[],
): boolean {
  if (keep === undefined) {
    for (let f = 0; f < fields.length; f++) if (!fields[f]!(w, payload)) return false;
    return true;
  }
  for (let f = 0; f < fields.length; f++) {
    const mark = w.position;
    if (!fields[f]!(w, payload)) return false;
    if (!keep[f]) w.position = mark;
  }
  return true;
}

/** One field's writer: its value's, behind the union's index where it may be null (nothing written then). */
function fieldWriter(plan: Plan): ValueWriter {
  if (plan.kind === 'union') return unionWriter(plan);
  const value = valueWriter(plan);
  const { nullBranch, required } = plan;
  if (nullBranch < 0) return value;
  const other = 1 - nullBranch;
  return (w, payload) => {
    const branch = unionBranch(payload, nullBranch, required);
    if (branch === absent) return true;
    return branch === other && value(w, payload);
  };
}

/** A union of several types: the branch's column alone in the union's record (the others are NULL: absent). */
function unionWriter(plan: Extract<Plan, { kind: 'union' }>): ValueWriter {
  const { tag, nullBranch, required } = plan;
  const branches = plan.branches.map((b) => (b === undefined ? undefined : valueWriter(b)));
  return (w, payload) => {
    const branch = unionBranch(payload, nullBranch, required);
    if (branch === refused) return false;
    if (branch === absent) return true;
    const taken = branches[branch];
    if (taken === undefined) return false;
    w.varint(tag);
    const begun = w.begin();
    if (!taken(w, payload)) return false;
    w.end(begun);
    return true;
  };
}

function valueWriter(plan: Plan): ValueWriter {
  switch (plan.kind) {
    case 'record': {
      const { tag } = plan;
      const fields = fieldWriters(plan.fields);
      return (w, payload) => {
        w.varint(tag);
        const begun = w.begin();
        if (!writeFields(w, payload, fields)) return false;
        w.end(begun);
        return true;
      };
    }
    case 'array':
      return arrayWriter(valueWriter(plan.item));
    case 'map':
      return mapWriter(plan);
    case 'union':
      return () => false; // a union in a union: not planned (plans.ts)
    default:
      return leafWriter(plan);
  }
}

/** An array's blocks of items, ended by a block of none. */
function arrayWriter(item: ValueWriter): ValueWriter {
  return (w, payload) => {
    let count = blockCount(payload);
    for (; count > 0; count = blockCount(payload))
      for (let i = 0; i < count; i++) if (!item(w, payload)) return false;
    return count === 0;
  };
}

/** A map's blocks of entries: each the general path's record of the key and the value. */
function mapWriter(plan: Extract<Plan, { kind: 'map' }>): ValueWriter {
  const { tag, keyTag } = plan;
  const value = fieldWriters(plan.value);
  return (w, payload) => {
    const seen = new Set<string>();
    let count = blockCount(payload);
    for (; count > 0; count = blockCount(payload))
      for (let i = 0; i < count; i++) {
        const start = mapKey(payload, seen);
        if (start < 0) return false;
        w.varint(tag);
        const begun = w.begin();
        w.varint(keyTag);
        w.delimitedFrom(payload, start, at.pos);
        if (!writeFields(w, payload, value)) return false;
        w.end(begun);
      }
    return count === 0;
  };
}
