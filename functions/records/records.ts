import { isUtf8 } from 'node:buffer';
import { topLevelFields } from '../encoders/json-cursor.js';
import { ingestedText, keyText, maxRecordBytes, type RowShape, strictUtf8 } from '../encoders/row-shape.js';
import type { ValueFormat } from '../formats/value-format.js';
import type { DeadLetter, JsonValue, KafkaRecord, Row, RowToWrite } from '../kernel/records.js';
import { metadataColumns, type SchemaField } from '../schema/table-schema.js';
import { isEmptyValue } from './evolve-columns.js';

export { ingestedText, keyText, maxRecordBytes, type RowShape };

import { NameCollision, sanitizeKeys } from './field-names.js';
import { extraColumn, validateRecord } from './validate.js';

export function rowKey(record: { topic: string; partition: number; offset: number }): string {
  return `${record.topic}:${record.partition}:${record.offset}`;
}

/**
 * Record value → row, or the reason it cannot be one. Decoding is strict (invalid UTF-8 is a dead
 * letter, not a replacement character), and the value must be a JSON object whose keys do not collide
 * with the metadata columns.
 */
export function toRow(
  record: KafkaRecord,
  ingestedAt: Date,
  shape?: RowShape,
  format?: ValueFormat,
): RowToWrite | DeadLetter {
  const decoded = decodeValue(record, format);
  if (decoded.letter !== undefined) return decoded.letter;
  const row = finishRow(record, decoded.value, ingestedAt, shape);
  // JSON text kept whole in `_extra` (UNKNOWN_FIELDS=json): as its own text, exact where numbers parse inexactly.
  if (
    format === undefined &&
    shape?.fieldNames !== 'sanitize' &&
    !isDeadLetter(row) &&
    typeof row.row[extraColumn] === 'string'
  )
    exactExtra(row.row, record.value!, shape!);
  return row;
}

/** A value decoded, or the dead letter its record is. */
export type Decoded =
  | { readonly value: JsonValue; readonly letter?: undefined }
  | { readonly letter: DeadLetter };

/**
 * A record's value, decoded (JSON text by `parse`, or the route's value format), or the dead letter it is.
 */
export function decodeValue(
  record: KafkaRecord,
  format?: ValueFormat,
  parse: (text: string) => JsonValue = parseJson,
): Decoded {
  if (record.value === null) return letter(record, 'decode', 'record value is null (tombstone)');
  if (record.value.length > maxRecordBytes) {
    // BigQuery takes at most 10 MB per insert request and per row: such a record can never be a row.
    return letter(
      record,
      'oversize',
      `value of ${record.value.length} bytes is over the ${maxRecordBytes}-byte limit of a row`,
    );
  }
  if (format !== undefined) {
    const decoded = format.decode(record.value);
    return decoded.ok ? { value: decoded.value } : letter(record, decoded.kind, decoded.message);
  }
  try {
    // Strict: invalid UTF-8 is refused (the check is native and fast; the decoder says why).
    const text = isUtf8(record.value) ? record.value.toString('utf8') : strictUtf8.decode(record.value);
    return { value: parse(text) };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return letter(record, 'decode', `value is not UTF-8 JSON: ${message}`);
  }
}

const parseJson = (text: string) => JSON.parse(text) as JsonValue;

function letter(record: KafkaRecord, kind: DeadLetter['kind'], message: string): Decoded {
  return { letter: { record, kind, message } };
}

/** A decoded value → the row (validated against the shape, metadata columns added), or its dead letter. */
export function finishRow(
  record: KafkaRecord,
  parsed: JsonValue,
  ingestedAt: Date,
  shape?: RowShape,
): RowToWrite | DeadLetter {
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return { record, kind: 'decode', message: 'value is not a JSON object' };
  }
  if (shape?.fieldNames === 'sanitize') {
    try {
      parsed = sanitizeKeys(parsed) as Record<string, JsonValue>;
    } catch (error) {
      if (error instanceof NameCollision) return { record, kind: 'schema', message: error.message };
      throw error;
    }
  }
  if (shape?.unknownFields === 'evolve') {
    const reserved = reservedColumn(parsed);
    if (reserved !== undefined) return reservedLetter(record, reserved);
    const newFields = fieldsLacking(parsed, shape.fields);
    if (newFields !== undefined)
      return {
        record,
        kind: 'schema',
        message: `${Object.keys(newFields).join(', ')}: not a column of the table`,
        newFields,
      };
  }
  // Where unknown fields are refused, validation refuses a metadata column's name too: its reason is
  // told only then (a row that passes has no such key).
  const strict = shape?.unknownFields === 'reject' || shape?.unknownFields === 'evolve';
  if (!strict) {
    const reserved = reservedColumn(parsed);
    if (reserved !== undefined) return reservedLetter(record, reserved);
  }
  // The row is the parsed (or validated) object itself, its metadata added: no copy of its fields.
  let row: Row = parsed;
  if (shape !== undefined) {
    const checked = validateRecord(
      parsed,
      shape.fields,
      shape.unknownFields === 'evolve' ? 'reject' : shape.unknownFields,
    );
    if (!checked.ok) {
      const reserved = strict ? reservedColumn(parsed) : undefined;
      if (reserved !== undefined) return reservedLetter(record, reserved);
      return { record, kind: 'schema', message: checked.message };
    }
    row = checked.row;
  }
  row._kafka_topic = record.topic;
  row._kafka_partition = record.partition;
  row._kafka_offset = record.offset;
  row._kafka_timestamp = new Date(record.timestamp).toISOString();
  row._kafka_key = record.key === null ? null : record.key.toString('base64');
  row._ingested_at = ingestedText(ingestedAt);
  if (shape?.metadata?.headers) {
    row._kafka_headers = (record.rawHeaders ?? []).map((h) => ({
      key: h.key,
      value: h.value === null ? null : h.value.toString('base64'),
    }));
  }
  if (shape?.metadata?.keyText) row._kafka_key_text = keyText(record.key);
  return { rowKey: rowKey(record), record, row };
}

/** Column names (lower case: BigQuery's are case-insensitive) per table's fields. */
const columnNames = new WeakMap<readonly SchemaField[], Set<string>>();

/**
 * UNKNOWN_FIELDS=evolve: the record's top-level fields no column has (by name, in any case), those with a
 * value; a field holding only null, [] or {} is dropped from the row (BigQuery stores it as missing).
 */
function fieldsLacking(
  value: Record<string, JsonValue>,
  fields: readonly SchemaField[],
): Record<string, JsonValue> | undefined {
  let names = columnNames.get(fields);
  if (names === undefined) {
    names = new Set(fields.map((f) => f.name.toLowerCase()));
    columnNames.set(fields, names);
  }
  let lacking: Record<string, JsonValue> | undefined;
  for (const key of Object.keys(value)) {
    if (names.has(key.toLowerCase())) continue;
    if (isEmptyValue(value[key]!)) {
      delete value[key];
      continue;
    }
    lacking ??= {};
    lacking[key] = value[key]!;
  }
  return lacking;
}

function reservedColumn(value: Row): string | undefined {
  for (const column of metadataColumns) if (Object.hasOwn(value, column)) return column;
  return undefined;
}

function reservedLetter(record: KafkaRecord, column: string): DeadLetter {
  return { record, kind: 'schema', message: `field ${column} is reserved for metadata` };
}

export function isDeadLetter(value: RowToWrite | DeadLetter): value is DeadLetter {
  return 'kind' in value;
}

/** Bytes a record weighs for batching: what we read, not what we write. */
export function recordSize(record: KafkaRecord): number {
  return (record.value?.length ?? 0) + (record.key?.length ?? 0) + 64;
}

/** A row's own fields, without the metadata columns: what a business rule judges. */
export function userColumns(row: Row): Row {
  return Object.fromEntries(
    Object.entries(row).filter(([name]) => !(metadataColumns as readonly string[]).includes(name)),
  );
}

/** `_extra` made again from the fields' own text, where the cursor reads it (else it stays as made). */
function exactExtra(row: Row, value: Buffer, shape: RowShape): void {
  const raw = topLevelFields(value);
  if (raw === undefined || raw.has(extraColumn)) return;
  const known = new Set(shape.fields.map((f) => f.name));
  const parts: string[] = [];
  for (const [key, text] of raw) if (!known.has(key)) parts.push(`${JSON.stringify(key)}:${text}`);
  row[extraColumn] = `{${parts.join(',')}}`;
}
