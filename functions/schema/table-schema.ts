import { readFileSync } from 'node:fs';
import { ConfigError } from '../kernel/errors.js';
import { exactHeadersText } from '../kernel/exact-headers.js';
import type { DeadLetter, MetadataColumns } from '../kernel/records.js';

export interface SchemaField {
  name: string;
  type: string;
  mode?: 'NULLABLE' | 'REQUIRED' | 'REPEATED';
  description?: string;
  fields?: SchemaField[];
}

/** The `_kafka_*` columns every target row carries besides the user's. */
export const metadataFields: readonly SchemaField[] = [
  { name: '_kafka_topic', type: 'STRING', mode: 'REQUIRED' },
  { name: '_kafka_partition', type: 'INT64', mode: 'REQUIRED' },
  { name: '_kafka_offset', type: 'INT64', mode: 'REQUIRED' },
  { name: '_kafka_timestamp', type: 'TIMESTAMP', mode: 'REQUIRED' },
  { name: '_kafka_key', type: 'BYTES', mode: 'NULLABLE' },
  { name: '_ingested_at', type: 'TIMESTAMP', mode: 'REQUIRED' },
];

/** Optional metadata columns, switched on per pipeline (BQ_HEADERS_COLUMN, BQ_KEY_TEXT_COLUMN). */
export const noMetadataColumns: MetadataColumns = { headers: false, keyText: false };

export const headersField: SchemaField = {
  name: '_kafka_headers',
  type: 'RECORD',
  mode: 'REPEATED',
  fields: [
    { name: 'key', type: 'STRING', mode: 'NULLABLE' },
    { name: 'value', type: 'BYTES', mode: 'NULLABLE' },
  ],
};
export const keyTextField: SchemaField = { name: '_kafka_key_text', type: 'STRING', mode: 'NULLABLE' };

/** Reads a BigQuery JSON schema (an array of fields, or `{ "fields": [...] }`) from BQ_SCHEMA_FILE. */
export function readUserSchema(path: string): SchemaField[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(
      'BQ_SCHEMA_FILE',
      `cannot read a JSON schema from ${path}: ${(error as Error).message}`,
    );
  }
  const fields = Array.isArray(parsed) ? parsed : (parsed as { fields?: unknown })?.fields;
  if (!Array.isArray(fields) || fields.length === 0) {
    throw new ConfigError('BQ_SCHEMA_FILE', `${path} holds no fields (expected a BigQuery JSON schema)`);
  }
  checkFields(fields as SchemaField[], '');
  return fields as SchemaField[];
}

function checkFields(fields: SchemaField[], prefix: string): void {
  const seen = new Set<string>();
  for (const field of fields) {
    const path = prefix + String(field?.name);
    if (typeof field?.name !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,299}$/.test(field.name)) {
      throw new ConfigError('BQ_SCHEMA_FILE', `field "${path}" has no valid name`);
    }
    if (typeof field.type !== 'string')
      throw new ConfigError('BQ_SCHEMA_FILE', `field "${path}" has no type`);
    if (seen.has(field.name.toLowerCase()))
      throw new ConfigError('BQ_SCHEMA_FILE', `field "${path}" is listed twice`);
    seen.add(field.name.toLowerCase());
    if (prefix === '' && field.name.startsWith('_kafka_')) {
      throw new ConfigError('BQ_SCHEMA_FILE', `field "${path}" uses the reserved _kafka_ prefix`);
    }
    if (['RECORD', 'STRUCT'].includes(field.type.toUpperCase())) {
      if (!Array.isArray(field.fields) || field.fields.length === 0) {
        throw new ConfigError('BQ_SCHEMA_FILE', `RECORD field "${path}" has no fields`);
      }
      checkFields(field.fields, `${path}.`);
    }
  }
}

/**
 * The error table of the exactly-once modes (`{table}_dead_letters`): one row per dead letter, written in
 * the same commit as the batch's rows and keyed by origin like them, so it holds each bad record once.
 */
export const deadLetterTableSchema: readonly SchemaField[] = [
  // The record's origin, as in the target table: a dead letter is keyed like a row.
  ...metadataFields.filter((f) => f.name !== '_ingested_at'),
  { name: 'value', type: 'BYTES', mode: 'NULLABLE', description: 'the original record value (first 9 MiB)' },
  { name: 'value_size', type: 'INT64', mode: 'NULLABLE', description: 'bytes of the original value' },
  { name: 'error_kind', type: 'STRING', mode: 'REQUIRED' },
  { name: 'error_message', type: 'STRING', mode: 'REQUIRED' },
  { name: 'headers', type: 'JSON', mode: 'NULLABLE' },
  { name: '_ingested_at', type: 'TIMESTAMP', mode: 'REQUIRED' },
  // Last: added to error tables made before it (ensureColumns), where a new column can only go at the end.
  {
    name: 'kafka_headers',
    type: 'STRING',
    mode: 'NULLABLE',
    description: 'the headers exactly, for a replay: [[name, base64 value or null], ...] in order',
  },
];

/**
 * A dead letter as a row of the error table. The value is kept up to `maxValueBytes` (what one request can
 * carry in the mode's wire format); `value_size` always says how large the whole value was.
 */
export function deadLetterRow(
  letter: DeadLetter,
  ingestedAt: Date,
  maxValueBytes: number,
): Record<string, string | number | null> {
  const { record } = letter;
  const value = record.value;
  return {
    _kafka_topic: record.topic,
    _kafka_partition: record.partition,
    _kafka_offset: record.offset,
    _kafka_timestamp: new Date(record.timestamp).toISOString(),
    _kafka_key: record.key === null ? null : record.key.toString('base64'),
    value: value === null ? null : value.subarray(0, maxValueBytes).toString('base64'),
    value_size: value === null ? null : value.length,
    error_kind: letter.kind,
    error_message: letter.message.slice(0, 16_384),
    headers: Object.keys(record.headers).length === 0 ? null : JSON.stringify(record.headers),
    _ingested_at: ingestedAt.toISOString(),
    kafka_headers: exactHeadersText(record) ?? null,
  };
}

export function deadLetterTableName(table: string): string {
  return `${table}_dead_letters`;
}

export function targetTableSchema(
  userFields: readonly SchemaField[],
  metadata: MetadataColumns = noMetadataColumns,
): SchemaField[] {
  return [
    ...userFields,
    ...metadataFields,
    ...(metadata.headers ? [headersField] : []),
    ...(metadata.keyText ? [keyTextField] : []),
  ];
}

/** The error table's primary key in cdc mode: a dead letter's origin. */
export const deadLetterKey: readonly string[] = ['_kafka_topic', '_kafka_partition', '_kafka_offset'];

/** The optional columns of a change's source (CDC_SOURCE_COLUMNS=true; Debezium's `op`, `source`). */
export const cdcSourceFields: readonly SchemaField[] = [
  {
    name: '_cdc_op',
    type: 'STRING',
    mode: 'NULLABLE',
    description: "Debezium's op of the last change: c, r, u",
  },
  {
    name: '_cdc_source_ts',
    type: 'TIMESTAMP',
    mode: 'NULLABLE',
    description: 'when the source made the change (source.ts_ms)',
  },
  {
    name: '_cdc_source_position',
    type: 'STRING',
    mode: 'NULLABLE',
    description: "the change's position in the source's log (JSON)",
  },
];

/** The metadata columns every target row carries, next to the user columns. */
export const metadataColumns = [
  '_kafka_topic',
  '_kafka_partition',
  '_kafka_offset',
  '_kafka_timestamp',
  '_kafka_key',
  '_ingested_at',
  // Optional, but reserved whether switched on or not.
  '_kafka_headers',
  '_kafka_key_text',
] as const;

/**
 * The route's user columns as the table has them: with UNKNOWN_FIELDS=json, a NULLABLE JSON column `_extra`
 * after them (unless the schema has it), which holds each record's fields the table lacks.
 */
export function withExtraColumn(
  fields: readonly SchemaField[],
  unknownFields: 'reject' | 'ignore' | 'json' | 'evolve',
): readonly SchemaField[] {
  if (unknownFields !== 'json' || fields.some((f) => f.name === '_extra')) return fields;
  return [...fields, { name: '_extra', type: 'JSON', mode: 'NULLABLE' }];
}
