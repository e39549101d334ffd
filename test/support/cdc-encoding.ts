/**
 * cdc mode's encoding without a service (the unit tests of its compiled paths and the bench's record path):
 * the cdc sink made for encoding alone, the message its general rows become, and Debezium's Avro envelopes
 * as a raw Avro format whose compiled path is the envelope's change (an upsert's `after` row, a delete's key).
 */
import type { BigQuery } from '@google-cloud/bigquery';
import { createRawAvroFormat } from '../../functions/formats/avro/index.js';
import { compileAvro } from '../../functions/formats/avro/schema.js';
import { afterFields } from '../../functions/formats/route-values.js';
import type { ValueFormat } from '../../functions/formats/value-format.js';
import { createMemoryLogger } from '../../functions/kernel/logger.js';
import { createCdcSink } from '../../functions/modes/cdc/cdc-sink.js';
import { changeSequenceColumn, changeTypeColumn } from '../../functions/records/changes.js';
import type { RowShape } from '../../functions/records/records.js';
import type { SchemaField } from '../../functions/schema/table-schema.js';
import { messageFormat } from '../../functions/sinks/storage-write-streams.js';

/** The cdc table's message as BigQuery's CDC is sent it: every column NULLABLE, then the change columns. */
export function cdcMessage(target: readonly SchemaField[]) {
  return messageFormat(
    [
      ...target,
      { name: changeTypeColumn, type: 'STRING' },
      { name: changeSequenceColumn, type: 'STRING' },
    ].map((f) => (f.mode === 'REQUIRED' ? { ...f, mode: 'NULLABLE' as const } : f)),
  );
}

/** A cdc sink for encoding only: any call to BigQuery throws. */
export function encodingCdcSink(target: readonly SchemaField[]) {
  return createCdcSink({
    bigquery: {} as BigQuery, // never reached: encoding makes no call
    writer: () => {
      throw new Error('no call is made while encoding');
    },
    project: 'p',
    dataset: 'd',
    table: 't',
    location: null,
    schema: target,
    maxStaleness: null,
    logger: createMemoryLogger(),
  });
}

/**
 * Debezium's envelope schema (Avro text) as a raw Avro value format with the envelope's compiled rows, and
 * the route's shape: the `after` row's fields, the key's text among the metadata columns.
 */
export function debeziumAvro(text: string): { format: ValueFormat; shape: RowShape } {
  const compiled = compileAvro(text);
  const format: ValueFormat = {
    ...createRawAvroFormat(text),
    directRows(target, primaryKey) {
      const rows = compiled.envelopeRows?.(target, primaryKey);
      return (w, record) => rows !== undefined && record.value !== null && rows(w, record.value, 0);
    },
  };
  const shape: RowShape = {
    fields: afterFields(compiled.fields),
    unknownFields: 'reject',
    metadata: { headers: false, keyText: true },
  };
  return { format, shape };
}
