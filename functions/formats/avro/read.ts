/**
 * Reading Avro's binary for the compiled paths (avro/rows.ts, avro/text.ts): zigzag varints as safe
 * integers, the blocks of arrays and maps, map keys, and the temporal logical types as microseconds. Each
 * says "not sure" (`at.bad`, -1 or NaN) wherever the general path's reading could differ, and the record
 * then takes the general path.
 */

import { keepsPlace } from '../mapped.js';
import { varint, at as wide } from '../varint.js';
import { decimalOf as decimalText } from './types.js';

/** Where reading stands; `bad` when a varint ran past the payload or beyond what a double holds exactly. */
export const at = { pos: 0, bad: false };

/** A zigzag varint (Avro's int and long) as a safe integer; sets `at.bad` otherwise. */
export function zigzag(payload: Buffer): number {
  let value = 0;
  let scale = 1;
  for (;;) {
    if (at.pos >= payload.length || scale > 2 ** 49) {
      at.bad = true;
      return 0;
    }
    const byte = payload[at.pos++]!;
    value += (byte & 0x7f) * scale;
    if ((byte & 0x80) === 0) break;
    scale *= 128;
  }
  if (value > Number.MAX_SAFE_INTEGER) {
    at.bad = true;
    return 0;
  }
  return value % 2 === 0 ? value / 2 : -(value + 1) / 2;
}

/**
 * The count of the next block of an array's or a map's items (0: the end; a negative count is followed by
 * the block's size in bytes, skipped), or -1 when it cannot be read.
 */
export function blockCount(payload: Buffer): number {
  const count = zigzag(payload);
  if (at.bad) return -1;
  if (count >= 0) return count;
  zigzag(payload);
  return at.bad ? -1 : -count;
}

/** What `unionBranch` says of a null where the column is REQUIRED, or of an unreadable index. */
export const refused = -2;
/** What `unionBranch` says of a null the column may hold: nothing is written. */
export const absent = -1;

/** A union's branch index at `at.pos`: `absent` for its null branch (`refused` where null is not allowed). */
export function unionBranch(payload: Buffer, nullBranch: number, required: boolean): number {
  const branch = zigzag(payload);
  if (at.bad) return refused;
  if (branch === nullBranch) return required ? refused : absent;
  return branch;
}

/** A map's key: its start (`at.pos` is then its end), or -1 where the general path would not keep it as it is. */
export function mapKey(payload: Buffer, seen: Set<string>): number {
  const length = zigzag(payload);
  const start = at.pos;
  const end = start + length;
  if (at.bad || length < 0 || end > payload.length || !keepsPlace(payload, start, end, seen)) return -1;
  at.pos = end;
  return start;
}

/** The temporal kinds read as microseconds: of the epoch (timestamps, local or not), of the day (times). */
export type Temporal =
  | 'millis'
  | 'micros'
  | 'nanos'
  | 'local-millis'
  | 'local-micros'
  | 'local-nanos'
  | 'time-millis'
  | 'time-micros'
  /** Debezium's `Time`: milliseconds of the day, written with six decimals as its general path does. */
  | 'time-millis-6'
  /** Debezium's `NanoTime`: nanoseconds of the day. */
  | 'time-nanos';

const perUnit: Record<Temporal, number> = {
  millis: 1000,
  micros: 1,
  nanos: 0,
  'local-millis': 1000,
  'local-micros': 1,
  'local-nanos': 0,
  'time-millis': 1000,
  'time-micros': 1,
  'time-millis-6': 1000,
  'time-nanos': 0,
};

/** Whether a temporal kind is a time of day (TIME), written as text with `timeDecimals` of them. */
export function isTimeOfDay(kind: Temporal): boolean {
  return (
    kind === 'time-millis' || kind === 'time-micros' || kind === 'time-millis-6' || kind === 'time-nanos'
  );
}

/** The decimals of a time of day's text: three for Avro's `time-millis` (as its general path), else six. */
export const timeDecimals = (kind: Temporal): 3 | 6 => (kind === 'time-millis' ? 3 : 6);

/** A day in microseconds: a time of day is below it. */
const microsPerDay = 86_400_000_000;

/**
 * A temporal value in microseconds as a safe integer (nanoseconds cut toward the past, as the general
 * path and BigQuery's own loads do), or NaN: unreadable, beyond what a double holds, not a time of day.
 */
export function temporal(payload: Buffer, kind: Temporal): number {
  const per = perUnit[kind];
  const micros = per === 0 ? nanosAsMicros(payload) : zigzag(payload) * per;
  if (at.bad || !Number.isSafeInteger(micros)) return Number.NaN;
  if (isTimeOfDay(kind) && (micros < 0 || micros >= microsPerDay)) return Number.NaN;
  return micros;
}

/**
 * A long of nanoseconds (all 64 bits: the epoch's nanoseconds pass 2^53 in 1970) floored to microseconds
 * exactly, in two 32-bit halves: (hi·2^32 + lo) / 1000 = hi·4,294,967 + (hi·296 + lo) / 1000.
 */
function nanosAsMicros(payload: Buffer): number {
  wide.pos = at.pos;
  if (!varint(payload, payload.length)) return Number.NaN;
  at.pos = wide.pos;
  // Zigzag over 64 bits: the value is the varint shifted right by one, its bits flipped when it was odd.
  let lo = ((wide.lo >>> 1) | (wide.hi << 31)) >>> 0;
  let hi = wide.hi >>> 1;
  if ((wide.lo & 1) === 1) {
    lo = ~lo >>> 0;
    hi = ~hi;
  }
  // |hi| below 2^30 (about ±146 years of nanoseconds): every product and sum below is exact.
  if (hi >= 2 ** 30 || hi < -(2 ** 30)) return Number.NaN;
  return hi * 4_294_967 + Math.floor((hi * 296 + lo) / 1000);
}

/**
 * Debezium's `VariableScaleDecimal` (a record of its `scale`, an int, and its unscaled `value`'s bytes) as
 * the general path's exact text, where it is plain text within the column's digits (`plain`); undefined
 * otherwise (a scale below 0 or above 38 too).
 */
export function variableScaleText(payload: Buffer, plain: RegExp): string | undefined {
  const scale = zigzag(payload);
  if (at.bad || scale < 0 || scale > 38) return undefined;
  const length = zigzag(payload);
  const end = at.pos + length;
  if (at.bad || length < 0 || end > payload.length) return undefined;
  const text = decimalText(payload.subarray(at.pos, end), scale);
  at.pos = end;
  return plain.test(text) ? text : undefined;
}
