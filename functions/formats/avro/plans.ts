/**
 * The compiled Avro path's plans (avro/rows.ts): per field of a writer schema, how its value is read and
 * written into the table's message, decided once per schema and table.
 */
import { metadataColumns, type SchemaField } from '../../schema/table-schema.js';
import { columnName } from '../mapped.js';
import { inside, resolve, type Scope, scopeOf } from './names.js';
import { columnTypes, type Scalar, scalarOf, wireOf } from './scalars.js';
import { type AvroSchema, branchKey } from './types.js';

/** How one value is read and written: its tag, whether null is refused, and what it is. */
export type Plan = {
  /** The column's tag (field number and wire type). */
  readonly tag: number;
  /** A record field's column name as JSON text (`"name":`), for rows sent as JSON text (avro/text.ts). */
  readonly key?: string;
  /** The union's branch that is null (-1: not a union with null). */
  readonly nullBranch: number;
  readonly required: boolean;
} & (
  | { readonly kind: Scalar }
  | {
      readonly kind: 'decimal';
      readonly scale: number;
      readonly plain: RegExp;
      /** Whether the column takes every fraction of this scale: then values of up to 6 bytes are written by digits. */
      readonly digits: boolean;
      /** A `fixed` decimal's size; -1: `bytes`, its length first. */
      readonly size: number;
    }
  /** Debezium's `VariableScaleDecimal`: its scale, then its unscaled bytes, as exact decimal text. */
  | { readonly kind: 'variable-scale'; readonly plain: RegExp }
  | { readonly kind: 'enum'; readonly symbols: readonly Buffer[]; readonly texts: readonly string[] }
  | { readonly kind: 'fixed'; readonly size: number }
  | { readonly kind: 'record'; readonly fields: readonly Plan[] }
  | { readonly kind: 'array'; readonly item: Plan }
  | {
      /**
       * A union of two types or more besides null, onto the general path's record of a column per branch:
       * each branch's plan (undefined for null) under its column's number and name; `nullBranch` as above.
       */
      readonly kind: 'union';
      readonly branches: readonly (Plan | undefined)[];
    }
  | {
      readonly kind: 'map';
      /** The entry's key column: its tag, and its name as JSON text (`"key":`). */
      readonly keyTag: number;
      readonly keyMember: string;
      /** The entry's value column's plan, alone (a union with null reads as a record field's does). */
      readonly value: readonly Plan[];
    }
);

/** Plain decimal text within NUMERIC's and BIGNUMERIC's digits: what validation passes as it is. */
const plainText: Record<string, RegExp> = {
  NUMERIC: /^-?\d{1,29}(?:\.\d{1,9})?$/,
  BIGNUMERIC: /^-?\d{1,38}(?:\.\d{1,38})?$/,
};

/** The digits after the point that NUMERIC and BIGNUMERIC hold (their text's, in `plainText`). */
const maxScale: Record<string, number> = { NUMERIC: 9, BIGNUMERIC: 38 };

const reserved = new Set<string>(metadataColumns);

/** BigQuery's DATE range in days from 1970-01-01: 0001-01-01 to 9999-12-31. */
export const minDays = -719_162;
export const maxDays = 2_932_896;

/**
 * A record's fields onto the columns of the same names (the top level: not the metadata columns); `scope`:
 * the named types it may use by name (by default, those the record itself defines).
 */
export function fieldPlans(
  schema: unknown,
  columns: readonly SchemaField[],
  top: boolean,
  scope: Scope = scopeOf(schema),
): Plan[] | undefined {
  if (schema === null || typeof schema !== 'object' || (schema as { type?: unknown }).type !== 'record')
    return undefined;
  const fields = (schema as { fields?: unknown }).fields;
  if (!Array.isArray(fields)) return undefined;
  const plans: Plan[] = [];
  const seen = new Set<string>();
  for (const field of fields as { name?: unknown; type?: unknown }[]) {
    if (typeof field.name !== 'string') return undefined;
    const index = columns.findIndex((c) => c.name === field.name);
    if (index < 0) return undefined; // a field the table lacks: the general path's rules
    const column = columns[index]!;
    if (top && reserved.has(column.name)) return undefined; // a metadata column's name: refused there
    const plan = planOf(field.type, column, index + 1, scope);
    if (plan === undefined) return undefined;
    seen.add(column.name);
    plans.push({ ...plan, key: `${JSON.stringify(column.name)}:` });
  }
  // A REQUIRED column the schema does not fill: the general path says so of each record.
  if (columns.some((c) => c.mode === 'REQUIRED' && !seen.has(c.name) && !(top && reserved.has(c.name))))
    return undefined;
  return plans;
}

/** How a field's values are written into its column (field number `number`), or undefined. */
function planOf(type: unknown, column: SchemaField, number: number, scope: Scope): Plan | undefined {
  let nullBranch = -1;
  let inner = type;
  if (Array.isArray(type)) {
    if (type.filter((t) => t !== 'null').length >= 2) return unionPlan(type, column, number, scope);
    if (type.length !== 2) return undefined;
    nullBranch = type.indexOf('null');
    if (nullBranch < 0) return undefined;
    inner = type[1 - nullBranch];
    if (Array.isArray(inner) || inner === 'null') return undefined;
  }
  // A named type used by name: its definition.
  inner = resolve(inner, scope);
  if (inner === undefined) return undefined;
  const required = column.mode === 'REQUIRED';
  if (inner !== null && typeof inner === 'object' && (inner as { type?: unknown }).type === 'array') {
    if (column.mode !== 'REPEATED') return undefined;
    const item = planOf((inner as { items?: unknown }).items, { ...column, mode: 'REQUIRED' }, number, scope);
    if (item === undefined || item.nullBranch >= 0 || item.kind === 'union') return undefined;
    return { tag: item.tag, nullBranch, required: false, kind: 'array', item };
  }
  if (inner !== null && typeof inner === 'object' && (inner as { type?: unknown }).type === 'map')
    return mapPlan((inner as { values?: unknown }).values, column, number, nullBranch, scope);
  if (column.mode === 'REPEATED') return undefined;
  if (isVariableScale(inner)) {
    const plain = plainText[column.type];
    return plain === undefined
      ? undefined
      : { tag: (number << 3) | 2, nullBranch, required, kind: 'variable-scale', plain };
  }
  if (inner !== null && typeof inner === 'object' && (inner as { type?: unknown }).type === 'record') {
    if (column.type !== 'RECORD' && column.type !== 'STRUCT') return undefined;
    const within = inside(inner, scope);
    const fields = within && fieldPlans(inner, column.fields ?? [], false, within);
    return fields === undefined
      ? undefined
      : { tag: (number << 3) | 2, nullBranch, required, kind: 'record', fields };
  }
  const decimal = decimalOf(inner);
  if (decimal !== undefined) {
    const plain = plainText[column.type];
    if (plain === undefined) return undefined;
    const { scale, size } = decimal;
    const digits = scale <= (maxScale[column.type] ?? -1);
    return { tag: (number << 3) | 2, nullBranch, required, kind: 'decimal', scale, plain, digits, size };
  }
  const named = namedOf(inner, column);
  if (named !== undefined) return { tag: (number << 3) | 2, nullBranch, required, ...named };
  const kind = scalarOf(inner);
  if (kind === undefined || !columnTypes[kind].includes(column.type)) return undefined;
  return { tag: (number << 3) | wireOf[kind], nullBranch, required, kind };
}

/**
 * A union of two types or more besides null onto the general path's column for it (avro/schema.ts): a record
 * of a NULLABLE column per branch, named after the branch's type (a named type's name, or its full name
 * where two branches share a name). Compiled where no branch is an array (a REPEATED column there).
 */
function unionPlan(
  types: readonly unknown[],
  column: SchemaField,
  number: number,
  scope: Scope,
): Plan | undefined {
  if (column.mode === 'REPEATED' || (column.type !== 'RECORD' && column.type !== 'STRUCT')) return undefined;
  const columns = column.fields ?? [];
  if (columns.some((c) => c.mode === 'REQUIRED')) return undefined;
  const names = branchColumns(types, scope.namespace);
  const branches: (Plan | undefined)[] = [];
  for (const type of types) {
    if (type === 'null') {
      branches.push(undefined);
      continue;
    }
    const name = names.get(branchKey(type as AvroSchema, scope.namespace));
    const index = name === undefined ? -1 : columns.findIndex((c) => c.name === name);
    if (index < 0) return undefined;
    const plan = planOf(type, columns[index]!, index + 1, scope);
    if (plan === undefined || plan.nullBranch >= 0 || plan.kind === 'union') return undefined;
    branches.push({ ...plan, key: `${JSON.stringify(columns[index]!.name)}:` });
  }
  return {
    tag: (number << 3) | 2,
    nullBranch: types.indexOf('null'),
    required: column.mode === 'REQUIRED',
    kind: 'union',
    branches,
  };
}

/**
 * Each branch's column name by its key, as avro/schema.ts names them: the key's last part, or the whole key
 * where an earlier branch took that name; no name for an array branch (or a union in a union).
 */
function branchColumns(types: readonly unknown[], namespace: string): Map<string, string> {
  const columns = new Map<string, string>();
  for (const type of types) {
    if (type === 'null') continue;
    const key = branchKey(type as AvroSchema, namespace);
    let column = columnName(key.slice(key.lastIndexOf('.') + 1));
    if ([...columns.values()].includes(column)) column = columnName(key);
    columns.set(key, column);
  }
  for (const key of ['array', 'union']) columns.delete(key);
  return columns;
}

/**
 * A map onto the general path's column for it: REPEATED records of a STRING `key` and a `value` (no other
 * REQUIRED field), each entry written as the key, then the value.
 */
function mapPlan(
  values: unknown,
  column: SchemaField,
  number: number,
  nullBranch: number,
  scope: Scope,
): Plan | undefined {
  if (column.mode !== 'REPEATED' || (column.type !== 'RECORD' && column.type !== 'STRUCT')) return undefined;
  const fields = column.fields ?? [];
  const k = fields.findIndex((f) => f.name === 'key');
  const v = fields.findIndex((f) => f.name === 'value');
  if (k < 0 || v < 0 || fields[k]!.type !== 'STRING' || fields[k]!.mode === 'REPEATED') return undefined;
  if (fields.some((f, i) => i !== k && i !== v && f.mode === 'REQUIRED')) return undefined;
  const value = planOf(values, fields[v]!, v + 1, scope);
  if (value === undefined || value.kind === 'union') return undefined;
  return {
    tag: (number << 3) | 2,
    nullBranch,
    required: false,
    kind: 'map',
    keyTag: ((k + 1) << 3) | 2,
    keyMember: '"key":',
    value: [{ ...value, key: '"value":' }],
  };
}

/** Debezium's `VariableScaleDecimal` record as its connector defines it: an int `scale`, the bytes `value`. */
function isVariableScale(type: unknown): boolean {
  if (type === null || typeof type !== 'object') return false;
  const { type: base, fields } = type as { type?: unknown; fields?: unknown };
  if (base !== 'record' || (type as Record<string, unknown>)['connect.name'] !== variableScaleName)
    return false;
  if (!Array.isArray(fields) || fields.length !== 2) return false;
  const [scale, value] = fields as { name?: unknown; type?: unknown }[];
  return (
    scale!.name === 'scale' && scale!.type === 'int' && value!.name === 'value' && value!.type === 'bytes'
  );
}

const variableScaleName = 'io.debezium.data.VariableScaleDecimal';

/**
 * A decimal's scale and size (Avro bytes, or fixed of a size, with logicalType decimal and a valid
 * precision and scale), or undefined.
 */
function decimalOf(type: unknown): { scale: number; size: number } | undefined {
  if (type === null || typeof type !== 'object') return undefined;
  const { type: base, logicalType, precision, scale = 0, size } = type as Record<string, unknown>;
  if (logicalType !== 'decimal' || (base !== 'bytes' && base !== 'fixed')) return undefined;
  if (!Number.isInteger(precision) || !Number.isInteger(scale)) return undefined;
  if (base === 'fixed' && !(Number.isInteger(size) && (size as number) > 0)) return undefined;
  const [p, s] = [precision as number, scale as number];
  return p >= 1 && s >= 0 && s <= p
    ? { scale: s, size: base === 'fixed' ? (size as number) : -1 }
    : undefined;
}

/** An enum onto a STRING column (its symbols' text), a plain `fixed` onto BYTES; else undefined. */
function namedOf(
  type: unknown,
  column: SchemaField,
): { kind: 'enum'; symbols: Buffer[]; texts: string[] } | { kind: 'fixed'; size: number } | undefined {
  if (type === null || typeof type !== 'object') return undefined;
  const { type: base, symbols, size, logicalType } = type as Record<string, unknown>;
  if (logicalType !== undefined || (type as Record<string, unknown>)['connect.name'] !== undefined)
    return undefined;
  if (
    base === 'enum' &&
    column.type === 'STRING' &&
    Array.isArray(symbols) &&
    symbols.every((x) => typeof x === 'string')
  )
    return {
      kind: 'enum',
      symbols: (symbols as string[]).map((x) => Buffer.from(x)),
      texts: (symbols as string[]).map((x) => JSON.stringify(x)),
    };
  if (base === 'fixed' && column.type === 'BYTES' && Number.isInteger(size) && (size as number) >= 0)
    return { kind: 'fixed', size: size as number };
  return undefined;
}
