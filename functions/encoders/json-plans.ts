import type { SchemaField } from '../schema/table-schema.js';
import { metadataColumns } from '../schema/table-schema.js';
import type { RowShape } from './row-shape.js';

/**
 * What the one-pass JSON reader (json-reader.ts) reads a route's records by: per field of the route's
 * shape, its column's tag and kind in the target's messages, decided once per route and target.
 */

export const STRING = 1;
export const INT64 = 2;
export const FLOAT64 = 3;
export const BOOL = 4;
export const DECIMAL = 5;
export const DATE = 6;
export const TIMESTAMP = 7;
export const RECORD = 8;
/** Any other type: a record with a value for it takes the general path. */
export const OTHER = 9;

export interface FieldPlan {
  readonly key: Buffer;
  readonly tag: number;
  readonly kind: number;
  readonly repeated: boolean;
  readonly required: boolean;
  /** DECIMAL: digits before and after the point, at most (NUMERIC 29 and 9, BIGNUMERIC 38 and 38). */
  readonly maxInteger: number;
  readonly maxScale: number;
  readonly nested: MessagePlan | undefined;
}

export interface MessagePlan {
  readonly fields: readonly FieldPlan[];
  readonly byName: ReadonlyMap<string, number>;
  readonly required: readonly number[];
  /** Per field, the object it was last seen in (a duplicate key is the general path's to judge). */
  readonly seen: Float64Array;
  stamp: number;
  /**
   * The field guessed to come next, learned from the records: at 0 the first field, at i + 1 the one after
   * field i. It starts in the shape's order; a record whose producer orders its fields otherwise (a
   * registry that sorts a schema's properties, a table whose columns were added in another order) teaches
   * it theirs, so a wrong guess costs once per producer order, not once per field of every record.
   */
  readonly follows: Int32Array;
}

const kinds: Record<string, number> = {
  STRING,
  INTEGER: INT64,
  INT64,
  FLOAT: FLOAT64,
  FLOAT64,
  BOOLEAN: BOOL,
  BOOL,
  NUMERIC: DECIMAL,
  BIGNUMERIC: DECIMAL,
  DATE,
  TIMESTAMP,
  RECORD,
  STRUCT: RECORD,
};

const sameType = (a: string, b: string) =>
  (kinds[a.toUpperCase()] ?? a.toUpperCase()) === (kinds[b.toUpperCase()] ?? b.toUpperCase());

/** What a route's reading needs besides the plans: whether unknown fields are skipped, and which are not. */
export interface Reading {
  readonly root: MessagePlan;
  readonly ignoreUnknown: boolean;
  readonly reserved: ReadonlySet<string>;
  /**
   * The record's text goes out as the row's JSON (insert-all, merge): a value whose text BigQuery would
   * read otherwise than the general path's row (a REPEATED null, which that path sends as [], a FLOAT64
   * too large for a double, which it sends as "Infinity", and -0, which it sends as 0) is left to that path.
   */
  readonly asText: boolean;
}

/**
 * How a route's records are read against `target` (whose field numbers the written fields use), or
 * undefined where this path does not apply: no shape to check against, headers as a column, a field
 * named as a metadata column, or a table whose columns differ from the shape's.
 */
export function readingOf(
  shape: RowShape | undefined,
  target: readonly SchemaField[],
  asText: boolean,
): Reading | undefined {
  if (shape === undefined || shape.metadata?.headers === true) return undefined;
  const reserved = new Set<string>(metadataColumns);
  if (shape.fields.some((f) => reserved.has(f.name))) return undefined;
  const root = planMessage(shape.fields, target);
  if (root === undefined) return undefined;
  // As text, a field the table does not have would go to BigQuery with the row: never skipped.
  return { root, ignoreUnknown: !asText && shape.unknownFields === 'ignore', reserved, asText };
}

function planMessage(shape: readonly SchemaField[], target: readonly SchemaField[]): MessagePlan | undefined {
  const fields: FieldPlan[] = [];
  for (const field of shape) {
    const index = target.findIndex((t) => t.name === field.name);
    const to = target[index];
    const mode = field.mode ?? 'NULLABLE';
    if (to === undefined || !sameType(to.type, field.type) || (to.mode ?? 'NULLABLE') !== mode)
      return undefined;
    const type = field.type.toUpperCase();
    const kind = kinds[type] ?? OTHER;
    let nested: MessagePlan | undefined;
    if (kind === RECORD) {
      nested = planMessage(field.fields ?? [], to.fields ?? []);
      if (nested === undefined) return undefined;
    }
    const wire = kind === FLOAT64 ? 1 : kind === STRING || kind === DECIMAL || kind === RECORD ? 2 : 0;
    fields.push({
      key: Buffer.from(field.name, 'utf8'),
      tag: ((index + 1) << 3) | wire,
      kind,
      repeated: mode === 'REPEATED',
      required: mode === 'REQUIRED',
      maxInteger: type === 'NUMERIC' ? 29 : 38,
      maxScale: type === 'NUMERIC' ? 9 : 38,
      nested,
    });
  }
  return {
    fields,
    byName: new Map(shape.map((f, i) => [f.name, i])),
    required: fields.flatMap((f, i) => (f.required ? [i] : [])),
    seen: new Float64Array(fields.length),
    stamp: 0,
    follows: Int32Array.from({ length: fields.length + 1 }, (_, i) => i),
  };
}
