/**
 * The compiled Avro path's writers of one value that holds no other (avro/rows.ts): each made once per
 * field of a writer schema, the field's tag and kind fixed in it, so that a record's fields are written by
 * a list of functions, not by a plan read again for every value. Each reads at `at.pos`, writes the
 * column's tag and value, and says false wherever the general path's reading could differ.
 */
import { canonicalMicrosIn } from '../../encoders/civil-time.js';
import { isJsonText } from '../../encoders/json-cursor.js';
import type { ProtoWriter } from '../../encoders/proto-writer.js';
import { isoMicros, timeOfDayText } from '../mapped.js';
import { maxDays, minDays, type Plan } from './plans.js';
import { at, isTimeOfDay, type Temporal, temporal, timeDecimals, variableScaleText, zigzag } from './read.js';
import { decimalOf as decimalText } from './types.js';

/** Writes one value at `at.pos` into the message; false where this path is not sure of it. */
export type ValueWriter = (w: ProtoWriter, payload: Buffer) => boolean;

type Leaf = Exclude<Plan, { kind: 'record' | 'array' | 'union' | 'map' }>;

/** The writer of a value that holds no other: a scalar, a decimal, an enum or a `fixed`. */
export function leafWriter(plan: Leaf): ValueWriter {
  const tag = plan.tag;
  switch (plan.kind) {
    case 'decimal':
      return decimalWriter(plan);
    case 'variable-scale': {
      const plain = plan.plain;
      return (w, payload) => {
        const text = variableScaleText(payload, plain);
        if (text === undefined) return false;
        w.varint(tag);
        w.string(text);
        return true;
      };
    }
    case 'enum': {
      const symbols = plan.symbols;
      return (w, payload) => {
        const symbol = symbols[zigzag(payload)];
        if (at.bad || symbol === undefined) return false;
        w.varint(tag);
        w.bytes(symbol);
        return true;
      };
    }
    case 'fixed': {
      const size = plan.size;
      return (w, payload) => {
        const end = at.pos + size;
        if (end > payload.length) return false;
        w.varint(tag);
        w.delimitedFrom(payload, at.pos, end);
        at.pos = end;
        return true;
      };
    }
    case 'boolean':
      return (w, payload) => {
        const byte = payload[at.pos++];
        if (byte !== 0 && byte !== 1) return false;
        w.varint(tag);
        w.varint(byte);
        return true;
      };
    case 'int':
    case 'long':
      return (w, payload) => {
        const n = zigzag(payload);
        if (at.bad) return false;
        w.varint(tag);
        w.integer(n);
        return true;
      };
    case 'date':
      return (w, payload) => {
        const days = zigzag(payload);
        if (at.bad || days < minDays || days > maxDays) return false;
        w.varint(tag);
        w.integer(days);
        return true;
      };
    case 'float':
      return (w, payload) => {
        if (at.pos + 4 > payload.length) return false;
        const value = payload.readFloatLE(at.pos);
        at.pos += 4;
        w.varint(tag);
        w.double(value);
        return true;
      };
    case 'double':
      return (w, payload) => {
        if (at.pos + 8 > payload.length) return false;
        const value = payload.readDoubleLE(at.pos);
        at.pos += 8;
        w.varint(tag);
        w.double(value);
        return true;
      };
    case 'string':
    case 'json':
      return countedWriter(tag, plan.kind === 'json');
    case 'bytes':
      return (w, payload) => {
        const end = countedEnd(payload);
        if (end < 0) return false;
        w.varint(tag);
        w.delimitedFrom(payload, at.pos, end);
        at.pos = end;
        return true;
      };
    case 'zoned':
      return (w, payload) => {
        const end = countedEnd(payload);
        if (end < 0) return false;
        const micros = canonicalMicrosIn(payload, at.pos, end);
        if (Number.isNaN(micros)) return false;
        w.varint(tag);
        w.integer(micros);
        at.pos = end;
        return true;
      };
    default:
      return temporalWriter(tag, plan.kind);
  }
}

/** A length at `at.pos`, read past: where its bytes end, or -1 where they cannot be read. */
function countedEnd(payload: Buffer): number {
  const length = zigzag(payload);
  const end = at.pos + length;
  return at.bad || length < 0 || end > payload.length ? -1 : end;
}

/** Text copied as it is: it must be UTF-8 (and with `json`, JSON text that parses whole). */
function countedWriter(tag: number, json: boolean): ValueWriter {
  return (w, payload) => {
    const end = countedEnd(payload);
    if (end < 0) return false;
    const start = at.pos;
    if (json && !isJsonText(payload, start, end)) return false;
    w.varint(tag);
    if (!w.utf8From(payload, start, end)) return false;
    at.pos = end;
    return true;
  };
}

/** Timestamps as microseconds; DATETIME and TIME as the Storage Write API's civil text. */
function temporalWriter(tag: number, kind: Temporal): ValueWriter {
  if (kind === 'millis' || kind === 'micros' || kind === 'nanos')
    return (w, payload) => {
      const micros = temporal(payload, kind);
      if (Number.isNaN(micros)) return false;
      w.varint(tag);
      w.integer(micros);
      return true;
    };
  const timeOfDay = isTimeOfDay(kind);
  const decimals = timeDecimals(kind);
  return (w, payload) => {
    const micros = temporal(payload, kind);
    if (Number.isNaN(micros)) return false;
    w.varint(tag);
    if (timeOfDay) w.string(timeOfDayText(micros, decimals));
    else if (!w.dateTime(micros)) {
      const text = isoMicros(micros);
      w.string(`${text.slice(0, 10)} ${text.slice(11)}`);
    }
    return true;
  };
}

/** A decimal's bytes (`bytes`: their length first; `fixed`: its size) as the general path's exact text. */
function decimalWriter(plan: Extract<Plan, { kind: 'decimal' }>): ValueWriter {
  const { tag, size, digits, scale, plain } = plan;
  return (w, payload) => {
    const length = size >= 0 ? size : zigzag(payload);
    const end = at.pos + length;
    if (at.bad || length < 0 || end > payload.length) return false;
    if (digits && length > 0 && length <= 6) {
      // Up to 6 bytes: a safe integer, written by digits.
      const unscaled = payload.readIntBE(at.pos, length);
      at.pos = end;
      w.varint(tag);
      w.decimal(unscaled, scale);
      return true;
    }
    const text = decimalText(payload.subarray(at.pos, end), scale);
    if (!plain.test(text)) return false;
    at.pos = end;
    w.varint(tag);
    w.string(text);
    return true;
  };
}
