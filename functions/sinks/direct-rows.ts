/**
 * A table's rows written straight from the records' bytes where a compiled path applies (#42): JSON text
 * through the route's shape (json-transcoder.ts), a registry format's binary through its `directRows`,
 * each followed by the metadata columns. Compiled once per route shape (and value format), for the
 * table's columns as given (and cdc mode's primary key); undefined where no compiled path applies (the
 * general path's records).
 */

import { compileTranscoder, metadataWriter, type Transcode } from '../encoders/json-transcoder.js';
import type { RowBatch } from '../encoders/row-encoder.js';
import type { ValueFormat } from '../formats/value-format.js';
import type { KafkaRecord } from '../kernel/records.js';
import type { RowShape } from '../records/records.js';
import type { SchemaField } from '../schema/table-schema.js';

export type DirectRows = (shape: RowShape, format?: ValueFormat) => Transcode | undefined;

export function createDirectRows(schema: readonly SchemaField[], primaryKey?: readonly string[]): DirectRows {
  // Per route shape: its records' JSON text straight to the table's messages.
  const transcoders = new WeakMap<RowShape, Transcode | null>();
  // Per value format and route shape: its records' bytes straight to the table's messages.
  const binary = new WeakMap<ValueFormat, WeakMap<RowShape, Transcode | null>>();
  const binaryOf = (format: ValueFormat, shape: RowShape): Transcode | null => {
    const meta = metadataWriter(shape, schema);
    const rows = format.directRows?.(schema, primaryKey);
    return meta === undefined || rows === undefined
      ? null
      : (w, record, micros) => rows(w, record) && meta(w, record, micros);
  };
  return (shape, format) => {
    if (format === undefined) {
      let transcode = transcoders.get(shape);
      if (transcode === undefined) {
        transcode = compileTranscoder(shape, schema) ?? null;
        transcoders.set(shape, transcode);
      }
      return transcode ?? undefined;
    }
    let byShape = binary.get(format);
    if (byShape === undefined) {
      byShape = new WeakMap();
      binary.set(format, byShape);
    }
    let transcode = byShape.get(shape);
    if (transcode === undefined) {
      transcode = binaryOf(format, shape);
      byShape.set(shape, transcode);
    }
    return transcode ?? undefined;
  };
}

/**
 * A batch's records added to its encoding by a direct path (false: left to the general path), each one
 * taken pushed onto `records` beside its row; the batch's ingestion time in microseconds made once.
 */
export function directAdder(
  encoding: RowBatch,
  records: KafkaRecord[],
  transcode: Transcode,
): (record: KafkaRecord, ingestedAt: Date) => boolean {
  let stamped: Date | undefined;
  let micros = 0;
  return (record, ingestedAt) => {
    // One time for the batch: its microseconds (a double, never a small integer) made once.
    if (ingestedAt !== stamped) {
      stamped = ingestedAt;
      micros = ingestedAt.getTime() * 1000;
    }
    if (!encoding.addWith(transcode, record, micros)) return false;
    records.push(record);
    return true;
  };
}
