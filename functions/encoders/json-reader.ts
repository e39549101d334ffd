import { isUtf8 } from 'node:buffer';
import { canonicalMicrosIn, dateDaysIn } from './civil-time.js';
import { doubleOf, FALSE, type JsonCursor, NULL, plainDecimal, TRUE } from './json-cursor.js';
import {
  BOOL,
  DATE,
  DECIMAL,
  type FieldPlan,
  FLOAT64,
  INT64,
  type MessagePlan,
  RECORD,
  type Reading,
  STRING,
  TIMESTAMP,
} from './json-plans.js';
import type { ProtoWriter } from './proto-writer.js';
import { maxRecordBytes } from './row-shape.js';

/**
 * The one-pass reader of a record's JSON text against a route's shape: no `JSON.parse`, no row object, no
 * validation of a tree. It reads the records of the common kind only, and says no to any other (an escape
 * in a string, a number in another form, a value the table refuses, a duplicate key, anything it is not
 * sure of): the caller then takes the general path (parse, validate), so every record gets exactly the
 * fate that path gives it. As it reads, it writes each value's protocol buffer field (json-transcoder.ts)
 * or nothing (row-text.ts, where the record's own text becomes the row).
 */

/** What a record is read into: a row's protocol buffer writer, or nothing (a record only checked). */
export type Out = Pick<ProtoWriter, 'varint' | 'integer' | 'double' | 'delimitedFrom' | 'begin' | 'end'>;

/** Kafka timestamps whose microseconds are exact as a number (years 1685 to 2255); others take the general path. */
export const maxMs = 9e12;

/**
 * Reads a record's value (one record at a time, on one thread: the cursor is the caller's), writing its
 * fields to `w`: where its object opens, or -1 for a record left to the general path.
 */
export function readRecord(c: JsonCursor, value: Buffer | null, reading: Reading, w: Out): number {
  if (value === null || value.length > maxRecordBytes || !isUtf8(value)) return -1;
  c.reset(value);
  c.space();
  const open = c.at;
  if (c.bytes[open] !== 123 || !object(c, reading.root, w, reading)) return -1;
  c.space();
  return c.at === c.end ? open : -1;
}

/** At an object's `{`: its fields written (in the record's order), true when all went well. */
function object(c: JsonCursor, plan: MessagePlan, w: Out, reading: Reading): boolean {
  const stamp = ++plan.stamp;
  const { fields, seen, follows } = plan;
  // Producers write fields in one order: the next field is guessed (as it came in the records before),
  // and its name compared byte by byte; only a wrong guess makes a string of the name to look it up.
  let after = 0;
  c.at++;
  c.space();
  if (!c.take(125)) {
    for (;;) {
      const q = c.stringEnd();
      if (q < 0) return false;
      let index = -1;
      const next = follows[after]!;
      const guess = fields[next];
      if (guess !== undefined && c.matches(guess.key, c.at + 1, q)) index = next;
      else {
        const name = c.bytes.toString('utf8', c.at + 1, q);
        const found = plan.byName.get(name);
        if (found !== undefined) index = found;
        else if (!reading.ignoreUnknown || (plan === reading.root && reading.reserved.has(name)))
          return false;
      }
      c.at = q + 1;
      c.space();
      if (!c.take(58)) return false;
      c.space();
      if (index < 0) {
        if (!c.skip()) return false;
      } else {
        if (seen[index] === stamp) return false;
        seen[index] = stamp;
        const field = fields[index]!;
        if (c.bytes[c.at] === 110) {
          // null: nothing to write (a REPEATED one is empty), unless the column is REQUIRED.
          if (field.required || (field.repeated && reading.asText) || !c.literal(NULL)) return false;
        } else if (!(field.repeated ? items(c, field, w, reading) : one(c, field, w, reading))) return false;
        if (index !== next) follows[after] = index;
        after = index + 1;
      }
      c.space();
      if (c.take(44)) {
        c.space();
        continue;
      }
      if (!c.take(125)) return false;
      break;
    }
  }
  for (const r of plan.required) if (seen[r] !== stamp) return false;
  return true;
}

/** A REPEATED field's array (not null): each item written as a field of its own. */
function items(c: JsonCursor, f: FieldPlan, w: Out, reading: Reading): boolean {
  if (!c.take(91)) return false;
  c.space();
  if (c.take(93)) return true;
  for (;;) {
    if (c.bytes[c.at] === 110 || !one(c, f, w, reading)) return false;
    c.space();
    if (c.take(44)) {
      c.space();
      continue;
    }
    return c.take(93);
  }
}

/** One value of the field (not null). */
function one(c: JsonCursor, f: FieldPlan, w: Out, reading: Reading): boolean {
  switch (f.kind) {
    case STRING:
    case DECIMAL:
      return text(c, f, w);
    case INT64:
      return int64(c, f, w);
    case FLOAT64: {
      const q = c.numberEnd();
      if (q < 0) return false;
      const value = doubleOf(c.bytes, c.at, q);
      // As text: a value the general path's JSON.stringify would change (to null, or to 0).
      if (reading.asText && (!Number.isFinite(value) || Object.is(value, -0))) return false;
      w.varint(f.tag);
      w.double(value);
      c.at = q;
      return true;
    }
    case BOOL: {
      const value = c.bytes[c.at] === 116 && c.literal(TRUE);
      if (!value && !c.literal(FALSE)) return false;
      w.varint(f.tag);
      w.varint(value ? 1 : 0);
      return true;
    }
    case DATE:
    case TIMESTAMP:
      return civil(c, f, w);
    case RECORD: {
      if (c.bytes[c.at] !== 123) return false;
      w.varint(f.tag);
      const start = w.begin();
      if (!object(c, f.nested!, w, reading)) return false;
      w.end(start);
      return true;
    }
    default:
      return false;
  }
}

/** STRING (any text without escapes), NUMERIC and BIGNUMERIC (plain decimal text): the bytes as they are. */
function text(c: JsonCursor, f: FieldPlan, w: Out): boolean {
  const q = c.stringEnd();
  if (q < 0 || (f.kind === DECIMAL && !plainDecimal(c.bytes, c.at + 1, q, f.maxInteger, f.maxScale)))
    return false;
  w.varint(f.tag);
  w.delimitedFrom(c.bytes, c.at + 1, q);
  c.at = q + 1;
  return true;
}

/**
 * Whole numbers of up to 15 digits (exact as a double); fractions, exponents, -0, text and longer numbers
 * take the general path.
 */
function int64(c: JsonCursor, f: FieldPlan, w: Out): boolean {
  const q = c.numberEnd();
  const b = c.bytes;
  const negative = b[c.at] === 45;
  const from = negative ? c.at + 1 : c.at;
  if (q < 0 || q - from > 15) return false;
  let v = 0;
  for (let i = from; i < q; i++) {
    const d = b[i]! - 48;
    if (d < 0 || d > 9) return false;
    v = v * 10 + d;
  }
  if (negative && v === 0) return false;
  w.varint(f.tag);
  w.integer(negative ? -v : v);
  c.at = q;
  return true;
}

/**
 * DATE (`YYYY-MM-DD`) and TIMESTAMP in the canonical UTC form, read from the bytes as validation and the
 * encoder read their text.
 */
function civil(c: JsonCursor, f: FieldPlan, w: Out): boolean {
  const q = c.stringEnd();
  if (q < 0) return false;
  const n = f.kind === DATE ? dateDaysIn(c.bytes, c.at + 1, q) : canonicalMicrosIn(c.bytes, c.at + 1, q);
  if (Number.isNaN(n)) return false;
  w.varint(f.tag);
  w.integer(n);
  c.at = q + 1;
  return true;
}
