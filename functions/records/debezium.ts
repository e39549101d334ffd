/**
 * Debezium's change events, as Kafka Connect's JSON converter writes them (with the schema wrapper,
 * `schemas.enable=true`, or without) or as a registry format decodes them: the envelope's `op` says what
 * happened to the row, `after` is the row as it is now, `before` as it was (for a delete, at least its
 * key). https://debezium.io/documentation/reference/stable/connectors/postgresql.html#postgresql-events
 *
 * With the schema wrapper, each field's logical type (`io.debezium.time.*`, Kafka Connect's `Decimal`,
 * `VariableScaleDecimal`, ...) turns its value into the form BigQuery ingests: exact decimal text, dates,
 * times and timestamps as text. Without it the values are taken as they come (the validator then judges
 * them against the table's columns): a decimal is base64 bytes whose scale only the schema knows.
 */

import { type ConnectSchema, convertStruct, settleLongs } from '../formats/connect/types.js';
import type { JsonValue } from '../kernel/records.js';

/** What one change event asks of the table. */
export type Change =
  | { readonly kind: 'upsert'; readonly row: Record<string, JsonValue>; readonly event: ChangeEvent }
  | { readonly kind: 'delete'; readonly row: Record<string, JsonValue>; readonly event: ChangeEvent }
  | { readonly kind: 'invalid'; readonly reason: string };

/** Where the change came from, for the optional CDC columns. */
export interface ChangeEvent {
  readonly op: string;
  readonly sourceTsMs: number | null;
  /** The source's position (PostgreSQL: lsn and txId; MySQL: binlog file and position), as JSON text. */
  readonly position: string | null;
}

const positionFields = [
  'lsn',
  'txId',
  'file',
  'pos',
  'row',
  'gtid',
  'sequence',
  'scn',
  'commit_lsn',
  'change_lsn',
];

/** A Debezium event (the value, parsed) → the change it asks for. */
export function debeziumChange(value: JsonValue, primaryKey: readonly string[]): Change {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return { kind: 'invalid', reason: 'a Debezium event must be a JSON object' };
  let envelope: Record<string, JsonValue> = value;
  let schema: ConnectSchema | undefined;
  if ('payload' in value && 'schema' in value) {
    // Kafka Connect's JSON converter with schemas.enable=true.
    if (value.payload === null || typeof value.payload !== 'object' || Array.isArray(value.payload))
      return { kind: 'invalid', reason: 'the schema wrapper holds no envelope (payload is not an object)' };
    envelope = value.payload;
    schema = value.schema as unknown as ConnectSchema;
  }
  const op = envelope.op;
  if (typeof op !== 'string') return { kind: 'invalid', reason: 'not a Debezium envelope: no op field' };
  const event = eventOf(envelope, op);
  const part = (name: 'before' | 'after') => {
    const v = envelope[name];
    if (v === null || v === undefined) return null;
    if (typeof v !== 'object' || Array.isArray(v)) return undefined;
    const fieldSchema = schema?.fields?.find((f) => f.field === name);
    return (fieldSchema === undefined ? settleLongs(v) : convertStruct(v, fieldSchema)) as Record<
      string,
      JsonValue
    >;
  };
  switch (op) {
    case 'c':
    case 'r':
    case 'u': {
      const after = part('after');
      if (!after) return { kind: 'invalid', reason: `op "${op}" without an "after" row` };
      return { kind: 'upsert', row: after, event };
    }
    case 'd': {
      const before = part('before');
      if (!before)
        return { kind: 'invalid', reason: 'op "d" without a "before" row (the key of the deleted row)' };
      const missing = primaryKey.filter((k) => before[k] === undefined || before[k] === null);
      if (missing.length > 0)
        return {
          kind: 'invalid',
          reason: `op "d": "before" lacks the primary key column(s) ${missing.join(', ')}`,
        };
      return { kind: 'delete', row: Object.fromEntries(primaryKey.map((k) => [k, before[k]!])), event };
    }
    case 't':
      return {
        kind: 'invalid',
        reason:
          'op "t" (a TRUNCATE of the source table): not applied; truncate the BigQuery table yourself if you mean it',
      };
    default:
      return { kind: 'invalid', reason: `op "${op}" is not a row change (c, r, u, d)` };
  }
}

function eventOf(envelope: Record<string, JsonValue>, op: string): ChangeEvent {
  const source = settleLongs(envelope.source ?? null);
  if (source === null || typeof source !== 'object' || Array.isArray(source))
    return { op, sourceTsMs: null, position: null };
  const ts = source.ts_ms;
  const position = Object.fromEntries(
    positionFields.filter((f) => source[f] != null).map((f) => [f, source[f]!]),
  );
  return {
    op,
    sourceTsMs: typeof ts === 'number' ? ts : null,
    position: Object.keys(position).length > 0 ? JSON.stringify(position) : null,
  };
}
