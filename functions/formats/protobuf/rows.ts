/**
 * A Protobuf payload straight to the table's protocol buffer row (#42): written as its fields come when
 * they come in the table's column order, else found first (protobuf/scan.ts) and written in that order,
 * under the columns' numbers. Strings, bytes and nested messages are copied or walked, never decoded to
 * objects; varints are re-encoded from their 64 bits; enums become their names, Timestamps microseconds,
 * wrappers their value, uint64 exact decimal text, in integer arithmetic; maps with text keys become the
 * general path's records of key and value. Compiled once per message type and table (protobuf/plans.ts).
 * The path reads strictly: anything protobufjs might read otherwise or refuse (a varint of odd length for
 * a 32-bit field, a wire type the field does not have, groups, two members of one oneof, a missing proto2
 * `required` field, text that is not UTF-8, a timestamp beyond the years 1684 to 2255, a null for a
 * REQUIRED column, a map key the general path's object would reorder or drop, a truncated payload) makes
 * it say false, and the record takes the general path (`test/unit/protobuf-rows.test.ts` compares both,
 * byte for byte, on randomized messages, declared in their numbers' order and not).
 */
import type { ProtoWriter } from '../../encoders/proto-writer.js';
import type { FieldPlan, MessagePlan } from './plans.js';
import {
  at,
  canonical,
  eachRepeated,
  entryAt,
  scanEntry,
  timestampMicros,
  varint,
  varint32,
  wrappedAt,
  write32,
  write64,
  writeDefault,
} from './scalars.js';
import { done, malformed, nextField, scan } from './scan.js';
import { structText } from './struct.js';

/**
 * Writes the message in `p` from `start` to `end` as the fields of the table's message: in one pass when
 * its fields come in the table's order (what serializers write when the table follows the message), else
 * by finding them first (scan) and writing them in that order. A plan whose payloads come out of order
 * 16 times more often than in order takes the two passes at once.
 */
export function writeMessage(
  w: ProtoWriter,
  p: Buffer,
  start: number,
  end: number,
  plan: MessagePlan,
): boolean {
  if (plan.unordered < maxUnordered) {
    const mark = w.position;
    const result = writeInOrder(w, p, start, end, plan);
    if (result === written && plan.unordered > 0) plan.unordered--;
    if (result !== unordered) return result === written;
    plan.unordered++;
    w.position = mark;
  }
  return scan(p, start, end, plan) && writeFields(w, p, end, plan);
}

const written = 1;
const general = 0;
const unordered = -1;
const maxUnordered = 16;

/**
 * One pass: each field written as it comes, the absent ones before it as writeFields writes them; a field
 * before one already written (a value given twice, a repeated field's values apart) → `unordered`.
 */
function writeInOrder(w: ProtoWriter, p: Buffer, start: number, end: number, plan: MessagePlan): number {
  const { fields, slotOf, oneofSeen } = plan;
  oneofSeen.fill(-1);
  let next = 0; // the first field not written yet
  let keys: Set<string> | undefined; // a map's keys so far
  at.pos = start;
  for (;;) {
    const slot = nextField(p, end, slotOf);
    if (slot === malformed) return general;
    if (slot === done) break;
    const field = fields[slot]!;
    const wire = at.wire;
    if (slot < next - 1 || (slot === next - 1 && !field.repeated)) return unordered;
    if (slot >= next) {
      for (; next < slot; next++) if (!writeAbsent(w, fields[next]!)) return general;
      next = slot + 1;
      keys = field.kind === 'map' ? new Set() : undefined;
    }
    if (
      field.repeated
        ? !writeOccurrence(w, p, end, field, wire, keys)
        : !writeOnce(w, p, end, field, wire, plan)
    )
      return general;
  }
  for (; next < fields.length; next++) if (!writeAbsent(w, fields[next]!)) return general;
  return written;
}

/** A field that is not repeated, in its own wire type, the only member of its oneof so far. */
function writeOnce(
  w: ProtoWriter,
  p: Buffer,
  end: number,
  field: FieldPlan,
  wire: number,
  plan: MessagePlan,
) {
  if (wire !== field.wire) return false;
  if (field.oneof >= 0) {
    if (plan.oneofSeen[field.oneof]! >= 0) return false;
    plan.oneofSeen[field.oneof] = 0;
  }
  return writeValue(w, p, end, field);
}

/** One occurrence of a repeated field: a value (a map's entry), or a packed run of them. */
function writeOccurrence(
  w: ProtoWriter,
  p: Buffer,
  end: number,
  field: FieldPlan,
  wire: number,
  keys: Set<string> | undefined,
): boolean {
  if (wire === field.wire) return keys ? writeEntry(w, p, end, field, keys) : writeValue(w, p, end, field);
  if (wire !== 2) return false;
  if (!varint32(p, end) || at.hi !== 0) return false;
  const stop = at.pos + at.lo;
  if (stop > end) return false;
  while (at.pos < stop) if (!writeValue(w, p, stop, field)) return false;
  return true;
}

/** A field the payload lacks: its default, nothing (it has presence), or false (it must be there). */
function writeAbsent(w: ProtoWriter, field: FieldPlan): boolean {
  if (field.repeated) return true;
  if (field.mustBePresent || (field.presence && field.required)) return false;
  if (!field.presence) writeDefault(w, field);
  return true;
}

/**
 * The fields in the table's order. A nested message's plan has scratch of its own (a type never nests in
 * itself), so this one's `found` stays as the scan left it while nested ones are written.
 */
function writeFields(w: ProtoWriter, p: Buffer, end: number, plan: MessagePlan): boolean {
  const { fields, found, counts } = plan;
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    if (field.repeated) {
      if (counts[i]! > 0 && !writeRepeated(w, p, found[i]!, end, field)) return false;
      continue;
    }
    if (found[i]! < 0) {
      if (!writeAbsent(w, field)) return false;
      continue;
    }
    at.pos = found[i]!;
    if (!writeValue(w, p, end, field)) return false;
  }
  return true;
}

/** Every occurrence of a repeated field from its first tag (`from`) to `end`, packed or not. */
function writeRepeated(w: ProtoWriter, p: Buffer, from: number, end: number, field: FieldPlan): boolean {
  if (field.kind !== 'map') return eachRepeated(p, from, end, field, (stop) => writeValue(w, p, stop, field));
  const seen = new Set<string>();
  return eachRepeated(p, from, end, field, (stop) => writeEntry(w, p, stop, field, seen));
}

/** A map entry as the general path's record: the key, then the value (absent: its default, or none). */
function writeEntry(w: ProtoWriter, p: Buffer, end: number, field: FieldPlan, seen: Set<string>): boolean {
  const { keyTag, value } = field.entry!;
  if (!scanEntry(p, end, value, seen)) return false;
  const { keyStart, keyEnd, value: valueAt, stop } = entryAt;
  w.varint(field.tag);
  const begun = w.begin();
  w.varint(keyTag);
  w.delimitedFrom(p, keyStart, keyEnd);
  if (valueAt >= 0) {
    at.pos = valueAt;
    if (!writeValue(w, p, stop, value)) return false;
  } else if (!value.presence) writeDefault(w, value);
  w.end(begun);
  at.pos = stop;
  return true;
}

/** One value at `at.pos` (after its tag), written under the column's tag. */
function writeValue(w: ProtoWriter, p: Buffer, end: number, field: FieldPlan): boolean {
  switch (field.kind) {
    case 'int32':
    case 'uint32':
    case 'sint32':
    case 'enum':
    case 'bool':
      if (!varint32(p, end)) return false;
      return write32(w, field, at.lo);
    case 'int64':
    case 'sint64':
    case 'uint64':
      if (!varint(p, end)) return false;
      return write64(w, field);
    case 'fixed32':
    case 'sfixed32':
    case 'float':
      if (at.pos + 4 > end) return false;
      at.pos += 4;
      if (field.kind === 'float') {
        w.varint(field.tag);
        w.double(canonical(p.readFloatLE(at.pos - 4)));
        return true;
      }
      return write32(w, field, p.readUInt32LE(at.pos - 4));
    case 'fixed64':
    case 'sfixed64':
    case 'double':
      if (at.pos + 8 > end) return false;
      if (field.kind === 'double') {
        w.varint(field.tag);
        w.double(canonical(p.readDoubleLE(at.pos)));
        at.pos += 8;
        return true;
      }
      at.lo = p.readUInt32LE(at.pos);
      at.hi = p.readUInt32LE(at.pos + 4);
      at.pos += 8;
      return write64(w, field);
    default:
      return writeDelimited(w, p, end, field);
  }
}

/** Strings and bytes copied; nested messages, Timestamps and wrappers walked. */
function writeDelimited(w: ProtoWriter, p: Buffer, end: number, field: FieldPlan): boolean {
  if (!varint32(p, end) || at.hi !== 0) return false;
  const start = at.pos;
  const stop = at.pos + at.lo;
  if (stop > end) return false;
  switch (field.kind) {
    case 'string':
      w.varint(field.tag);
      if (!w.utf8From(p, start, stop)) return false;
      break;
    case 'bytes':
      w.varint(field.tag);
      w.delimitedFrom(p, start, stop);
      break;
    case 'timestamp':
      if (!writeTimestamp(w, p, start, stop, field)) return false;
      break;
    case 'wrapper':
      if (!writeWrapper(w, p, start, stop, field.inner!)) return false;
      break;
    case 'struct': {
      const text = structText(p, start, stop, field.structKind!);
      if (text === undefined) return false;
      w.varint(field.tag);
      w.string(text);
      break;
    }
    default: {
      w.varint(field.tag);
      const begun = w.begin();
      if (!writeMessage(w, p, start, stop, field.message!)) return false;
      w.end(begun);
    }
  }
  at.pos = stop;
  return true;
}

/** google.protobuf.Timestamp → microseconds (timestampMicros), under the field's column. */
function writeTimestamp(w: ProtoWriter, p: Buffer, start: number, stop: number, field: FieldPlan): boolean {
  const micros = timestampMicros(p, start, stop);
  if (micros === undefined) return false;
  w.varint(field.tag);
  w.integer(micros);
  return true;
}

/** A wrapper's value (field 1; absent: its default) under the wrapper field's column. */
function writeWrapper(w: ProtoWriter, p: Buffer, start: number, stop: number, inner: FieldPlan): boolean {
  const found = wrappedAt(p, start, stop, inner);
  if (found === -2) return false;
  if (found === -1) {
    writeDefault(w, inner);
    return true;
  }
  at.pos = found;
  return writeValue(w, p, stop, inner);
}
