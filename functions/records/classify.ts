import type { ValueFormat } from '../formats/value-format.js';
import type { DeadLetter, KafkaRecord, RowToWrite } from '../kernel/records.js';
import type { ColumnEvolver } from './evolve-columns.js';
import { decodeValue, finishRow, isDeadLetter, type RowShape, toRow, userColumns } from './records.js';
import type { Rules } from './rules.js';
import type { Transform } from './transform.js';

/** How records become rows: the table's shape, the business rules, what a tombstone is. */
export interface RecordPolicy {
  /** Validation against the table schema; without it rows go to BigQuery as they are. */
  readonly shape?: RowShape;
  /** A record with a null value: compacted topics carry them by design (skip), elsewhere a bug (dead-letter). */
  readonly tombstones: 'skip' | 'dead-letter';
  /** Business rules (RULES_MODULE), if any. */
  readonly rules?: Rules;
  /** The route's transform (TRANSFORM_MODULE), if any: runs between decoding and validation. */
  readonly transform?: Transform;
  /** Values that are not JSON text (Avro, Protobuf, JSON Schema); without it, JSON. */
  readonly format?: ValueFormat;
  /** UNKNOWN_FIELDS=evolve: adds the columns records need (and holds their batch back until it has). */
  readonly evolve?: ColumnEvolver;
  /**
   * A route of a group (routes sharing a topic by `when`): why a record handed to it is no route's (a
   * `schema` dead letter), undefined for its own records.
   */
  readonly refuse?: (record: KafkaRecord) => string | undefined;
}

/**
 * The shape a route's records may be read against straight from their JSON text (the one-pass reader):
 * JSON values (no value format) without business rules, which judge a row object. Undefined otherwise.
 */
export function directShape(policy: RecordPolicy): RowShape | undefined {
  return policy.format === undefined &&
    policy.rules === undefined &&
    policy.transform === undefined &&
    policy.shape?.fieldNames !== 'sanitize'
    ? policy.shape
    : undefined;
}

/**
 * The value format a route's records may be written by straight from their bytes (a compiled path, #42):
 * one that has such a path, without business rules, a transform or sanitized names. Undefined otherwise.
 */
export function directFormat(policy: RecordPolicy): ValueFormat | undefined {
  return policy.format?.directRows !== undefined &&
    policy.shape !== undefined &&
    policy.rules === undefined &&
    policy.transform === undefined &&
    policy.shape.fieldNames !== 'sanitize'
    ? policy.format
    : undefined;
}

export interface Classified {
  /** How many rows were made. */
  readonly rows: number;
  readonly letters: DeadLetter[];
  /** Tombstones skipped (TOMBSTONES=skip): nothing to write, counted so that every offset is accounted for. */
  readonly tombstones: number;
  /** Records the transform dropped: nothing to write, counted alike. */
  readonly filtered: number;
}

/**
 * Each record's fate: a row, a dead letter with its reason, or (TOMBSTONES=skip) a skipped tombstone.
 * Each row is handed to `take` as soon as it is made (and then no longer held here): returns the dead
 * letters, the tombstones skipped and how many rows were taken.
 */
export async function classifyEach(
  records: readonly KafkaRecord[],
  policy: RecordPolicy,
  ingestedAt: Date,
  take: (row: RowToWrite) => void,
  /** Takes a record's row without its being decoded here (true), or leaves it to the general path. */
  direct?: (record: KafkaRecord) => boolean,
): Promise<Classified> {
  let rows = 0;
  const letters: DeadLetter[] = [];
  let tombstones = 0;
  let filtered = 0;
  // The schemas the records name, fetched before any is judged: a registry fault is no bad record.
  // (Not those no route of a group takes: their schemas are no table's business.)
  const refuse = policy.refuse;
  await policy.format?.prepare(
    refuse === undefined ? records : records.filter((record) => refuse(record) === undefined),
  );
  for (const record of records) {
    if (record.value === null && policy.tombstones === 'skip') {
      tombstones++;
      continue;
    }
    const refused = policy.refuse?.(record);
    if (refused !== undefined) {
      letters.push({ record, kind: 'schema', message: refused });
      continue;
    }
    if (direct?.(record)) {
      rows++;
      continue;
    }
    const result = await rowOf(record, ingestedAt, policy);
    if (result === 'filtered') {
      filtered++;
      continue;
    }
    if (isDeadLetter(result)) {
      letters.push(result);
      continue;
    }
    const broken =
      policy.rules === undefined ? undefined : await policy.rules.check(userColumns(result.row), record);
    if (broken === undefined) {
      take(result);
      rows++;
    } else letters.push({ record, kind: 'rule', message: broken });
  }
  if (policy.evolve !== undefined) await evolveColumns(letters, policy.evolve);
  return { rows, letters, tombstones, filtered };
}

/**
 * UNKNOWN_FIELDS=evolve: the columns the batch's records lack are added (and the batch waits for the next
 * run, which writes it with them: PartitionWaitsError), or their records stay `schema` dead letters, saying
 * why the column was not added.
 */
async function evolveColumns(letters: DeadLetter[], evolver: ColumnEvolver): Promise<void> {
  const needs = letters.flatMap((l) =>
    l.newFields === undefined ? [] : [{ record: l.record, fields: l.newFields }],
  );
  if (needs.length === 0) return;
  const refused = await evolver.evolve(needs);
  for (const [i, letter] of letters.entries()) {
    if (letter.newFields === undefined) continue;
    const why = refused.get(letter.record);
    letters[i] = { record: letter.record, kind: 'schema', message: why ?? letter.message };
  }
}

/** A record's row, its dead letter, or `filtered` (its transform dropped it); rules not applied. */
export async function rowOf(
  record: KafkaRecord,
  ingestedAt: Date,
  policy: Pick<RecordPolicy, 'shape' | 'format' | 'transform'>,
): Promise<RowToWrite | DeadLetter | 'filtered'> {
  if (policy.transform === undefined) return toRow(record, ingestedAt, policy.shape, policy.format);
  const decoded = decodeValue(record, policy.format);
  if (decoded.letter !== undefined) return decoded.letter;
  const outcome = await policy.transform.apply(decoded.value, record);
  if ('filtered' in outcome) return 'filtered';
  if ('error' in outcome) return { record, kind: 'transform', message: outcome.error };
  return finishRow(record, outcome.value, ingestedAt, policy.shape);
}
