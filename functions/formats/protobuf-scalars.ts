/**
 * Reading a Protobuf payload's wire values strictly (varints as two 32-bit halves, skipping undeclared
 * fields) and writing the scalars as the general path does, for the compiled path (protobuf-rows.ts).
 */
import type { ProtoWriter } from '../sinks/proto-writer.js';
import type { FieldPlan } from './protobuf-plans.js';

/** Where reading stands, and the last varint read as two 32-bit halves. */
export const at = { pos: 0, lo: 0, hi: 0 };

/** A varint of up to 10 bytes into `at.lo`/`at.hi`; false when it runs past `end` or is longer. */
export function varint(p: Buffer, end: number): boolean {
  let low = 0;
  let b = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    if (at.pos >= end) return false;
    b = p[at.pos++]!;
    low |= (b & 0x7f) << shift;
    if (b < 0x80) {
      at.lo = low >>> 0;
      at.hi = 0;
      return true;
    }
  }
  if (at.pos >= end) return false;
  b = p[at.pos++]!;
  at.lo = (low | ((b & 0x0f) << 28)) >>> 0;
  let high = (b & 0x7f) >> 4;
  if (b < 0x80) {
    at.hi = high;
    return true;
  }
  for (let shift = 3; shift < 38; shift += 7) {
    if (at.pos >= end) return false;
    b = p[at.pos++]!;
    if (shift === 31 && b > 1) return false; // bits beyond 64
    high |= (b & 0x7f) << shift;
    if (b < 0x80) {
      at.hi = high >>> 0;
      return true;
    }
  }
  return false;
}

/**
 * A varint read for a 32-bit field as protobufjs reads it (the low 32 bits): up to 5 bytes that fit, or
 * the 10 bytes of a sign-extended negative; anything else is not ours to judge.
 */
export function varint32(p: Buffer, end: number): boolean {
  const start = at.pos;
  if (!varint(p, end)) return false;
  const length = at.pos - start;
  if (length <= 5) return at.hi === 0;
  return length === 10 && at.hi === 0xffffffff && at.lo >= 0x80000000;
}

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
