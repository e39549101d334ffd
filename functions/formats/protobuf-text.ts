/**
 * A Protobuf payload straight to a row's JSON text, for the modes that send rows as JSON (insert-all,
 * merge, load; #42): the same plans, the same scan and the same strict reading as the compiled path to
 * protocol buffer rows (protobuf-rows.ts), each value written as the general path's row holds it after
 * validation (INT64 as a number where it is safe, else its exact text; uint64 as decimal text; enums as
 * their names; Timestamps in BigQuery's text form; bytes as base64; NaN and the infinities as BigQuery's
 * strings), absent presence fields left out (BigQuery reads a missing field as NULL). Whatever the
 * compiled path leaves to the general one, this does too (undefined); `test/unit/protobuf-rows.test.ts`
 * compares what BigQuery reads of both.
 */
import { isoMicros } from './avro-types.js';
import { floatValue, isUtf8At } from './mapped.js';
import type { FieldPlan, MessagePlan } from './protobuf-plans.js';
import { scan } from './protobuf-rows.js';
import {
  at,
  eachRepeated,
  entryAt,
  scanEntry,
  signed64,
  timestampMicros,
  varint,
  varint32,
  wrappedAt,
} from './protobuf-scalars.js';
import { structText } from './protobuf-struct.js';

/** The message from `start` to `end` as the members of a JSON object (no braces), or undefined. */
export function textMessage(p: Buffer, start: number, end: number, plan: MessagePlan): string | undefined {
  if (!scan(p, start, end, plan)) return undefined;
  const { fields, found, counts } = plan;
  let out = '';
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    let value: string | undefined;
    if (field.repeated) {
      if (counts[i] === 0) continue;
      value = repeatedText(p, found[i]!, end, field);
    } else if (found[i]! < 0) {
      if (field.mustBePresent || (field.presence && field.required)) return undefined;
      if (field.presence) continue;
      value = defaultText(field);
    } else {
      at.pos = found[i]!;
      value = valueText(p, end, field);
    }
    if (value === undefined) return undefined;
    out += out === '' ? `${field.key}${value}` : `,${field.key}${value}`;
  }
  return out;
}

/** Every occurrence of a repeated field from its first tag (`from`) to `end`, packed or not, as an array. */
function repeatedText(p: Buffer, from: number, end: number, field: FieldPlan): string | undefined {
  let out = '';
  const seen = new Set<string>();
  const read = eachRepeated(p, from, end, field, (stop) => {
    const value = field.kind === 'map' ? entryText(p, stop, field, seen) : valueText(p, stop, field);
    if (value === undefined) return false;
    out += out === '' ? value : `,${value}`;
    return true;
  });
  return read ? `[${out}]` : undefined;
}

/** A map entry as the general path's record: the key, then the value (absent: its default, or none). */
function entryText(p: Buffer, end: number, field: FieldPlan, seen: Set<string>): string | undefined {
  const value = field.entry!.value;
  if (!scanEntry(p, end, value, seen)) return undefined;
  const { keyStart, keyEnd, value: valueAt, stop } = entryAt;
  const key = JSON.stringify(p.toString('utf8', keyStart, keyEnd));
  let text: string | undefined = '';
  if (valueAt >= 0) {
    at.pos = valueAt;
    text = valueText(p, stop, value);
  } else if (!value.presence) text = defaultText(value);
  at.pos = stop;
  if (text === undefined) return undefined;
  return text === '' ? `{"key":${key}}` : `{"key":${key},${value.key}${text}}`;
}

/** The value a proto3 scalar reads as when absent. */
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
function valueText(p: Buffer, end: number, field: FieldPlan): string | undefined {
  switch (field.kind) {
    case 'int32':
    case 'uint32':
    case 'sint32':
    case 'enum':
    case 'bool':
      return varint32(p, end) ? text32(field, at.lo) : undefined;
    case 'int64':
    case 'sint64':
    case 'uint64':
      return varint(p, end) ? text64(field) : undefined;
    case 'fixed32':
    case 'sfixed32':
    case 'float':
      if (at.pos + 4 > end) return undefined;
      at.pos += 4;
      return field.kind === 'float'
        ? JSON.stringify(floatValue(p.readFloatLE(at.pos - 4)))
        : text32(field, p.readUInt32LE(at.pos - 4));
    case 'fixed64':
    case 'sfixed64':
    case 'double':
      if (at.pos + 8 > end) return undefined;
      at.pos += 8;
      if (field.kind === 'double') return JSON.stringify(floatValue(p.readDoubleLE(at.pos - 8)));
      at.lo = p.readUInt32LE(at.pos - 8);
      at.hi = p.readUInt32LE(at.pos - 4);
      return text64(field);
    default:
      return delimitedText(p, end, field);
  }
}

/** A 32-bit value (`bits`, unsigned) as its kind reads it. */
function text32(field: FieldPlan, bits: number): string {
  switch (field.kind) {
    case 'uint32':
    case 'fixed32':
      return String(bits >>> 0);
    case 'bool':
      return bits !== 0 ? 'true' : 'false';
    case 'sint32':
      return String(((bits >>> 1) ^ -(bits & 1)) | 0);
    case 'enum': {
      const name = field.names!.get(bits | 0);
      return JSON.stringify(name === undefined ? String(bits | 0) : name.toString());
    }
    default:
      return String(bits | 0);
  }
}

/** A 64-bit value in `at.lo`/`at.hi`: INT64 a number where safe, else its exact text; uint64 decimal text. */
function text64(field: FieldPlan): string {
  if (field.kind === 'uint64' || field.kind === 'fixed64')
    return `"${at.hi < 0x200000 ? String(at.hi * 4294967296 + at.lo) : ((BigInt(at.hi) << 32n) | BigInt(at.lo)).toString()}"`;
  const { lo, hi } = signed64(field.kind);
  const high = hi | 0;
  if (high >= -0x200000 && high < 0x200000) {
    const n = high * 4294967296 + lo;
    if (Number.isSafeInteger(n)) return String(n);
  }
  return `"${BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo)).toString()}"`;
}

/** Strings, bytes, nested messages, Timestamps and wrappers. */
function delimitedText(p: Buffer, end: number, field: FieldPlan): string | undefined {
  if (!varint32(p, end) || at.hi !== 0) return undefined;
  const start = at.pos;
  const stop = at.pos + at.lo;
  if (stop > end) return undefined;
  let text: string | undefined;
  switch (field.kind) {
    case 'string':
      text = isUtf8At(p, start, stop) ? JSON.stringify(p.toString('utf8', start, stop)) : undefined;
      break;
    case 'bytes':
      text = `"${p.toString('base64', start, stop)}"`;
      break;
    case 'timestamp': {
      const micros = timestampMicros(p, start, stop);
      text = micros === undefined ? undefined : `"${isoMicros(micros)}Z"`;
      break;
    }
    case 'struct': {
      const json = structText(p, start, stop, field.structKind!);
      text = json === undefined ? undefined : JSON.stringify(json);
      break;
    }
    case 'wrapper': {
      const found = wrappedAt(p, start, stop, field.inner!);
      if (found === -1) text = defaultText(field.inner!);
      else if (found >= 0) {
        at.pos = found;
        text = valueText(p, stop, field.inner!);
      }
      break;
    }
    default: {
      const members = textMessage(p, start, stop, field.message!);
      text = members === undefined ? undefined : `{${members}}`;
    }
  }
  at.pos = stop;
  return text;
}
