/**
 * A dead letter back to the Kafka record it came from: its attributes (origin, key, exact headers), and
 * the error table's copy where Pub/Sub's attributes could not hold them whole.
 */
import { parseExactHeaders, type RawHeaders } from '../kernel/exact-headers.js';
import type { KafkaRecord } from '../kernel/records.js';
import type { PulledLetter } from './pubsub-subscription.js';

/**
 * The Kafka record a dead letter came from, rebuilt from its attributes as the drain saw it: key, headers
 * (in order, repeated names, bytes) and all; undefined if it does not say where it came from, or why it
 * cannot be rebuilt whole (a key or headers too large for Pub/Sub's attributes).
 */
export function recordOf(
  letter: Pick<PulledLetter, 'data' | 'attributes'>,
  kept?: KeptLetter,
): KafkaRecord | string | undefined {
  const a = letter.attributes;
  const partition = Number(a.source_partition);
  const offset = Number(a.source_offset);
  const timestamp = Date.parse(a.source_timestamp ?? '');
  if (!a.source_topic || !Number.isInteger(partition) || !Number.isInteger(offset) || Number.isNaN(timestamp))
    return undefined;
  if (a.key_sha256 !== undefined && kept === undefined)
    return 'its key was too large for a Pub/Sub attribute (the letter holds its SHA-256 only): it cannot be replayed as it was';
  // The letter's own headers where it has them whole, else the error table's copy.
  const own = headersOf(a);
  const headers = typeof own === 'string' && kept !== undefined ? kept.headers : own;
  if (typeof headers === 'string') return headers;
  return {
    topic: a.source_topic,
    partition,
    offset,
    timestamp,
    key:
      kept !== undefined ? kept.key : a.key_base64 === undefined ? null : Buffer.from(a.key_base64, 'base64'),
    value: letter.data,
    headers: headersAsText(headers),
    rawHeaders: headers,
  };
}

/** A dead letter's key and headers as the error table keeps them (whole, unlike Pub/Sub's attributes). */
export interface KeptLetter {
  readonly key: Buffer | null;
  /** The exact headers; a reason when the row holds them as text only (an older drain's). */
  readonly headers: RawHeaders | string;
}

/** Does the letter lack its key or headers (too large for Pub/Sub's attributes), so that only the error table has them? */
export function lacksWhatTheErrorTableKeeps(a: Readonly<Record<string, string>>): boolean {
  return (
    a.key_sha256 !== undefined || a.kafka_headers_missing !== undefined || a.headers_dropped !== undefined
  );
}

/** The headers a letter carries: exact (`kafka_headers`), or, in a letter of an older drain, as text. */
function headersOf(a: Readonly<Record<string, string>>): RawHeaders | string {
  if (a.kafka_headers_missing !== undefined)
    return `its headers were too large for a Pub/Sub attribute (${a.kafka_headers_missing}): it cannot be replayed as it was`;
  if (a.kafka_headers !== undefined) {
    return (
      parseExactHeaders(a.kafka_headers) ??
      'its kafka_headers attribute is not a list of [name, base64 value] pairs'
    );
  }
  if (a.headers_dropped !== undefined)
    return `${a.headers_dropped} of its headers did not fit in Pub/Sub's attributes: it cannot be replayed as it was`;
  return Object.entries(a)
    .filter(([name]) => name.startsWith('header_'))
    .map(([name, value]) => ({ key: name.slice('header_'.length), value: Buffer.from(value) }));
}

/** The headers by name, as the Kafka source gives them (repeated names' values joined by commas). */
function headersAsText(raw: RawHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const { key, value } of raw) {
    const text = value === null ? 'null' : value.toString();
    out[key] = key in out ? `${out[key]},${text}` : text;
  }
  return out;
}

/** `topic:partition:offset` of a letter, as its attributes say. */
export function originOf(letter: Pick<PulledLetter, 'attributes'>): string {
  const a = letter.attributes;
  return a.source_topic === undefined
    ? 'unknown origin'
    : `${a.source_topic}:${a.source_partition}:${a.source_offset}`;
}
