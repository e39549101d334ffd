import { isUtf8 } from 'node:buffer';
import type { ProtoWriter } from '../encoders/proto-writer.js';
import type { JsonValue } from '../kernel/records.js';
import type { SchemaField } from '../schema/table-schema.js';

/**
 * What a format's schema compiles to: the BigQuery columns its values fill, and a decoder from its
 * binary form to the JSON forms BigQuery ingests (exact decimal text, ISO timestamps, base64 bytes),
 * which the row validator then checks against the table as it checks any JSON record.
 */
/** Writes a payload's user columns into the table's message (from `start`); false: the general path. */
export type CompiledRows = (writer: ProtoWriter, payload: Buffer, start: number) => boolean;

export interface CompiledSchema {
  readonly fields: readonly SchemaField[];
  /** The value's payload (after the wire format's header) → a row's user columns; throws a ValueError. */
  decode(payload: Buffer): Record<string, JsonValue>;
  /**
   * The payload's row written straight into the table's message (`target`: its columns, metadata included),
   * where the format compiles such a path for this schema (avro/rows.ts); undefined: never.
   */
  rows?(target: readonly SchemaField[], primaryKey?: readonly string[]): CompiledRows | undefined;
  /**
   * Where the payload is a Debezium envelope (cdc mode), its change written straight into the cdc table's
   * message: the `after` row of an upsert, and with `primaryKey` the key of a delete's `before` row
   * (avro/envelope.ts; `envelopeChange` says which); undefined: never.
   */
  envelopeRows?(target: readonly SchemaField[], primaryKey?: readonly string[]): CompiledRows | undefined;
  /**
   * Where the payload is JSON text whose fields are the columns as they are (JSON Schema without JSON
   * columns or renamed properties), those columns: the modes that send rows as JSON text (insert-all,
   * merge, load) may send the payload's own text, read as JSON records are (row-text.ts).
   */
  readonly textFields?: readonly SchemaField[];
  /**
   * The payload's fields as the members of a row's JSON object (no braces) straight from its bytes, onto
   * `columns` (the table's user columns), where the format compiles such a path (avro/text.ts): UTF-8
   * bytes good until the next call, or undefined for a record (or the schema) that takes the general path.
   */
  membersText?(
    columns: readonly SchemaField[],
  ): ((payload: Buffer, start: number) => Buffer | undefined) | undefined;
  /** The full name of the record type a payload holds (a route's `when: {recordName}`), if it has one. */
  recordName?(payload: Buffer): string | undefined;
}

/**
 * What the last envelope written by an `envelopeRows` path asked for: its row deleted (the message then
 * holds the primary key's columns alone) or upserted. Set by each envelope, read right after it: one record
 * at a time, on one thread.
 */
export const envelopeChange = { deleted: false };

/**
 * Whether bytes `start` to `end` are UTF-8: ASCII (most text) checked byte by byte, the rest by Node (a
 * view of the bytes costs more than checking a short ASCII string).
 */
export function isUtf8At(bytes: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (bytes[i]! >= 0x80) return isUtf8(bytes.subarray(i, end));
  return true;
}

/**
 * Whether a map key (the bytes from `start` to `end`) keeps its place and its text in the general path,
 * whose decoders collect a map into a JavaScript object: it must be UTF-8 (else decoded with replacement
 * characters), no array index (those are ordered first, by number), not `__proto__`, and not given before
 * in the map (`seen`, which this adds it to).
 */
export function keepsPlace(bytes: Buffer, start: number, end: number, seen: Set<string>): boolean {
  if (!isUtf8At(bytes, start, end) || isIndex(bytes, start, end)) return false;
  const key = bytes.toString('latin1', start, end);
  if (key === '__proto__' || seen.has(key)) return false;
  seen.add(key);
  return true;
}

/** An array index as JavaScript's objects order keys: digits without a leading zero, below 2^32 - 1. */
function isIndex(bytes: Buffer, start: number, end: number): boolean {
  if (end === start || end - start > 10 || (bytes[start] === 0x30 && end - start > 1)) return false;
  let value = 0;
  for (let i = start; i < end; i++) {
    const digit = bytes[i]! - 0x30;
    if (digit < 0 || digit > 9) return false;
    value = value * 10 + digit;
  }
  return value < 2 ** 32 - 1;
}

/** A value the table cannot hold, with the path of the field (`items[3].price`). */
export class ValueError extends Error {
  constructor(
    readonly path: string,
    message: string,
    /** decode: the bytes are not a value of their schema; schema: a value the table cannot hold. */
    readonly kind: 'decode' | 'schema' = 'schema',
  ) {
    super(path === '' ? message : `${path}: ${message}`);
  }
}

/** A schema this drain cannot turn into columns (a recursive type, a top level that is no record). */
export class UnmappableSchemaError extends Error {}

/** Column and field names as BigQuery takes them: letters, digits and underscores. */
export function columnName(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9_]/g, '_');
  return /^[0-9]/.test(cleaned) ? `_${cleaned}` : cleaned;
}

export function joinPath(path: string, name: string): string {
  return path === '' ? name : `${path}.${name}`;
}

const MICROS_PER_DAY = 86_400_000_000n;

/** Microseconds since the epoch → `YYYY-MM-DDTHH:MM:SS.ffffff` (UTC, no zone), exact for any range. */
export function microsText(micros: bigint): string {
  const days = micros >= 0n ? micros / MICROS_PER_DAY : -((-micros + MICROS_PER_DAY - 1n) / MICROS_PER_DAY);
  const inDay = micros - days * MICROS_PER_DAY;
  const date = new Date(Number(days) * 86_400_000).toISOString();
  const dayText = date.startsWith('+') || date.startsWith('-') ? date.slice(0, 13) : date.slice(0, 10);
  return `${dayText}T${timeOfDayText(inDay, 6)}`;
}

/** A time of day in microseconds (below a day's: exact as a number) → `HH:MM:SS` plus `digits` decimals. */
export function timeOfDayText(micros: bigint | number, digits: 3 | 6): string {
  const t = Number(micros);
  const seconds = Math.floor(t / 1_000_000);
  const fraction = String(t % 1_000_000)
    .padStart(6, '0')
    .slice(0, digits);
  const hh = String(Math.floor(seconds / 3600)).padStart(2, '0');
  const mm = String(Math.floor(seconds / 60) % 60).padStart(2, '0');
  const ss = String(seconds % 60).padStart(2, '0');
  return `${hh}:${mm}:${ss}.${fraction}`;
}

/** Days since the epoch → `YYYY-MM-DD` (a year outside 1..9999 gives text the validator refuses). */
export function dateText(days: number): string {
  const text = new Date(days * 86_400_000).toISOString();
  return text.startsWith('+') || text.startsWith('-') ? text.slice(0, 13) : text.slice(0, 10);
}

/** An unscaled integer and a scale → exact decimal text (the validator's own form). */
export function scaledText(unscaled: bigint, scale: number): string {
  return decimalText({ unscaled, scale });
}

/** The BigQuery decimal type that holds precision and scale exactly; STRING when neither does. */
export function decimalColumn(precision: number, scale: number): 'NUMERIC' | 'BIGNUMERIC' | 'STRING' {
  if (scale <= 9 && precision - scale <= 29) return 'NUMERIC';
  if (scale <= 38 && precision - scale <= 38) return 'BIGNUMERIC';
  return 'STRING';
}

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** An integer as the decoders give it (number, bigint, decimal text, a protobufjs Long) → bigint. */
export function bigOf(v: unknown): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' || typeof v === 'string') return BigInt(v);
  return BigInt((v as { toString(): string }).toString());
}

/** An INT64 column's value: a number where it is safe, else exact decimal text (never rounded). */
export function int64Value(v: unknown): JsonValue {
  if (typeof v === 'number') return v;
  const n = bigOf(v);
  return n >= MIN_SAFE && n <= MAX_SAFE ? Number(n) : n.toString();
}

/**
 * A number for a FLOAT64 column as a row carries it. JSON has no form for the non-finite ones (a record's
 * `1e400` parses to Infinity, which `JSON.stringify` would send to insertAll as null: a value turned into
 * NULL with no dead letter): they are BigQuery's JSON strings, as insertAll takes them; the Storage Write
 * encoder makes the same double of either.
 */
export function floatValue(v: number): JsonValue {
  if (Number.isFinite(v)) return v;
  return Number.isNaN(v) ? 'NaN' : v > 0 ? 'Infinity' : '-Infinity';
}

/** A decimal's exact value: unscaled × 10^-scale, with no trailing zeros in `unscaled` (0 has scale 0). */
export interface ExactDecimal {
  readonly unscaled: bigint;
  readonly scale: number;
}

/** Plain decimal text for an exact value: what BigQuery gets, whatever form the record used. */
export function decimalText({ unscaled, scale }: ExactDecimal): string {
  if (scale <= 0) return (unscaled * 10n ** BigInt(-scale)).toString();
  const sign = unscaled < 0n ? '-' : '';
  const digits = (unscaled < 0n ? -unscaled : unscaled).toString().padStart(scale + 1, '0');
  return `${sign}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/** Microseconds since the epoch (a safe number in years 0000-9999) → `YYYY-MM-DDTHH:MM:SS.ffffff`. */
export function isoMicros(micros: number): string {
  const ms = Math.floor(micros / 1000);
  const iso = new Date(ms).toISOString();
  if (iso.length !== 24) return microsText(BigInt(micros));
  return `${iso.slice(0, 23)}${String(micros - ms * 1000).padStart(3, '0')}`;
}
