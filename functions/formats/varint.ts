/**
 * Base-128 varints of up to 64 bits read without a bigint, as two 32-bit halves: Protobuf's wire values
 * and Avro's zigzag longs in the compiled paths (protobuf/scalars.ts, avro/read.ts) share this reader.
 */

/** Where reading stands, and the last varint read as two 32-bit halves. */
export const at = { pos: 0, lo: 0, hi: 0, wire: 0, tag: 0 };

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
