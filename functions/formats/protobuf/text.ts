/**
 * A Protobuf payload straight to a row's JSON text, for the modes that send rows as JSON (insert-all,
 * merge, load; #42): the same plans and the same strict reading as the compiled path to protocol buffer
 * rows (protobuf/rows.ts), in one pass, each value written as the general path's row holds it after
 * validation (INT64 as a number where it is safe, else its exact text; uint64 as decimal text; enums as
 * their names; Timestamps in BigQuery's text form; bytes as base64; NaN and the infinities as BigQuery's
 * strings), absent presence fields left out (BigQuery reads a missing field as NULL). Whatever the
 * compiled path leaves to the general one, this does too (undefined); `test/unit/protobuf-rows.test.ts`
 * compares what BigQuery reads of both.
 */

import { JsonText } from '../../encoders/json-text.js';
import { floatValue, isoMicros } from '../mapped.js';
import type { FieldPlan, MessagePlan } from './plans.js';
import { at, entryAt, scanEntry, signed64, timestampMicros, varint, varint32, wrappedAt } from './scalars.js';
import { done, malformed, nextField } from './scan.js';
import { structText } from './struct.js';

/** The row's text as it is written (one record at a time). */
const out = new JsonText();

/**
 * The message from `start` to `end` as the members of a JSON object (no braces), as UTF-8 bytes good until
 * the next call (a view of the writer's buffer), or undefined.
 */
export function textMessage(p: Buffer, start: number, end: number, plan: MessagePlan): Buffer | undefined {
  out.reset();
  return members(p, start, end, plan) ? out.written() : undefined;
}

/**
 * The message's fields written as members as they come (a JSON object's members in any order), comma
 * between, the absent ones after them; false for a message left to the general path, a field given twice
 * or a repeated field's values apart included (protobuf merges those; the general path does).
 */
function members(p: Buffer, start: number, end: number, plan: MessagePlan): boolean {
  const { fields, slotOf, found, oneofSeen } = plan;
  found.fill(-1);
  oneofSeen.fill(-1);
  let open = -1; // the repeated field whose array is open
  let keys: Set<string> | undefined; // its keys so far, a map's
  let first = true;
  at.pos = start;
  for (;;) {
    const slot = nextField(p, end, slotOf);
    if (slot === malformed) return false;
    if (slot === done) break;
    const field = fields[slot]!;
    const wire = at.wire;
    if (slot !== open) {
      if (found[slot]! >= 0) return false;
      if (open >= 0) out.byte(93);
      if (!first) out.byte(44);
      first = false;
      found[slot] = 0;
      out.raw(field.key);
      open = field.repeated ? slot : -1;
      if (field.repeated) {
        out.byte(91);
        keys = field.kind === 'map' ? new Set() : undefined;
      } else {
        if (wire !== field.wire || (field.oneof >= 0 && oneofSeen[field.oneof]! >= 0)) return false;
        if (field.oneof >= 0) oneofSeen[field.oneof] = slot;
        if (!valueText(p, end, field)) return false;
        continue;
      }
    }
    if (!occurrenceText(p, end, field, wire, keys)) return false;
  }
  if (open >= 0) out.byte(93);
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    if (found[i]! >= 0 || field.repeated) continue;
    if (field.mustBePresent || (field.presence && field.required)) return false;
    if (field.presence) continue;
    if (!first) out.byte(44);
    first = false;
    out.raw(field.key);
    out.raw(defaultText(field));
  }
  return true;
}

/** One occurrence of a repeated field (a value, a map's entry, or a packed run) into its open array. */
function occurrenceText(p: Buffer, end: number, field: FieldPlan, wire: number, keys?: Set<string>) {
  if (wire === field.wire) return itemText(p, end, field, keys);
  if (wire !== 2 || !varint32(p, end) || at.hi !== 0) return false;
  const stop = at.pos + at.lo;
  if (stop > end) return false;
  while (at.pos < stop) if (!itemText(p, stop, field, keys)) return false;
  return true;
}

function itemText(p: Buffer, end: number, field: FieldPlan, keys?: Set<string>): boolean {
  if (out.last() !== 91) out.byte(44);
  return keys ? entryText(p, end, field, keys) : valueText(p, end, field);
}

/** A map entry as the general path's record: the key, then the value (absent: its default, or none). */
function entryText(p: Buffer, end: number, field: FieldPlan, seen: Set<string>): boolean {
  const value = field.entry!.value;
  if (!scanEntry(p, end, value, seen)) return false;
  const { keyStart, keyEnd, value: valueAt, stop } = entryAt;
  out.raw('{"key":');
  out.stringFrom(p, keyStart, keyEnd);
  let ok = true;
  if (valueAt >= 0) {
    out.byte(44);
    out.raw(value.key);
    at.pos = valueAt;
    ok = valueText(p, stop, value);
  } else if (!value.presence) {
    out.byte(44);
    out.raw(value.key);
    out.raw(defaultText(value));
  }
  at.pos = stop;
  out.byte(125);
  return ok;
}

/** The value a proto3 scalar reads as when absent, as JSON text. */
function defaultText(field: FieldPlan): string {
  switch (field.kind) {
    case 'bool':
      return 'false';
    case 'string':
    case 'bytes':
      return '""';
    case 'uint64':
    case 'fixed64':
      return '"0"';
    case 'enum': {
      const name = field.names!.get(0);
      return JSON.stringify(name === undefined ? '0' : name.toString());
    }
    default:
      return '0';
  }
}

/** One value at `at.pos` (after its tag). */
function valueText(p: Buffer, end: number, field: FieldPlan): boolean {
  switch (field.kind) {
    case 'int32':
    case 'uint32':
    case 'sint32':
    case 'enum':
    case 'bool':
      if (!varint32(p, end)) return false;
      text32(field, at.lo);
      return true;
    case 'int64':
    case 'sint64':
    case 'uint64':
      if (!varint(p, end)) return false;
      text64(field);
      return true;
    case 'fixed32':
    case 'sfixed32':
    case 'float':
      if (at.pos + 4 > end) return false;
      at.pos += 4;
      if (field.kind === 'float') out.raw(JSON.stringify(floatValue(p.readFloatLE(at.pos - 4))));
      else text32(field, p.readUInt32LE(at.pos - 4));
      return true;
    case 'fixed64':
    case 'sfixed64':
    case 'double':
      if (at.pos + 8 > end) return false;
      at.pos += 8;
      if (field.kind === 'double') out.raw(JSON.stringify(floatValue(p.readDoubleLE(at.pos - 8))));
      else {
        at.lo = p.readUInt32LE(at.pos - 8);
        at.hi = p.readUInt32LE(at.pos - 4);
        text64(field);
      }
      return true;
    default:
      return delimitedText(p, end, field);
  }
}

/** A 32-bit value (`bits`, unsigned) as its kind reads it. */
function text32(field: FieldPlan, bits: number): void {
  const kind = field.kind;
  if (kind === 'uint32' || kind === 'fixed32') out.integer(bits >>> 0);
  else if (kind === 'bool') out.raw(bits !== 0 ? 'true' : 'false');
  else if (kind === 'sint32') out.integer(((bits >>> 1) ^ -(bits & 1)) | 0);
  else if (kind === 'enum') {
    const name = field.names!.get(bits | 0);
    out.string(name === undefined ? String(bits | 0) : name.toString());
  } else out.integer(bits | 0);
}

/** A 64-bit value in `at.lo`/`at.hi`: INT64 a number where safe, else its exact text; uint64 decimal text. */
function text64(field: FieldPlan): void {
  if (field.kind === 'uint64' || field.kind === 'fixed64') {
    out.quoted(
      at.hi < 0x200000
        ? String(at.hi * 4294967296 + at.lo)
        : ((BigInt(at.hi) << 32n) | BigInt(at.lo)).toString(),
    );
    return;
  }
  const { lo, hi } = signed64(field.kind);
  const high = hi | 0;
  const n = high * 4294967296 + lo;
  if (high >= -0x200000 && high < 0x200000 && Number.isSafeInteger(n)) out.integer(n);
  else out.quoted(BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo)).toString());
}

/** Strings, bytes, nested messages, Timestamps and wrappers. */
function delimitedText(p: Buffer, end: number, field: FieldPlan): boolean {
  if (!varint32(p, end) || at.hi !== 0) return false;
  const start = at.pos;
  const stop = at.pos + at.lo;
  if (stop > end) return false;
  let ok = true;
  switch (field.kind) {
    case 'string':
      ok = out.utf8From(p, start, stop);
      break;
    case 'bytes':
      out.base64From(p, start, stop);
      break;
    case 'timestamp': {
      const micros = timestampMicros(p, start, stop);
      if (micros === undefined) ok = false;
      else if (!out.dateTime(micros, true)) out.quoted(`${isoMicros(micros)}Z`);
      break;
    }
    case 'struct': {
      const json = structText(p, start, stop, field.structKind!);
      if (json === undefined) ok = false;
      else out.string(json);
      break;
    }
    case 'wrapper': {
      const found = wrappedAt(p, start, stop, field.inner!);
      if (found === -1) out.raw(defaultText(field.inner!));
      else if (found >= 0) {
        at.pos = found;
        ok = valueText(p, stop, field.inner!);
      } else ok = false;
      break;
    }
    default:
      out.byte(123);
      ok = members(p, start, stop, field.message!);
      out.byte(125);
  }
  at.pos = stop;
  return ok;
}
