import type { KafkaRecord } from '../kernel/records.js';
import { JsonCursor } from './json-cursor.js';
import { readingOf } from './json-plans.js';
import { maxMs, type Out, readRecord } from './json-reader.js';
import { ingestedText, keyText, type RowShape } from './row-shape.js';

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
export type RowText = (record: KafkaRecord, ingestedAt: Date) => Buffer | undefined;

export function compileRowText(shape: RowShape | undefined, headerBytes = 0): RowText | undefined {
  const reading = readingOf(shape, shape?.fields ?? [], true);
  if (reading === undefined) return undefined;
  const metadata = metadataText(shape?.metadata?.keyText === true);
  const c = new JsonCursor();
  const out = new NoOut();
  return (record, ingestedAt) => {
    // A registry format's value (JSON Schema) is JSON text after the wire format's header.
    const v = headerBytes === 0 || record.value === null ? record.value : record.value.subarray(headerBytes);
    const open = readRecord(c, v, reading, out);
    if (open < 0) return undefined;
    const head = metadata(record, ingestedAt);
    if (head === undefined) return undefined;
    c.at = open + 1;
    c.space();
    const empty = c.bytes[c.at] === 125;
    // The metadata, then the record's members and its closing brace (its bytes as they are).
    return rowJson(head, v!, open + 1, v!.length, { comma: !empty, close: false });
  };
}

const comma = 44;
const closeBrace = 125;

/**
 * JSON text as bytes: `head` (a row's metadata columns, from `metadataText`; an insertAll entry up to its
 * row's members), a comma where `comma`, the bytes of `members` from `start` to `end` as they are (never
 * decoded to a string and encoded again), and a closing brace where `close`.
 */
export function rowJson(
  head: string,
  members: Buffer,
  start: number,
  end: number,
  { comma: withComma, close }: { readonly comma: boolean; readonly close: boolean },
): Buffer {
  const headLength = Buffer.byteLength(head);
  const row = Buffer.allocUnsafe(headLength + (withComma ? 1 : 0) + (end - start) + (close ? 1 : 0));
  let at = row.write(head, 0, headLength, 'utf8');
  if (withComma) row[at++] = comma;
  at += members.copy(row, at, start, end);
  if (close) row[at] = closeBrace;
  return row;
}

/**
 * A row's JSON text up to its user columns: `{` and the metadata columns as the general path makes them
 * (no closing brace); undefined for a record whose Kafka timestamp that path writes otherwise.
 */
export function metadataText(
  withKeyText: boolean,
): (record: KafkaRecord, ingestedAt: Date) => string | undefined {
  let topic = { name: '', json: '""' };
  return (record, ingestedAt) => {
    const { timestamp, key } = record;
    if (!Number.isSafeInteger(timestamp) || Math.abs(timestamp) >= maxMs) return undefined;
    if (record.topic !== topic.name) topic = { name: record.topic, json: JSON.stringify(record.topic) };
    return `{"_kafka_topic":${topic.json},"_kafka_partition":${record.partition},"_kafka_offset":${record.offset},"_kafka_timestamp":"${new Date(timestamp).toISOString()}","_kafka_key":${key === null ? 'null' : `"${key.toString('base64')}"`},"_ingested_at":"${ingestedText(ingestedAt)}"${withKeyText ? `,"_kafka_key_text":${JSON.stringify(keyText(key))}` : ''}`;
  };
}

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
