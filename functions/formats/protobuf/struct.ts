/**
 * google.protobuf.Struct, Value and ListValue straight to the JSON text they stand for, as the general path
 * writes it (protobufjs's `toObject` with `json: true`, then `JSON.stringify`): a Struct's fields in the
 * payload's order, numbers as JavaScript prints them (NaN and the infinities as strings, as `toObject`
 * gives them), a Value with no kind as null. For the compiled paths (protobuf/rows.ts, protobuf/text.ts).
 * Anything protobufjs might read otherwise (a field given twice, two kinds in one Value, an entry with no
 * value, a key its object would reorder or drop, another wire type, nesting past 50) gives undefined: the
 * general path's.
 */
import { isUtf8At } from '../mapped.js';
import type { FieldPlan, StructKind } from './plans.js';
import { at, entryAt, scanEntry, skip, varint32 } from './scalars.js';

/** How deep Structs, Values and ListValues may nest here (protobufjs's own limit is higher). */
const maxDepth = 50;

/** A map entry's value as `scanEntry` reads it: a message (a Value). */
const valueOfEntry = { wire: 2, kind: 'message' } as FieldPlan;

/** The message from `start` to `stop` (a Struct, Value or ListValue) as JSON text, or undefined. */
export function structText(
  p: Buffer,
  start: number,
  stop: number,
  kind: StructKind,
  depth = 0,
): string | undefined {
  if (depth > maxDepth) return undefined;
  if (kind === 'Value') return valueText(p, start, stop, depth);
  const list = kind === 'ListValue';
  const seen = new Set<string>();
  let out = '';
  at.pos = start;
  while (at.pos < stop) {
    if (!varint32(p, stop) || at.hi !== 0) return undefined;
    const number = at.lo >>> 3;
    const wire = at.lo & 7;
    if (number !== 1) {
      if (number === 0 || !skip(p, wire, stop)) return undefined;
      continue;
    }
    if (wire !== 2) return undefined;
    let item: string | undefined;
    if (list) {
      if (!varint32(p, stop) || at.hi !== 0 || at.pos + at.lo > stop) return undefined;
      const end = at.pos + at.lo;
      item = valueText(p, at.pos, end, depth + 1);
      at.pos = end;
    } else {
      if (!scanEntry(p, stop, valueOfEntry, seen) || entryAt.value < 0) return undefined;
      const { keyStart, keyEnd, stop: entryEnd } = entryAt;
      at.pos = entryAt.value;
      if (!varint32(p, entryEnd) || at.hi !== 0 || at.pos + at.lo > entryEnd) return undefined;
      const value = valueText(p, at.pos, at.pos + at.lo, depth + 1);
      item =
        value === undefined ? undefined : `${JSON.stringify(p.toString('utf8', keyStart, keyEnd))}:${value}`;
      at.pos = entryEnd;
    }
    if (item === undefined) return undefined;
    out += out === '' ? item : `,${item}`;
  }
  return list ? `[${out}]` : `{${out}}`;
}

/** A Value's one kind as JSON text: null (none, or null_value), a number, a string, a bool, a Struct or a list. */
function valueText(p: Buffer, start: number, stop: number, depth: number): string | undefined {
  if (depth > maxDepth) return undefined;
  let text = 'null';
  let kinds = 0;
  at.pos = start;
  while (at.pos < stop) {
    if (!varint32(p, stop) || at.hi !== 0) return undefined;
    const number = at.lo >>> 3;
    const wire = at.lo & 7;
    if (number < 1 || number > 6) {
      if (number === 0 || !skip(p, wire, stop)) return undefined;
      continue;
    }
    if (++kinds > 1) return undefined;
    if (number === 1 || number === 4) {
      // null_value (an enum), bool_value: varints as protobufjs reads 32-bit ones.
      if (wire !== 0 || !varint32(p, stop)) return undefined;
      if (number === 4) text = at.lo !== 0 ? 'true' : 'false';
    } else if (number === 2) {
      if (wire !== 1 || at.pos + 8 > stop) return undefined;
      const n = p.readDoubleLE(at.pos);
      at.pos += 8;
      text = Number.isFinite(n) ? JSON.stringify(n) : `"${String(n)}"`;
    } else {
      if (wire !== 2 || !varint32(p, stop) || at.hi !== 0 || at.pos + at.lo > stop) return undefined;
      const begin = at.pos;
      const end = at.pos + at.lo;
      if (number === 3) {
        if (!isUtf8At(p, begin, end)) return undefined;
        text = JSON.stringify(p.toString('utf8', begin, end));
      } else {
        const nested = structText(p, begin, end, number === 5 ? 'Struct' : 'ListValue', depth + 1);
        if (nested === undefined) return undefined;
        text = nested;
      }
      at.pos = end;
    }
  }
  return text;
}
