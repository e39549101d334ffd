/**
 * UNKNOWN_FIELDS=evolve: a JSON field the table lacks gets a NULLABLE column, its type inferred from the
 * values seen, before any row that needs it is written. Conservative by rule:
 *
 * - a string is STRING, true/false BOOL, an integer INT64, a number with a fraction FLOAT64;
 * - an object is a RECORD of its fields (inferred alike), an array a REPEATED column of its first item's
 *   type; null, [] and {} say nothing: such a field is left out of the row (as BigQuery stores a missing
 *   NULLABLE value) and no column is made for it;
 * - the first record (in offset order) that carries a field decides its type; a later value that does not
 *   fit the column is a `schema` dead letter, never a type change.
 *
 * Bounded: at most `perRun` columns a route adds in one run (then its partitions wait for the next run)
 * and at most `maxColumns` top-level columns the table may reach (then the fields are `schema` dead
 * letters). Columns are added by `apply` (the table patched, the audit trail written); the batch that
 * needed them is then not written in this run (PartitionWaitsError): the next run starts with the table's
 * new columns and writes it.
 */
import { PartitionWaitsError } from '../kernel/errors.js';
import type { JsonValue, KafkaRecord } from '../kernel/records.js';
import type { SchemaField } from '../schema/table-schema.js';

export interface ColumnEvolver {
  /**
   * The records' fields the table lacks (each record's, in offset order): adds what the caps allow and
   * throws PartitionWaitsError when it added any (or the run's share is spent); otherwise returns, per
   * record refused, why (its dead letter).
   */
  evolve(needs: readonly NewFields[]): Promise<Map<KafkaRecord, string>>;
}

export interface NewFields {
  readonly record: KafkaRecord;
  readonly fields: Readonly<Record<string, JsonValue>>;
}

export interface EvolverOptions {
  /** The table's top-level user columns now. */
  readonly columns: readonly SchemaField[];
  /** EVOLVE_COLUMNS_PER_RUN. */
  readonly perRun: number;
  /** EVOLVE_COLUMNS_MAX: the table's top-level user columns, at most. */
  readonly maxColumns: number;
  /** Adds the columns to the table (and the audit trail); resolves once the table has them. */
  apply(fields: readonly SchemaField[]): Promise<void>;
}

const columnName = /^[A-Za-z_][A-Za-z0-9_]{0,299}$/;

export function createColumnEvolver(options: EvolverOptions): ColumnEvolver {
  const known = new Set(options.columns.map((c) => c.name.toLowerCase()));
  let addedThisRun = 0;
  let queue: Promise<unknown> = Promise.resolve();

  async function evolve(needs: readonly NewFields[]): Promise<Map<KafkaRecord, string>> {
    const refused = new Map<KafkaRecord, string>();
    const adding = new Map<string, SchemaField>();
    let waiting = false;
    for (const { record, fields } of needs) {
      for (const [name, value] of Object.entries(fields)) {
        const key = name.toLowerCase();
        if (adding.has(key)) continue; // an earlier record of the batch adds it
        if (known.has(key)) {
          // Added in this run (the run's columns were known at its start): the next run writes it.
          waiting = true;
          continue;
        }
        const field = inferField(name, value);
        if (typeof field === 'string') {
          refused.set(record, field);
          continue;
        }
        if (field === undefined) continue;
        if (known.size + adding.size >= options.maxColumns) {
          refused.set(
            record,
            `field ${name} is not a column of the table, and the table has reached EVOLVE_COLUMNS_MAX (${options.maxColumns} columns)`,
          );
          continue;
        }
        if (addedThisRun + adding.size >= options.perRun) {
          waiting = true;
          continue;
        }
        adding.set(key, field);
      }
    }
    if (adding.size > 0) {
      const fields = [...adding.values()];
      await options.apply(fields);
      for (const key of adding.keys()) known.add(key);
      addedThisRun += fields.length;
      throw new PartitionWaitsError(
        `columns ${fields.map((f) => `${f.name} ${f.mode === 'REPEATED' ? 'REPEATED ' : ''}${f.type}`).join(', ')} were added to the table: the next run writes the records that need them`,
      );
    }
    if (waiting)
      throw new PartitionWaitsError(
        `records have fields the table lacks, and this run has added EVOLVE_COLUMNS_PER_RUN (${options.perRun}) columns: the next run adds more`,
      );
    return refused;
  }

  return {
    // One at a time: two partitions' batches naming the same new field add it once.
    evolve(needs) {
      const result = queue.then(() => evolve(needs));
      queue = result.catch(() => {});
      return result;
    },
  };
}

/** A field's column by the rules above; undefined when its value says nothing; a string when it cannot be one. */
export function inferField(name: string, value: JsonValue): SchemaField | undefined | string {
  if (!columnName.test(name))
    return `field ${name} is not a column of the table, and is not a name BigQuery takes for one (FIELD_NAMES=sanitize maps it)`;
  if (value === null) return undefined;
  if (Array.isArray(value)) {
    const item = value.find((v) => v !== null);
    if (item === undefined) return undefined;
    if (Array.isArray(item))
      return `field ${name} is not a column of the table, and an array of arrays cannot be one`;
    const inner = inferField(name, item);
    if (typeof inner !== 'object') return inner;
    return { ...inner, mode: 'REPEATED' };
  }
  if (typeof value === 'object') {
    const fields: SchemaField[] = [];
    for (const [key, v] of Object.entries(value)) {
      const field = inferField(key, v);
      if (typeof field === 'string') return field.replace(`field ${key}`, `field ${name}.${key}`);
      if (field !== undefined) fields.push(field);
    }
    return fields.length === 0 ? undefined : { name, type: 'RECORD', mode: 'NULLABLE', fields };
  }
  if (typeof value === 'string') return { name, type: 'STRING', mode: 'NULLABLE' };
  if (typeof value === 'boolean') return { name, type: 'BOOL', mode: 'NULLABLE' };
  return { name, type: Number.isSafeInteger(value) ? 'INT64' : 'FLOAT64', mode: 'NULLABLE' };
}

/** Whether a value says nothing a column would hold (null, [], {}, or made only of such). */
export function isEmptyValue(value: JsonValue): boolean {
  if (value === null) return true;
  if (Array.isArray(value)) return value.every(isEmptyValue);
  if (typeof value === 'object') return Object.values(value).every(isEmptyValue);
  return false;
}
