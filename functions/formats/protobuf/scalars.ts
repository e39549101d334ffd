/**
 * Reading a Protobuf payload's wire values strictly (varints as two 32-bit halves, skipping undeclared
 * fields) and writing the scalars as the general path does, for the compiled path (protobuf/rows.ts).
 */
import type { ProtoWriter } from '../../encoders/proto-writer.js';
import { keepsPlace } from '../mapped.js';
import { at, varint, varint32 } from '../varint.js';
import type { FieldPlan } from './plans.js';

export { at, varint, varint32 };

/** Skips a value of an undeclared field; false for groups and what runs past `end`. */
export function skip(p: Buffer, wire: number, end: number): boolean {
  switch (wire) {
    case 0:
      return varint(p, end);
    case 1:
      at.pos += 8;
      return at.pos <= end;
    case 2:
      if (!varint32(p, end) || at.hi !== 0) return false;
      at.pos += at.lo;
      return at.pos <= end;
    case 5:
      at.pos += 4;
      return at.pos <= end;
    default:
      return false;
  }
}

/** The kinds protobufjs reads as 32-bit varints (its own way with longer ones). */
export const narrow: Record<string, boolean> = {
  int32: true,
  uint32: true,
  sint32: true,
  enum: true,
  bool: true,
};

/** The default a proto3 scalar reads as when absent, as the general path writes it. */
export function writeDefault(w: ProtoWriter, field: FieldPlan): void {
  w.varint(field.tag);
  switch (field.kind) {
    case 'double':
    case 'float':
      w.double(0);
      return;
    case 'uint64':
    case 'fixed64':
      w.varint(1);
      w.varint(0x30); // "0"
      return;
    case 'enum': {
      const name = field.names!.get(0);
      if (name === undefined) {
        w.varint(1);
        w.varint(0x30);
      } else w.bytes(name);
      return;
    }
    default:
      // integers and bools: 0; strings and bytes: empty.
      w.varint(0);
  }
}

/** NaN as the one NaN the general path writes (a payload's NaN may carry other bits). */
export function canonical(value: number): number {
  return Number.isNaN(value) ? Number.NaN : value;
}

/** A 32-bit value (`bits`, unsigned) as its kind reads it. */
export function write32(w: ProtoWriter, field: FieldPlan, bits: number): boolean {
  w.varint(field.tag);
  switch (field.kind) {
    case 'uint32':
    case 'fixed32':
      w.varint(bits >>> 0);
      return true;
    case 'bool':
      w.varint(bits !== 0 ? 1 : 0);
      return true;
    case 'sint32':
      w.integer(((bits >>> 1) ^ -(bits & 1)) | 0);
      return true;
    case 'enum': {
      const number = bits | 0;
      const name = field.names!.get(number);
      if (name === undefined) w.string(String(number));
      else w.bytes(name);
      return true;
    }
    default:
      // int32, sfixed32: signed.
      w.integer(bits | 0);
      return true;
  }
}

/** A 64-bit value in `at.lo`/`at.hi` as its kind reads it: INT64's varint, or uint64's exact decimal text. */
export function write64(w: ProtoWriter, field: FieldPlan): boolean {
  w.varint(field.tag);
  if (field.kind === 'uint64' || field.kind === 'fixed64') {
    w.string(
      at.hi < 0x200000
        ? String(at.hi * 4294967296 + at.lo)
        : ((BigInt(at.hi) << 32n) | BigInt(at.lo)).toString(),
    );
    return true;
  }
  if (field.kind === 'sint64') {
    const mask = -(at.lo & 1);
    const low = (((at.lo >>> 1) | (at.hi << 31)) ^ mask) >>> 0;
    at.hi = ((at.hi >>> 1) ^ mask) >>> 0;
    at.lo = low;
  }
  w.varint64(at.lo, at.hi);
  return true;
}

/**
 * google.protobuf.Timestamp (seconds 1, nanos 2) from `start` to `stop` → microseconds, the nanoseconds
 * cut toward the past; undefined beyond what a double holds exactly (years about 1684–2255) or malformed.
 */
export function timestampMicros(p: Buffer, start: number, stop: number): number | undefined {
  let seconds = 0;
  let nanos = 0;
  at.pos = start;
  while (at.pos < stop) {
    if (!varint32(p, stop) || at.hi !== 0) return undefined;
    const number = at.lo >>> 3;
    const wire = at.lo & 7;
    if ((number === 1 || number === 2) && wire !== 0) return undefined;
    if (number === 1) {
      if (!varint(p, stop)) return undefined;
      // Beyond ±2^21 in the high half, the seconds are far outside what microseconds hold exactly.
      if (at.hi >= 0x200000 && at.hi < 0xffe00000) return undefined;
      seconds = (at.hi | 0) * 4294967296 + at.lo;
    } else if (number === 2) {
      if (!varint32(p, stop)) return undefined;
      nanos = at.lo | 0;
    } else if (number === 0 || !skip(p, wire, stop)) return undefined;
  }
  const micros = seconds * 1_000_000 + Math.floor(nanos / 1000);
  return Number.isSafeInteger(micros) ? micros : undefined;
}

/** Where a wrapper's value (field 1) starts from `start` to `stop`: -1 absent, -2 malformed. */
export function wrappedAt(p: Buffer, start: number, stop: number, inner: FieldPlan): number {
  let found = -1;
  at.pos = start;
  while (at.pos < stop) {
    if (!varint32(p, stop) || at.hi !== 0) return -2;
    const number = at.lo >>> 3;
    const wire = at.lo & 7;
    if (number === 1) {
      if (wire !== inner.wire) return -2;
      found = at.pos;
      if (wire === 0 && narrow[inner.kind] ? !varint32(p, stop) : !skip(p, wire, stop)) return -2;
    } else if (number === 0 || !skip(p, wire, stop)) return -2;
  }
  return found;
}

/** A 64-bit value in `at.lo`/`at.hi` as its kind reads it, signed (zigzag undone for sint64). */
export function signed64(kind: string): { lo: number; hi: number } {
  if (kind !== 'sint64') return { lo: at.lo, hi: at.hi };
  const mask = -(at.lo & 1);
  return { lo: (((at.lo >>> 1) | (at.hi << 31)) ^ mask) >>> 0, hi: ((at.hi >>> 1) ^ mask) >>> 0 };
}

/**
 * Every value of a repeated field from its first tag (`from`) to `end`, packed or not, in order: `each(stop)`
 * reads one at `at.pos` (not past `stop`). False when the reading or `each` fails.
 */
export function eachRepeated(
  p: Buffer,
  from: number,
  end: number,
  field: FieldPlan,
  each: (stop: number) => boolean,
): boolean {
  at.pos = from;
  while (at.pos < end) {
    if (!varint32(p, end) || at.hi !== 0) return false;
    const number = at.lo >>> 3;
    const wire = at.lo & 7;
    if (number !== field.number) {
      if (!skip(p, wire, end)) return false;
    } else if (wire === field.wire) {
      if (!each(end)) return false;
    } else {
      // Packed: a length, then the values one after another.
      if (!varint32(p, end) || at.hi !== 0) return false;
      const stop = at.pos + at.lo;
      if (stop > end) return false;
      while (at.pos < stop) if (!each(stop)) return false;
    }
  }
  return true;
}

/** A map entry as `scanEntry` found it: its key's bytes, where its value starts (-1: absent), its end. */
export const entryAt = { keyStart: 0, keyEnd: 0, value: -1, stop: 0 };

/**
 * The map entry at `at.pos` (its length first): key (1) and value (2), each at most once and in its own
 * wire type, unknown fields skipped; false for anything protobufjs might read otherwise (a field given
 * twice, another wire type) and for a key the general path's object would not keep as it is (`seen`: the
 * entry's map's keys so far).
 */
export function scanEntry(p: Buffer, end: number, value: FieldPlan, seen: Set<string>): boolean {
  if (!varint32(p, end) || at.hi !== 0) return false;
  const stop = at.pos + at.lo;
  if (stop > end) return false;
  let key = -1;
  entryAt.keyStart = entryAt.keyEnd = 0;
  entryAt.value = -1;
  entryAt.stop = stop;
  while (at.pos < stop) {
    if (!varint32(p, stop) || at.hi !== 0) return false;
    const number = at.lo >>> 3;
    const wire = at.lo & 7;
    if (number === 1) {
      if (wire !== 2 || key >= 0 || !varint32(p, stop) || at.hi !== 0) return false;
      key = entryAt.keyStart = at.pos;
      entryAt.keyEnd = at.pos += at.lo;
      if (at.pos > stop) return false;
    } else if (number === 2) {
      if (wire !== value.wire || entryAt.value >= 0) return false;
      entryAt.value = at.pos;
      if (!(wire === 0 && narrow[value.kind] ? varint32(p, stop) : skip(p, wire, stop))) return false;
    } else if (number === 0 || !skip(p, wire, stop)) return false;
  }
  return keepsPlace(p, entryAt.keyStart, entryAt.keyEnd, seen);
}
