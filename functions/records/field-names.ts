import { createHash } from 'node:crypto';
import type { JsonValue } from '../kernel/records.js';
import { type SchemaField, withExtraColumn } from '../schema/table-schema.js';

/**
 * FIELD_NAMES=sanitize: a field name BigQuery refuses as a column name mapped to one it takes, the same way
 * every time. The rule: every character other than a letter, a digit or `_` becomes `_`; a name that starts
 * with a digit gets a leading `_`; an empty name is `_`; a name longer than 300 characters keeps its first
 * 291 and ends with `_` and 8 hex digits of the SHA-256 of the whole original name. Valid names are kept as
 * they are. (`user-id` → `user_id`, `1st` → `_1st`, `prix €` → `prix__`.)
 */
export function sanitizeName(name: string): string {
  if (/^[A-Za-z_][A-Za-z0-9_]{0,299}$/.test(name)) return name;
  let out = name.replace(/[^A-Za-z0-9_]/g, '_');
  if (out === '') out = '_';
  if (/^[0-9]/.test(out)) out = `_${out}`;
  if (out.length > 300) {
    out = `${out.slice(0, 291)}_${createHash('sha256').update(name).digest('hex').slice(0, 8)}`;
  }
  return out;
}

/** The collision a value's keys have after sanitizing (two fields of one object, one name), if any. */
export class NameCollision extends Error {
  constructor(
    readonly path: string,
    readonly names: readonly [string, string],
    readonly column: string,
  ) {
    super(
      `${path === '' ? '' : `${path}: `}fields "${names[0]}" and "${names[1]}" both map to the column name "${column}" (FIELD_NAMES=sanitize)`,
    );
  }
}

/**
 * The value with every object key sanitized, nested objects and arrays included (the value itself when no
 * key changes); throws NameCollision when two keys of one object map to one name.
 */
export function sanitizeKeys(value: JsonValue, path = ''): JsonValue {
  if (Array.isArray(value)) {
    let out: JsonValue[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = sanitizeKeys(value[i]!, `${path}[${i}]`);
      if (item === value[i]) continue;
      out ??= value.slice();
      out[i] = item;
    }
    return out ?? value;
  }
  if (value === null || typeof value !== 'object') return value;
  let changed = false;
  const out: Record<string, JsonValue> = {};
  const from = new Map<string, string>();
  for (const key of Object.keys(value)) {
    const name = sanitizeName(key);
    const at = path === '' ? name : `${path}.${name}`;
    const previous = from.get(name);
    if (previous !== undefined) throw new NameCollision(path, [previous, key], name);
    from.set(name, key);
    const item = sanitizeKeys(value[key]!, at);
    if (name !== key || item !== value[key]) changed = true;
    out[name] = item;
  }
  return changed ? out : value;
}

/** A table's columns named as FIELD_NAMES=sanitize names them (from a registry's schema, say). */
export function sanitizeColumns(fields: readonly SchemaField[]): SchemaField[] {
  return fields.map((f) => ({
    ...f,
    name: sanitizeName(f.name),
    ...(f.fields === undefined ? {} : { fields: sanitizeColumns(f.fields) }),
  }));
}

/**
 * A route's columns as its table has them: named as FIELD_NAMES says (a registry's names sanitized too),
 * and with UNKNOWN_FIELDS=json a JSON column `_extra` after them.
 */
export function routeColumns(
  columns: readonly SchemaField[],
  rules: {
    readonly unknownFields: 'reject' | 'ignore' | 'json' | 'evolve';
    readonly fieldNames: 'strict' | 'sanitize';
  },
): readonly SchemaField[] {
  return withExtraColumn(
    rules.fieldNames === 'sanitize' ? sanitizeColumns(columns) : columns,
    rules.unknownFields,
  );
}
