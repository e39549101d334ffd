import { isUtf8 } from 'node:buffer';
import type { KafkaRecord } from '../drain/types.js';
import { canonicalMicrosIn, dateDaysIn } from '../records/civil-time.js';
import { ingestedText, keyText, maxRecordBytes, metadataColumns, type RowShape } from '../records/records.js';
import { doubleOf, FALSE, JsonCursor, NULL, plainDecimal, TRUE } from './json-cursor.js';
import type { ProtoWriter } from './proto-writer.js';
import type { SchemaField } from './table-schema.js';

/**
 * A record's JSON text straight to its row's protocol buffer bytes, in one pass over the bytes: no
 * `JSON.parse`, no row object, no validation of a tree, no second walk to encode it. It reads the records
 * of the common kind only, and says false for any other (an escape in a string, a number in another form,
 * a value the table refuses, a duplicate key, anything it is not sure of): the caller then takes the
 * general path (parse, validate, encode), so every record gets exactly the fate that path gives it, and
 * every row the same message (fields in the record's order, which protobuf does not mind).
 */
export type Transcode = (writer: ProtoWriter, record: KafkaRecord, ingestedMicros: number) => boolean;

/** What a record is read into: a row's protocol buffer writer, or nothing (a record only checked). */
type Out = Pick<ProtoWriter, 'varint' | 'integer' | 'double' | 'delimitedFrom' | 'begin' | 'end'>;

/** Writes nothing: the reading of a record only checks it (the row's JSON text is the record's own). */
class NoOut implements Out {
  varint(_value: number): void {}
  integer(_value: number): void {}
  double(_value: number): void {}
  delimitedFrom(_source: Uint8Array, _start: number, _end: number): void {}
  begin(): number {
    return 0;
  }
  end(_start: number): void {}
}

const STRING = 1;
const INT64 = 2;
const FLOAT64 = 3;
const BOOL = 4;
const DECIMAL = 5;
const DATE = 6;
const TIMESTAMP = 7;
const RECORD = 8;
/** Any other type: a record with a value for it takes the general path. */
const OTHER = 9;

interface FieldPlan {
  readonly key: Buffer;
  readonly tag: number;
  readonly kind: number;
  readonly repeated: boolean;
  readonly required: boolean;
  /** DECIMAL: digits before and after the point, at most (NUMERIC 29 and 9, BIGNUMERIC 38 and 38). */
  readonly maxInteger: number;
  readonly maxScale: number;
  readonly nested: MessagePlan | undefined;
}

interface MessagePlan {
  readonly fields: readonly FieldPlan[];
  readonly byName: ReadonlyMap<string, number>;
  readonly required: readonly number[];
  /** Per field, the object it was last seen in (a duplicate key is the general path's to judge). */
  readonly seen: Float64Array;
  stamp: number;
}

const kinds: Record<string, number> = {
  STRING,
  INTEGER: INT64,
  INT64,
  FLOAT: FLOAT64,
  FLOAT64,
  BOOLEAN: BOOL,
  BOOL,
  NUMERIC: DECIMAL,
  BIGNUMERIC: DECIMAL,
  DATE,
  TIMESTAMP,
  RECORD,
  STRUCT: RECORD,
};

const sameType = (a: string, b: string) =>
  (kinds[a.toUpperCase()] ?? a.toUpperCase()) === (kinds[b.toUpperCase()] ?? b.toUpperCase());

/** What a route's reading needs besides the plans: whether unknown fields are skipped, and which are not. */
interface Reading {
  readonly root: MessagePlan;
  readonly ignoreUnknown: boolean;
  readonly reserved: ReadonlySet<string>;
  /**
   * The record's text goes out as the row's JSON (insert-all, merge): a value whose text BigQuery would
   * read otherwise than the general path's row (a REPEATED null, which that path sends as [], and a
   * FLOAT64 too large for a double) is left to that path.
   */
  readonly asText: boolean;
}

/** The metadata columns' tags in the target's messages (-1: the key as text is not a column). */
interface MetadataTags {
  readonly topic: number;
  readonly partition: number;
  readonly offset: number;
  readonly timestamp: number;
  readonly key: number;
  readonly ingestedAt: number;
  readonly keyText: number;
}

/** Kafka timestamps whose microseconds are exact as a number (years 1685 to 2255); others take the general path. */
const maxMs = 9e12;

/**
 * The transcoder of a route's records into the target table's messages (`target`: its schema, metadata
 * included, whose field numbers the messages use), or undefined where this path does not apply: no
 * schema to check against, headers as a column, or a table whose columns differ from the shape's.
 */
export function compileTranscoder(
  shape: RowShape | undefined,
  target: readonly SchemaField[],
): Transcode | undefined {
  if (shape === undefined || shape.metadata?.headers === true) return undefined;
  const reserved = new Set<string>(metadataColumns);
  if (shape.fields.some((f) => reserved.has(f.name))) return undefined;
  const root = planMessage(shape.fields, target);
  const tag = (name: string, wire: number) => {
    const number = target.findIndex((f) => f.name === name) + 1;
    return number === 0 ? -1 : (number << 3) | wire;
  };
  const tags: MetadataTags = {
    topic: tag('_kafka_topic', 2),
    partition: tag('_kafka_partition', 0),
    offset: tag('_kafka_offset', 0),
    timestamp: tag('_kafka_timestamp', 0),
    key: tag('_kafka_key', 2),
    ingestedAt: tag('_ingested_at', 0),
    keyText: shape.metadata?.keyText === true ? tag('_kafka_key_text', 2) : -1,
  };
  const { keyText, ...always } = tags;
  if (root === undefined || Object.values(always).includes(-1)) return undefined;
  if (shape.metadata?.keyText === true && keyText === -1) return undefined;
  const reading: Reading = {
    root,
    ignoreUnknown: shape.unknownFields === 'ignore',
    reserved,
    asText: false,
  };
  // One record at a time, on one thread.
  const c = new JsonCursor();
  return (w, record, ingestedMicros) => {
    const v = record.value;
    if (v === null || v.length > maxRecordBytes || !isUtf8(v)) return false;
    c.reset(v);
    c.space();
    if (c.bytes[c.at] !== 123 || !object(c, root, w, reading)) return false;
    c.space();
    return c.at === c.end && metadata(w, tags, record, ingestedMicros);
  };
}

/**
 * A record's row as the JSON text of its object, for the modes whose rows go to BigQuery as JSON
 * (insert-all, merge), or undefined for a record this path leaves to the general one: the record is
 * read as the transcoder reads it, writing nothing, and a record it takes goes out as its own text with
 * the metadata columns put in front. It refuses what the transcoder refuses, and more: any field the
 * table does not have (skipped ones would be in the text), a REPEATED null, a FLOAT64 beyond a double or
 * of -0.
 * So a row's text holds only the table's columns, each value in a form BigQuery reads as the value the
 * general path's `JSON.stringify`d row gives it.
 */
export type RowText = (record: KafkaRecord, ingestedAt: Date) => string | undefined;

export function compileRowText(shape: RowShape | undefined): RowText | undefined {
  if (shape === undefined || shape.metadata?.headers === true) return undefined;
  const reserved = new Set<string>(metadataColumns);
  if (shape.fields.some((f) => reserved.has(f.name))) return undefined;
  const root = planMessage(shape.fields, shape.fields);
  if (root === undefined) return undefined;
  const reading: Reading = { root, ignoreUnknown: false, reserved, asText: true };
  const withKeyText = shape.metadata?.keyText === true;
  // One record at a time, on one thread.
  const c = new JsonCursor();
  const out = new NoOut();
  let topic = { name: '', json: '""' };
  return (record, ingestedAt) => {
    const v = record.value;
    if (v === null || v.length > maxRecordBytes || !isUtf8(v)) return undefined;
    c.reset(v);
    c.space();
    const open = c.at;
    if (c.bytes[open] !== 123 || !object(c, root, out, reading)) return undefined;
    c.space();
    const { timestamp, key } = record;
    if (c.at !== c.end || !Number.isSafeInteger(timestamp) || Math.abs(timestamp) >= maxMs) return undefined;
    if (record.topic !== topic.name) topic = { name: record.topic, json: JSON.stringify(record.topic) };
    c.at = open + 1;
    c.space();
    const empty = c.bytes[c.at] === 125;
    // The metadata as the general path makes it, then the record's members and its closing brace.
    return `{"_kafka_topic":${topic.json},"_kafka_partition":${record.partition},"_kafka_offset":${record.offset},"_kafka_timestamp":"${new Date(timestamp).toISOString()}","_kafka_key":${key === null ? 'null' : `"${key.toString('base64')}"`},"_ingested_at":"${ingestedText(ingestedAt)}"${withKeyText ? `,"_kafka_key_text":${JSON.stringify(keyText(key))}` : ''}${empty ? '' : ','}${v.toString('utf8', open + 1, v.length)}`;
  };
}

/** The metadata columns, from the record as the general path makes them; false for a record it leaves. */
function metadata(w: ProtoWriter, tags: MetadataTags, record: KafkaRecord, ingestedMicros: number): boolean {
  const { key, timestamp } = record;
  if (!Number.isSafeInteger(timestamp) || Math.abs(timestamp) >= maxMs) return false;
  // The key as text where it is UTF-8: the text's bytes are the key's (but for a leading BOM, which the
  // general path's decoder drops: that record takes it).
  const keyText = tags.keyText > 0 && key !== null && isUtf8(key);
  if (keyText && key[0] === 0xef && key[1] === 0xbb && key[2] === 0xbf) return false;
  w.varint(tags.topic);
  w.string(record.topic);
  w.varint(tags.partition);
  w.integer(record.partition);
  w.varint(tags.offset);
  w.integer(record.offset);
  w.varint(tags.timestamp);
  w.integer(timestamp * 1000);
  if (key !== null) {
    w.varint(tags.key);
    w.delimitedFrom(key, 0, key.length);
  }
  w.varint(tags.ingestedAt);
  w.integer(ingestedMicros);
  if (keyText) {
    w.varint(tags.keyText);
    w.delimitedFrom(key, 0, key.length);
  }
  return true;
}

/** At an object's `{`: its fields written (in the record's order), true when all went well. */
function object(c: JsonCursor, plan: MessagePlan, w: Out, reading: Reading): boolean {
  const stamp = ++plan.stamp;
  const { fields, seen } = plan;
  // Producers write fields in one order: the next field is guessed, and its name compared byte by byte;
  // only a wrong guess makes a string of the name to look it up.
  let next = 0;
  c.at++;
  c.space();
  if (!c.take(125)) {
    for (;;) {
      const q = c.stringEnd();
      if (q < 0) return false;
      let index = -1;
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
        next = index + 1;
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

function planMessage(shape: readonly SchemaField[], target: readonly SchemaField[]): MessagePlan | undefined {
  const fields: FieldPlan[] = [];
  for (const field of shape) {
    const index = target.findIndex((t) => t.name === field.name);
    const to = target[index];
    const mode = field.mode ?? 'NULLABLE';
    if (to === undefined || !sameType(to.type, field.type) || (to.mode ?? 'NULLABLE') !== mode)
      return undefined;
    const type = field.type.toUpperCase();
    const kind = kinds[type] ?? OTHER;
    let nested: MessagePlan | undefined;
    if (kind === RECORD) {
      nested = planMessage(field.fields ?? [], to.fields ?? []);
      if (nested === undefined) return undefined;
    }
    const wire = kind === FLOAT64 ? 1 : kind === STRING || kind === DECIMAL || kind === RECORD ? 2 : 0;
    fields.push({
      key: Buffer.from(field.name, 'utf8'),
      tag: ((index + 1) << 3) | wire,
      kind,
      repeated: mode === 'REPEATED',
      required: mode === 'REQUIRED',
      maxInteger: type === 'NUMERIC' ? 29 : 38,
      maxScale: type === 'NUMERIC' ? 9 : 38,
      nested,
    });
  }
  return {
    fields,
    byName: new Map(shape.map((f, i) => [f.name, i])),
    required: fields.flatMap((f, i) => (f.required ? [i] : [])),
    seen: new Float64Array(fields.length),
    stamp: 0,
  };
}
