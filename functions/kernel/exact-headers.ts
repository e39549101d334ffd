/**
 * A record's headers exactly as Kafka carried them (order, repeated names, bytes, null values), as text:
 * `[[name, base64 value or null], …]`. Dead letters carry them so (the `kafka_headers` attribute, the error
 * table's `kafka_headers` column), and a replay gives them back from there.
 */
import type { KafkaRecord } from './records.js';

export type RawHeaders = NonNullable<KafkaRecord['rawHeaders']>;

/** The record's headers as text; undefined when it has none. */
export function exactHeadersText(record: Pick<KafkaRecord, 'headers' | 'rawHeaders'>): string | undefined {
  const raw =
    record.rawHeaders ??
    Object.entries(record.headers).map(([key, value]) => ({ key, value: Buffer.from(value) }));
  if (raw.length === 0) return undefined;
  return JSON.stringify(raw.map((h) => [h.key, h.value === null ? null : h.value.toString('base64')]));
}

/** The headers from their text; undefined when the text is not a list of `[name, base64 or null]` pairs. */
export function parseExactHeaders(text: string): RawHeaders | undefined {
  let pairs: unknown;
  try {
    pairs = JSON.parse(text);
  } catch {
    return undefined;
  }
  const valid =
    Array.isArray(pairs) &&
    pairs.every(
      (p) =>
        Array.isArray(p) &&
        p.length === 2 &&
        typeof p[0] === 'string' &&
        (p[1] === null || typeof p[1] === 'string'),
    );
  if (!valid) return undefined;
  return (pairs as [string, string | null][]).map(([key, value]) => ({
    key,
    value: value === null ? null : Buffer.from(value, 'base64'),
  }));
}
