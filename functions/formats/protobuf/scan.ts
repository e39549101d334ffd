/**
 * Where a Protobuf message's fields are: one pass over its bytes that finds each field's value (the last
 * one's, as protobufjs keeps it) and counts the repeated ones, reading every value as strictly as the one
 * that counts. The row and text paths then write the fields in the table's order from what it found
 * (protobuf/rows.ts, protobuf/text.ts). False for what protobufjs might read otherwise: a wire type the
 * field does not have, a message given twice, two members of one oneof, a malformed or truncated payload.
 */
import type { MessagePlan } from './plans.js';
import { at, narrow, skip, varint32 } from './scalars.js';

/** nextField at the end of the message. */
export const done = -1;
/** nextField on a tag, or a skipped value, protobufjs would not read. */
export const malformed = -2;

/**
 * The next field of the plan's message from `at.pos` to `end`, those it does not know skipped: its slot, with
 * its wire type in `at.wire` and where its tag starts in `at.tag` (`at.pos` after the tag); else `done` or
 * `malformed`.
 */
export function nextField(p: Buffer, end: number, slotOf: Int16Array): number {
  while (at.pos < end) {
    at.tag = at.pos;
    if (!varint32(p, end) || at.hi !== 0) return malformed;
    const number = at.lo >>> 3;
    at.wire = at.lo & 7;
    if (number === 0) return malformed;
    const slot = number < slotOf.length ? slotOf[number]! : -1;
    if (slot >= 0) return slot;
    if (!skip(p, at.wire, end)) return malformed;
  }
  return done;
}

/** Finds where each field's value is (the last one's, as protobufjs keeps it) and counts repeated ones. */
export function scan(p: Buffer, start: number, end: number, plan: MessagePlan): boolean {
  const { fields, slotOf, found, counts, oneofSeen } = plan;
  found.fill(-1);
  counts.fill(0);
  oneofSeen.fill(-1);
  at.pos = start;
  for (;;) {
    const slot = nextField(p, end, slotOf);
    if (slot < 0) return slot === done;
    const field = fields[slot]!;
    const wire = at.wire;
    if (field.repeated) {
      if (wire !== field.wire && !(wire === 2 && field.wire !== 2)) return false;
      if (counts[slot] === 0) found[slot] = at.tag;
      counts[slot] = counts[slot]! + 1;
    } else {
      if (wire !== field.wire) return false;
      // A message given twice: protobufjs decodes (and may refuse) the first; ours to leave to it.
      if (found[slot]! >= 0 && field.wire === 2 && field.kind !== 'string' && field.kind !== 'bytes')
        return false;
      found[slot] = at.pos;
      if (field.oneof >= 0) {
        const other = oneofSeen[field.oneof]!;
        if (other >= 0 && other !== slot) return false;
        oneofSeen[field.oneof] = slot;
      }
    }
    // An earlier value is read all the same: as strictly as the one that counts.
    if (!(wire === 0 && narrow[field.kind] ? varint32(p, end) : skip(p, wire, end))) return false;
  }
}
