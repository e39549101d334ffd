import type { BigQuery } from '@google-cloud/bigquery';
import { ConfigError } from '../kernel/errors.js';
import type { Logger } from '../kernel/logger.js';
import { sleep } from '../kernel/retry.js';
import type { SchemaField } from '../schema/table-schema.js';
import { bigQueryError } from './bigquery-tables.js';

/**
 * Additive schema evolution: at the start of a run the table's schema is compared with the schema file's.
 * What BigQuery allows on a table with data is applied before anything is written: new NULLABLE or
 * REPEATED columns (nested fields of RECORDs too) and REQUIRED → NULLABLE. Anything else (a type change, a
 * removed column, a new REQUIRED column, a column made stricter) stops the run with exit 2, naming the
 * column and the change, and nothing is written.
 */
export type SchemaChange =
  | { readonly kind: 'add'; readonly column: string; readonly field: SchemaField }
  | { readonly kind: 'relax'; readonly column: string };

export interface SchemaRefusal {
  readonly column: string;
  readonly change: 'removed' | 'type' | 'required-added' | 'mode';
  readonly message: string;
}

const typeAliases: Record<string, string> = {
  INTEGER: 'INT64',
  FLOAT: 'FLOAT64',
  BOOLEAN: 'BOOL',
  STRUCT: 'RECORD',
  DECIMAL: 'NUMERIC',
  BIGDECIMAL: 'BIGNUMERIC',
};
/** A column's type and mode as BigQuery compares them (INTEGER is INT64, no mode is NULLABLE). */
export const typeOf = (f: SchemaField) => typeAliases[f.type.toUpperCase()] ?? f.type.toUpperCase();
export const modeOf = (f: SchemaField) => (f.mode ?? 'NULLABLE').toUpperCase();

/** What it takes to go from the table's schema to the wanted one. Pure; column names compare as BigQuery does (case-insensitively). */
export function compareSchemas(
  current: readonly SchemaField[],
  wanted: readonly SchemaField[],
  prefix = '',
): { changes: SchemaChange[]; refused: SchemaRefusal[] } {
  const changes: SchemaChange[] = [];
  const refused: SchemaRefusal[] = [];
  const wantedByName = new Map(wanted.map((f) => [f.name.toLowerCase(), f]));
  const currentNames = new Set(current.map((f) => f.name.toLowerCase()));
  for (const field of current) {
    const column = prefix + field.name;
    const next = wantedByName.get(field.name.toLowerCase());
    if (next === undefined) {
      refused.push({
        column,
        change: 'removed',
        message: `column ${column} is in the table but not in the schema file (columns are never removed)`,
      });
      continue;
    }
    if (typeOf(field) !== typeOf(next)) {
      refused.push({
        column,
        change: 'type',
        message: `column ${column} changes type from ${typeOf(field)} to ${typeOf(next)}`,
      });
      continue;
    }
    const [from, to] = [modeOf(field), modeOf(next)];
    if (from !== to) {
      if (from === 'REQUIRED' && to === 'NULLABLE') changes.push({ kind: 'relax', column });
      else
        refused.push({
          column,
          change: 'mode',
          message: `column ${column} changes mode from ${from} to ${to}`,
        });
    }
    if (typeOf(field) === 'RECORD') {
      const nested = compareSchemas(field.fields ?? [], next.fields ?? [], `${column}.`);
      changes.push(...nested.changes);
      refused.push(...nested.refused);
    }
  }
  for (const field of wanted) {
    if (currentNames.has(field.name.toLowerCase())) continue;
    const column = prefix + field.name;
    if (modeOf(field) === 'REQUIRED') {
      refused.push({
        column,
        change: 'required-added',
        message: `new column ${column} is REQUIRED (a column added to a table with rows must be NULLABLE or REPEATED)`,
      });
    } else {
      changes.push({ kind: 'add', column, field });
    }
  }
  return { changes, refused };
}

/** The table's schema with the changes applied: its columns in their order, new ones after them. */
export function evolvedSchema(
  current: readonly SchemaField[],
  wanted: readonly SchemaField[],
): SchemaField[] {
  const wantedByName = new Map(wanted.map((f) => [f.name.toLowerCase(), f]));
  const currentNames = new Set(current.map((f) => f.name.toLowerCase()));
  const kept = current.map((field): SchemaField => {
    const next = wantedByName.get(field.name.toLowerCase());
    if (next === undefined) return field;
    const relaxed = modeOf(field) === 'REQUIRED' && modeOf(next) === 'NULLABLE';
    return {
      ...field,
      ...(relaxed ? { mode: 'NULLABLE' } : {}),
      ...(typeOf(field) === 'RECORD' ? { fields: evolvedSchema(field.fields ?? [], next.fields ?? []) } : {}),
    };
  });
  return [...kept, ...wanted.filter((f) => !currentNames.has(f.name.toLowerCase()))];
}

export interface SchemaEvolution {
  readonly table: string;
  readonly changes: readonly SchemaChange[];
}

/**
 * Brings the table's schema to the wanted one where BigQuery allows it, before anything is written.
 * Refused changes throw a ConfigError naming BQ_SCHEMA_FILE, the column and the change (exit 2). Several
 * tasks may do it at once: each patches the same schema, derived from the same file, and a patch that
 * finds the table already changed reads it again and finds nothing left to do. Returns what was applied.
 */
export async function evolveTable(
  bigquery: BigQuery,
  target: { dataset: string; table: string },
  wanted: readonly SchemaField[],
  logger: Logger,
): Promise<SchemaEvolution> {
  const table = bigquery.dataset(target.dataset).table(target.table);
  for (let attempt = 1; ; attempt++) {
    let current: SchemaField[];
    try {
      const [metadata] = await table.getMetadata();
      current = (metadata.schema?.fields ?? []) as SchemaField[];
    } catch (error) {
      throw bigQueryError(error, `read the schema of ${target.table}`);
    }
    const { changes, refused } = compareSchemas(current, wanted);
    if (refused.length > 0) {
      throw new ConfigError(
        'BQ_SCHEMA_FILE',
        `the schema file asks for changes BigQuery cannot make to ${target.dataset}.${target.table}: ${refused.map((r) => r.message).join('; ')}; nothing was written`,
      );
    }
    if (changes.length === 0) return { table: target.table, changes: [] };
    try {
      await table.setMetadata({ schema: { fields: evolvedSchema(current, wanted) } });
      for (const change of changes) {
        logger.notice('table schema evolved', { event: 'schema_change', table: target.table, ...change });
      }
      return { table: target.table, changes };
    } catch (error) {
      // Another task changing the same table at once: read it again (its change may be ours already).
      if (attempt >= 5) throw bigQueryError(error, `evolve the schema of ${target.table}`);
      logger.warn('schema update failed; reading the table again', { error, attempt });
      await sleep(200 * attempt);
    }
  }
}
