/**
 * `cdc` mode's records: each is a change to the row with its primary key. A Debezium event (`debezium`)
 * or a keyed value (`upsert`: the value is the row, a null value deletes the key) becomes a row carrying
 * BigQuery's pseudo-columns `_CHANGE_TYPE` (UPSERT or DELETE) and `_CHANGE_SEQUENCE_NUMBER`, which is the
 * record's offset: BigQuery applies a key's change with the highest sequence number, so a replayed change
 * (a crash, a retried append, a backward seek) can never overwrite a later one.
 */

import { parseConnectJson } from '../formats/connect/types.js';
import type { ValueFormat } from '../formats/value-format.js';
import type { DeadLetter, JsonValue, KafkaRecord, Row, RowToWrite } from '../kernel/records.js';
import { type Change, debeziumChange } from './debezium.js';
import { decodeValue, finishRow, isDeadLetter, type RowShape } from './records.js';
import type { Rules } from './rules.js';

export type ChangeFormat = 'debezium' | 'upsert';

export interface ChangePolicy {
  readonly format: ChangeFormat;
  readonly primaryKey: readonly string[];
  /** The table's user columns (validation); a delete's row is validated on its key columns alone. */
  readonly shape?: RowShape;
  readonly rules?: Rules;
  readonly valueFormat?: ValueFormat;
  /** The optional columns `_cdc_op`, `_cdc_source_ts`, `_cdc_source_position` (Debezium only). */
  readonly sourceColumns?: boolean;
}

export interface ClassifiedChanges {
  readonly rows: RowToWrite[];
  readonly letters: DeadLetter[];
  /** Records that change nothing: the tombstone Debezium sends after each delete. */
  readonly tombstones: number;
}

export const changeTypeColumn = '_CHANGE_TYPE';
export const changeSequenceColumn = '_CHANGE_SEQUENCE_NUMBER';
export const sourceColumnNames = ['_cdc_op', '_cdc_source_ts', '_cdc_source_position'] as const;

/**
 * BigQuery's sequence number of a record: two hexadecimal sections, a generation (0; a later one would
 * order every change after a repartitioning above those before it) and the offset, 16 digits.
 */
export function sequenceNumber(offset: number, generation = 0): string {
  return `${generation.toString(16).toUpperCase()}/${offset.toString(16).toUpperCase().padStart(16, '0')}`;
}

export async function classifyChanges(
  records: readonly KafkaRecord[],
  policy: ChangePolicy,
  ingestedAt: Date,
  /** Takes a change's record straight from its bytes (true), or leaves it to the general path. */
  direct?: (record: KafkaRecord) => boolean,
): Promise<ClassifiedChanges> {
  const rows: RowToWrite[] = [];
  const letters: DeadLetter[] = [];
  let tombstones = 0;
  await policy.valueFormat?.prepare(records);
  const keyShape = policy.shape && {
    ...policy.shape,
    fields: policy.shape.fields.filter((f) => policy.primaryKey.includes(f.name)),
    unknownFields: 'reject' as const,
  };
  for (const record of records) {
    let change: Change;
    if (record.value === null) {
      if (policy.format === 'debezium') {
        tombstones++; // follows a delete, for log compaction: the delete itself was the change
        continue;
      }
      change = keyDelete(record, policy.primaryKey);
    } else if (direct?.(record)) {
      continue;
    } else {
      // Debezium's JSON: its longs beyond 2^53 (nanosecond timestamps, large keys) kept exact.
      const decoded =
        policy.format === 'debezium'
          ? decodeValue(record, policy.valueFormat, parseConnectJson)
          : decodeValue(record, policy.valueFormat);
      if (decoded.letter !== undefined) {
        letters.push(decoded.letter);
        continue;
      }
      change =
        policy.format === 'debezium'
          ? debeziumChange(decoded.value, policy.primaryKey)
          : upsertOf(decoded.value);
    }
    if (change.kind === 'invalid') {
      letters.push({ record, kind: 'decode', message: change.reason });
      continue;
    }
    const made = finishRow(
      record,
      change.row,
      ingestedAt,
      change.kind === 'delete' ? keyShape : policy.shape,
    );
    if (isDeadLetter(made)) {
      letters.push(made);
      continue;
    }
    const missing = policy.primaryKey.filter((k) => made.row[k] === undefined || made.row[k] === null);
    if (missing.length > 0) {
      letters.push({
        record,
        kind: 'schema',
        message: `primary key column(s) ${missing.join(', ')} missing`,
      });
      continue;
    }
    if (change.kind === 'upsert' && policy.rules !== undefined) {
      const broken = await policy.rules.check(change.row, record);
      if (broken !== undefined) {
        letters.push({ record, kind: 'rule', message: broken });
        continue;
      }
    }
    made.row[changeTypeColumn] = change.kind === 'upsert' ? 'UPSERT' : 'DELETE';
    made.row[changeSequenceColumn] = sequenceNumber(record.offset);
    if (policy.sourceColumns) withSourceColumns(made.row, change);
    rows.push(made);
  }
  return { rows, letters, tombstones };
}

/** CDC_SOURCE_COLUMNS: the event's op, source time and position, where the change has an event. */
function withSourceColumns(row: Row, change: Change): void {
  if (!('event' in change)) return;
  row._cdc_op = change.event.op;
  row._cdc_source_ts =
    change.event.sourceTsMs === null ? null : new Date(change.event.sourceTsMs).toISOString();
  row._cdc_source_position = change.event.position;
}

function upsertOf(value: JsonValue): Change {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return { kind: 'invalid', reason: 'value is not a JSON object' };
  return { kind: 'upsert', row: value, event: { op: 'u', sourceTsMs: null, position: null } };
}

/** `upsert` format's tombstone: the record key names the row to delete. */
function keyDelete(record: KafkaRecord, primaryKey: readonly string[]): Change {
  const key = keyObject(record.key, primaryKey);
  if (key === undefined)
    return {
      kind: 'invalid',
      reason: `a null value deletes its key, but the key is not JSON naming ${primaryKey.join(', ')}`,
    };
  return { kind: 'delete', row: key, event: { op: 'd', sourceTsMs: null, position: null } };
}

/**
 * The record key as the primary key's columns: a JSON object (Kafka Connect's schema wrapper taken off),
 * or, for a one-column key, a bare JSON scalar or plain text.
 */
export function keyObject(
  key: Buffer | null,
  primaryKey: readonly string[],
): Record<string, JsonValue> | undefined {
  if (key === null) return undefined;
  const text = key.toString('utf8');
  let parsed: JsonValue;
  try {
    parsed = JSON.parse(text) as JsonValue;
  } catch {
    return primaryKey.length === 1 ? { [primaryKey[0]!]: text } : undefined;
  }
  if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
    const fields =
      'payload' in parsed &&
      'schema' in parsed &&
      parsed.payload !== null &&
      typeof parsed.payload === 'object'
        ? (parsed.payload as Record<string, JsonValue>)
        : parsed;
    if (primaryKey.some((k) => fields[k] === undefined || fields[k] === null)) return undefined;
    return Object.fromEntries(primaryKey.map((k) => [k, fields[k]!]));
  }
  if (primaryKey.length === 1 && parsed !== null && !Array.isArray(parsed))
    return { [primaryKey[0]!]: parsed };
  return undefined;
}

/** Debezium without BQ_PRIMARY_KEY: the key's fields are the primary key (the source table's own). */
export function primaryKeyOfKey(key: Buffer | null): string[] | undefined {
  if (key === null) return undefined;
  try {
    const parsed = JSON.parse(key.toString('utf8')) as JsonValue;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
    const fields =
      'payload' in parsed &&
      'schema' in parsed &&
      parsed.payload !== null &&
      typeof parsed.payload === 'object'
        ? parsed.payload
        : parsed;
    const names = Object.keys(fields);
    return names.length > 0 ? names : undefined;
  } catch {
    return undefined;
  }
}
