import { isUtf8 } from 'node:buffer';
import type { KafkaRecord } from '../kernel/records.js';
import type { SchemaField } from '../schema/table-schema.js';
import { JsonCursor } from './json-cursor.js';
import { readingOf } from './json-plans.js';
import { maxMs, readRecord } from './json-reader.js';
import type { ProtoWriter } from './proto-writer.js';
import type { RowShape } from './row-shape.js';

/**
 * A record's JSON text straight to its row's protocol buffer bytes, in one pass over the bytes: no
 * `JSON.parse`, no row object, no validation of a tree, no second walk to encode it. It reads the records
 * of the common kind only, and says false for any other (an escape in a string, a number in another form,
 * a value the table refuses, a duplicate key, anything it is not sure of): the caller then takes the
 * general path (parse, validate, encode), so every record gets exactly the fate that path gives it, and
 * every row the same message (fields in the record's order, which protobuf does not mind).
 */
export type Transcode = (writer: ProtoWriter, record: KafkaRecord, ingestedMicros: number) => boolean;

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

/**
 * The transcoder of a route's records into the target table's messages (`target`: its schema, metadata
 * included, whose field numbers the messages use), or undefined where this path does not apply (see
 * `readingOf`, and a target without the metadata columns).
 */
export function compileTranscoder(
  shape: RowShape | undefined,
  target: readonly SchemaField[],
): Transcode | undefined {
  const reading = readingOf(shape, target, false);
  const meta = metadataWriter(shape, target);
  if (reading === undefined || meta === undefined) return undefined;
  const c = new JsonCursor();
  return (w, record, ingestedMicros) =>
    readRecord(c, record.value, reading, w) >= 0 && meta(w, record, ingestedMicros);
}

/**
 * The metadata columns' writer for a target's messages, as the general path fills them (the headers
 * column is not written here: undefined where the target has it, or lacks a column the path writes).
 */
export function metadataWriter(
  shape: RowShape | undefined,
  target: readonly SchemaField[],
): Transcode | undefined {
  if (shape?.metadata?.headers) return undefined;
  const tag = (name: string, wire: number) => {
    const number = target.findIndex((f) => f.name === name) + 1;
    return number === 0 ? -1 : (number << 3) | wire;
  };
  const withKeyText = shape?.metadata?.keyText === true;
  const tags: MetadataTags = {
    topic: tag('_kafka_topic', 2),
    partition: tag('_kafka_partition', 0),
    offset: tag('_kafka_offset', 0),
    timestamp: tag('_kafka_timestamp', 0),
    key: tag('_kafka_key', 2),
    ingestedAt: tag('_ingested_at', 0),
    keyText: withKeyText ? tag('_kafka_key_text', 2) : -1,
  };
  const { keyText, ...always } = tags;
  if (Object.values(always).includes(-1) || (withKeyText && keyText === -1)) return undefined;
  return (w, record, ingestedMicros) => metadata(w, tags, record, ingestedMicros);
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
