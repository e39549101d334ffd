import { isUtf8 } from 'node:buffer';
import type { KafkaRecord } from '../drain/types.js';
import { canonicalUtc, validDateAt } from '../records/civil-time.js';
import { maxRecordBytes, metadataColumns, type RowShape } from '../records/records.js';
import type { ProtoWriter } from './proto-writer.js';
import { daysFromCivil, epochMicrosOf } from './row-encoder.js';
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
  const number = (name: string) => target.findIndex((f) => f.name === name) + 1;
  const meta = [
    '_kafka_topic',
    '_kafka_partition',
    '_kafka_offset',
    '_kafka_timestamp',
    '_kafka_key',
    '_ingested_at',
  ];
  if (root === undefined || meta.some((name) => number(name) === 0)) return undefined;
  const [topicTag, partitionTag, offsetTag, timestampTag, keyTag, ingestedTag] = meta.map(
    (name) => (number(name) << 3) | 0,
  ) as [number, number, number, number, number, number];
  const delimited = (tag: number) => tag | 2;
  const keyText = shape.metadata?.keyText === true ? number('_kafka_key_text') : -1;
  if (keyText === 0) return undefined;
  const keyTextTag = delimited(keyText << 3);
  const ignoreUnknown = shape.unknownFields === 'ignore';

  // The bytes being read and where: one record at a time, on one thread.
  let b: Buffer = Buffer.alloc(0);
  let n = 0;
  let p = 0;

  const ws = (): void => {
    let c = b[p];
    while (c === 32 || c === 10 || c === 13 || c === 9) c = b[++p];
  };

  /** At a string's opening quote: the index of its closing one, or -1 (an escape, a control character). */
  const stringEnd = (): number => {
    const bytes = b;
    if (bytes[p] !== 34) return -1;
    for (let q = p + 1, end = n; q < end; q++) {
      const c = bytes[q]!;
      if (c === 34) return q;
      if (c === 92 || c < 32) return -1;
    }
    return -1;
  };

  /** At a number: past the end of its JSON form, or -1 when it is not one. */
  const numberEnd = (): number => {
    let q = p;
    if (b[q] === 45) q++;
    if (b[q] === 48) q++;
    else {
      const start = q;
      while (isDigit(b[q])) q++;
      if (q === start) return -1;
    }
    if (b[q] === 46) {
      const start = ++q;
      while (isDigit(b[q])) q++;
      if (q === start) return -1;
    }
    if (b[q] === 101 || b[q] === 69) {
      q++;
      if (b[q] === 43 || b[q] === 45) q++;
      const start = q;
      while (isDigit(b[q])) q++;
      if (q === start) return -1;
    }
    return q;
  };

  const literal = (text: readonly number[]): boolean => {
    for (let i = 0; i < text.length; i++) if (b[p + i] !== text[i]) return false;
    p += text.length;
    return true;
  };

  const matches = (key: Buffer, start: number, end: number): boolean => {
    if (key.length !== end - start) return false;
    for (let i = 0; i < key.length; i++) if (key[i] !== b[start + i]) return false;
    return true;
  };

  /** Skips any JSON value (an unknown field where unknown fields are ignored). */
  const skip = (depth: number): boolean => {
    if (depth > 64) return false;
    const c = b[p];
    if (c === 34) {
      const q = stringEnd();
      if (q < 0) return false;
      p = q + 1;
      return true;
    }
    if (c === 123 || c === 91) {
      const close = c === 123 ? 125 : 93;
      p++;
      if (b[p]! <= 32) ws();
      if (b[p] === close) {
        p++;
        return true;
      }
      for (;;) {
        if (c === 123) {
          const q = stringEnd();
          if (q < 0) return false;
          p = q + 1;
          if (b[p]! <= 32) ws();
          if (b[p] !== 58) return false;
          p++;
          if (b[p]! <= 32) ws();
        }
        if (!skip(depth + 1)) return false;
        if (b[p]! <= 32) ws();
        if (b[p] === 44) {
          p++;
          if (b[p]! <= 32) ws();
          continue;
        }
        if (b[p] !== close) return false;
        p++;
        return true;
      }
    }
    if (c === 116) return literal(TRUE);
    if (c === 102) return literal(FALSE);
    if (c === 110) return literal(NULL);
    const q = numberEnd();
    if (q < 0) return false;
    p = q;
    return true;
  };

  const one = (f: FieldPlan, w: ProtoWriter): boolean => {
    switch (f.kind) {
      case STRING: {
        const q = stringEnd();
        if (q < 0) return false;
        w.varint(f.tag);
        w.delimitedFrom(b, p + 1, q);
        p = q + 1;
        return true;
      }
      case INT64: {
        const q = numberEnd();
        const negative = b[p] === 45;
        const digits = q - p - (negative ? 1 : 0);
        // Whole numbers of up to 15 digits (exact as a double); fractions, exponents, -0 and longer
        // numbers take the general path.
        if (q < 0 || digits > 15) return false;
        let v = 0;
        for (let i = negative ? p + 1 : p; i < q; i++) {
          const d = b[i]! - 48;
          if (d < 0 || d > 9) return false;
          v = v * 10 + d;
        }
        if (negative && v === 0) return false;
        w.varint(f.tag);
        w.integer(negative ? -v : v);
        p = q;
        return true;
      }
      case FLOAT64: {
        const q = numberEnd();
        if (q < 0) return false;
        w.varint(f.tag);
        w.double(doubleOf(b, p, q));
        p = q;
        return true;
      }
      case BOOL: {
        const value = b[p] === 116 ? literal(TRUE) : false;
        if (!value && !literal(FALSE)) return false;
        w.varint(f.tag);
        w.varint(value ? 1 : 0);
        return true;
      }
      case DECIMAL: {
        const q = stringEnd();
        if (q < 0 || !plainDecimal(b, p + 1, q, f.maxInteger, f.maxScale)) return false;
        w.varint(f.tag);
        w.delimitedFrom(b, p + 1, q);
        p = q + 1;
        return true;
      }
      case DATE: {
        const q = stringEnd();
        if (q < 0 || q - p - 1 !== 10) return false;
        const text = b.toString('latin1', p + 1, q);
        if (!validDateAt(text, 0, 10)) return false;
        w.varint(f.tag);
        w.integer(daysFromCivil(text));
        p = q + 1;
        return true;
      }
      case TIMESTAMP: {
        const q = stringEnd();
        if (q < 0) return false;
        const text = b.toString('latin1', p + 1, q);
        if (!canonicalUtc(text)) return false;
        const micros = epochMicrosOf(text);
        if (typeof micros !== 'number') return false;
        w.varint(f.tag);
        w.integer(micros);
        p = q + 1;
        return true;
      }
      case RECORD: {
        if (b[p] !== 123) return false;
        w.varint(f.tag);
        const start = w.begin();
        if (!object(f.nested!, w)) return false;
        w.end(start);
        return true;
      }
      default:
        return false;
    }
  };

  /** A REPEATED field's array (not null). */
  const items = (f: FieldPlan, w: ProtoWriter): boolean => {
    if (b[p] !== 91) return false;
    p++;
    if (b[p]! <= 32) ws();
    if (b[p] === 93) {
      p++;
      return true;
    }
    for (;;) {
      if (b[p] === 110 || !one(f, w)) return false;
      if (b[p]! <= 32) ws();
      if (b[p] === 44) {
        p++;
        if (b[p]! <= 32) ws();
        continue;
      }
      if (b[p] !== 93) return false;
      p++;
      return true;
    }
  };

  /** At an object's `{`: its fields written (in the record's order), true when all went well. */
  const object = (plan: MessagePlan, w: ProtoWriter): boolean => {
    const stamp = ++plan.stamp;
    const { fields, seen } = plan;
    // Producers write fields in one order: the next field is guessed, and its name compared byte by
    // byte; only a wrong guess makes a string of the name to look it up.
    let next = 0;
    p++;
    if (b[p]! <= 32) ws();
    if (b[p] === 125) p++;
    else {
      for (;;) {
        const q = stringEnd();
        if (q < 0) return false;
        let index = -1;
        const guess = fields[next];
        if (guess !== undefined && matches(guess.key, p + 1, q)) index = next;
        else {
          const name = b.toString('utf8', p + 1, q);
          const found = plan.byName.get(name);
          if (found !== undefined) index = found;
          else if (!ignoreUnknown || (plan === root && reserved.has(name))) return false;
        }
        p = q + 1;
        if (b[p]! <= 32) ws();
        if (b[p] !== 58) return false;
        p++;
        if (b[p]! <= 32) ws();
        if (index < 0) {
          if (!skip(0)) return false;
        } else {
          if (seen[index] === stamp) return false;
          seen[index] = stamp;
          const field = fields[index]!;
          if (b[p] === 110) {
            // null: nothing to write (a REPEATED one is empty), unless the column is REQUIRED.
            if (field.required || !literal(NULL)) return false;
          } else if (!(field.repeated ? items(field, w) : one(field, w))) return false;
          next = index + 1;
        }
        if (b[p]! <= 32) ws();
        if (b[p] === 44) {
          p++;
          if (b[p]! <= 32) ws();
          continue;
        }
        if (b[p] !== 125) return false;
        p++;
        break;
      }
    }
    for (const r of plan.required) if (seen[r] !== stamp) return false;
    return true;
  };

  return (w, record, ingestedMicros) => {
    const v = record.value;
    const { key, timestamp } = record;
    if (v === null || v.length > maxRecordBytes || !isUtf8(v)) return false;
    if (!Number.isSafeInteger(timestamp) || Math.abs(timestamp) >= maxMs) return false;
    b = v;
    n = v.length;
    p = 0;
    if (b[p]! <= 32) ws();
    if (b[p] !== 123 || !object(root, w)) return false;
    if (b[p]! <= 32) ws();
    if (p !== n) return false;
    w.varint(delimited(topicTag));
    w.string(record.topic);
    w.varint(partitionTag);
    w.integer(record.partition);
    w.varint(offsetTag);
    w.integer(record.offset);
    w.varint(timestampTag);
    w.integer(timestamp * 1000);
    if (key !== null) {
      w.varint(delimited(keyTag));
      w.delimitedFrom(key, 0, key.length);
    }
    w.varint(ingestedTag);
    w.integer(ingestedMicros);
    // The key as text where it is UTF-8: the text's bytes are the key's (but for a leading BOM, which the
    // general path's decoder drops: that record takes it).
    if (keyText > 0 && key !== null && isUtf8(key)) {
      if (key[0] === 0xef && key[1] === 0xbb && key[2] === 0xbf) return false;
      w.varint(keyTextTag);
      w.delimitedFrom(key, 0, key.length);
    }
    return true;
  };
}

const TRUE = [116, 114, 117, 101];
const FALSE = [102, 97, 108, 115, 101];
const NULL = [110, 117, 108, 108];
/** Kafka timestamps whose microseconds are exact as a number (years 1685 to 2255); others take the general path. */
const maxMs = 9e12;

const powersOfTen = Array.from({ length: 23 }, (_, k) => 10 ** k);

/**
 * A JSON number's double, as `JSON.parse` reads it: up to 15 digits and 22 decimals without an exponent,
 * the digits as an exact integer divided by an exact power of ten (one correctly rounded division, so
 * the same double); any other form through `Number`.
 */
function doubleOf(b: Buffer, start: number, end: number): number {
  let i = start;
  const negative = b[i] === 45;
  if (negative) i++;
  let m = 0;
  let digits = 0;
  let scale = -1;
  for (; i < end; i++) {
    const c = b[i]!;
    if (c === 46) scale = 0;
    else if (c >= 48 && c <= 57) {
      m = m * 10 + (c - 48);
      digits++;
      if (scale >= 0) scale++;
    } else return Number(b.toString('latin1', start, end));
  }
  if (digits > 15 || scale > 22) return Number(b.toString('latin1', start, end));
  const v = scale > 0 ? m / powersOfTen[scale]! : m;
  return negative ? -v : v;
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 48 && c <= 57;
}

/** `-?\d{1,maxInteger}(\.\d{1,maxScale})?`: the decimal text validation passes as it is. */
function plainDecimal(b: Buffer, start: number, end: number, maxInteger: number, maxScale: number): boolean {
  let i = start;
  if (b[i] === 45) i++;
  const integer = i;
  while (i < end && isDigit(b[i])) i++;
  if (i === integer || i - integer > maxInteger) return false;
  if (i === end) return true;
  if (b[i] !== 46) return false;
  const fraction = ++i;
  while (i < end && isDigit(b[i])) i++;
  return i === end && i > fraction && i - fraction <= maxScale;
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
