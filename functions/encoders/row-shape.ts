/**
 * What a row is made to (the table's user columns, its unknown-field and naming rules, its metadata
 * columns) and the few facts every row encoder shares: the bottom of the rows' layers, below the formats
 * that decode into rows, the record rules (records/) and the sinks.
 */
import type { MetadataColumns } from '../kernel/records.js';
import type { SchemaField } from '../schema/table-schema.js';

/** UNKNOWN_FIELDS: a field the table lacks is a dead letter, dropped, or kept in a JSON column. */
export type UnknownFields = 'reject' | 'ignore' | 'json';

/** The table's user columns and what to do with fields it does not have; without it, rows go as they are. */
export interface RowShape {
  readonly fields: readonly SchemaField[];
  /** `evolve`: a field the table lacks is a column to add (evolve-columns.ts); until then as `reject`. */
  readonly unknownFields: UnknownFields | 'evolve';
  /** Optional metadata columns (none when absent). */
  readonly metadata?: MetadataColumns;
  /** FIELD_NAMES: `sanitize` maps each name BigQuery refuses to one it takes (field-names.ts); else `strict`. */
  readonly fieldNames?: 'strict' | 'sanitize';
}

/** Larger values cannot be rows (BigQuery's 10 MB request and row limits, less the metadata). */
export const maxRecordBytes = 9 * 1024 * 1024;

export const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The batch's ingestion time as text, made once per batch rather than once per row. */
let ingested = { at: Number.NaN, text: '' };
export function ingestedText(at: Date): string {
  if (at.getTime() !== ingested.at) ingested = { at: at.getTime(), text: at.toISOString() };
  return ingested.text;
}

/** The key as text where it is valid UTF-8, else null (a binary key stays in `_kafka_key` only). */
export function keyText(key: Buffer | null): string | null {
  if (key === null) return null;
  try {
    return strictUtf8.decode(key);
  } catch {
    return null;
  }
}
