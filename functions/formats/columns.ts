import type { SchemaField } from '../schema/table-schema.js';
import { modeOf, typeOf } from '../sinks/schema-evolution.js';

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

/**
 * The table's schema brought forward to a version's columns where BigQuery allows it, for tables whose
 * columns follow the values' schema: new columns are added NULLABLE (BigQuery adds no REQUIRED column to a
 * table with rows), columns the version no longer has are kept (columns are never removed), and a column
 * whose type the version changed keeps its type (that version's records become dead letters instead).
 */
export function followedColumns(
  current: readonly SchemaField[],
  version: readonly SchemaField[],
): SchemaField[] {
  const byName = new Map(version.map((f) => [f.name.toLowerCase(), f]));
  const names = new Set(current.map((f) => f.name.toLowerCase()));
  const kept = current.map((field): SchemaField => {
    const next = byName.get(field.name.toLowerCase());
    if (next === undefined || typeOf(next) !== typeOf(field)) return field;
    const relaxed =
      modeOf(field) === 'REQUIRED' && modeOf(next) === 'NULLABLE' ? { mode: 'NULLABLE' as const } : {};
    return typeOf(field) === 'RECORD'
      ? { ...field, ...relaxed, fields: followedColumns(field.fields ?? [], next.fields ?? []) }
      : { ...field, ...relaxed };
  });
  const added = version.filter((f) => !names.has(f.name.toLowerCase())).map(nullable);
  return [...kept, ...added];
}

function nullable(field: SchemaField): SchemaField {
  return {
    ...field,
    mode: field.mode === 'REPEATED' ? 'REPEATED' : 'NULLABLE',
    ...(field.fields === undefined ? {} : { fields: field.fields.map(nullable) }),
  };
}
