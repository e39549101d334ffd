/**
 * BigQuery schemas compared and merged: what it takes to bring a table to a schema (additive evolution),
 * how a schema version's columns fit a table's, and the one merge that brings a table's columns forward.
 * Pure.
 */
import type { SchemaField } from './table-schema.js';

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

/**
 * The table's schema brought forward to the wanted columns, the one merge of schemas: the table's columns
 * in their order (a REQUIRED one relaxed where the wanted is NULLABLE, RECORDs merged field by field), the
 * new ones after them. A column the wanted schema lacks is kept (columns are never removed), and one whose
 * type it changed keeps its type. New columns come as given (`evolveTable`, which refuses a REQUIRED one
 * first) or `nullable` (a table whose columns follow the values' own schema: BigQuery adds no REQUIRED
 * column to a table with rows, and that version's records become dead letters instead).
 */
export function mergeSchemas(
  current: readonly SchemaField[],
  wanted: readonly SchemaField[],
  newColumns: 'as-given' | 'nullable' = 'as-given',
): SchemaField[] {
  const byName = new Map(wanted.map((f) => [f.name.toLowerCase(), f]));
  const names = new Set(current.map((f) => f.name.toLowerCase()));
  const kept = current.map((field): SchemaField => {
    const next = byName.get(field.name.toLowerCase());
    if (next === undefined || typeOf(next) !== typeOf(field)) return field;
    const relaxed = modeOf(field) === 'REQUIRED' && modeOf(next) === 'NULLABLE';
    return {
      ...field,
      ...(relaxed ? { mode: 'NULLABLE' } : {}),
      ...(typeOf(field) === 'RECORD'
        ? { fields: mergeSchemas(field.fields ?? [], next.fields ?? [], newColumns) }
        : {}),
    };
  });
  const added = wanted.filter((f) => !names.has(f.name.toLowerCase()));
  return [...kept, ...(newColumns === 'nullable' ? added.map(nullable) : added)];
}

/**
 * How the columns of one schema version (the values' own) fit the table's: `missing` are columns the
 * table lacks (the table must evolve before such records are written), `conflict` the first field the
 * table cannot take (another type, REPEATED against not, a REQUIRED column the version does not have).
 */
export function fitColumns(
  version: readonly SchemaField[],
  table: readonly SchemaField[],
  prefix = '',
): { missing: string[]; conflict: string | undefined } {
  const missing: string[] = [];
  let conflict: string | undefined;
  const byName = new Map(table.map((f) => [f.name.toLowerCase(), f]));
  const names = new Set(version.map((f) => f.name.toLowerCase()));
  for (const field of version) {
    const column = `${prefix}${field.name}`;
    const target = byName.get(field.name.toLowerCase());
    if (target === undefined) {
      missing.push(column);
      continue;
    }
    if (conflict !== undefined) continue;
    if (typeOf(field) !== typeOf(target))
      conflict = `field ${column} is ${typeOf(field)} but the table's column is ${typeOf(target)}`;
    else if ((modeOf(field) === 'REPEATED') !== (modeOf(target) === 'REPEATED'))
      conflict = `field ${column} is ${modeOf(field)} but the table's column is ${modeOf(target)}`;
    else if (typeOf(field) === 'RECORD') {
      const nested = fitColumns(field.fields ?? [], target.fields ?? [], `${column}.`);
      missing.push(...nested.missing);
      conflict = nested.conflict;
    }
  }
  if (conflict === undefined) {
    const gone = table.find((f) => modeOf(f) === 'REQUIRED' && !names.has(f.name.toLowerCase()));
    if (gone !== undefined)
      conflict = `the table's REQUIRED column ${prefix}${gone.name} is not in this version`;
  }
  return { missing, conflict };
}

function nullable(field: SchemaField): SchemaField {
  return {
    ...field,
    mode: field.mode === 'REPEATED' ? 'REPEATED' : 'NULLABLE',
    ...(field.fields === undefined ? {} : { fields: field.fields.map(nullable) }),
  };
}
