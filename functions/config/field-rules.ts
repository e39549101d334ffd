/** What a route does with the fields of its records: the table lacks them, or BigQuery refuses their names. */
/** UNKNOWN_FIELDS: what a field the table lacks becomes (records/validate.ts, records/evolve-columns.ts). */
export const unknownFieldRules = ['reject', 'ignore', 'json', 'evolve'] as const;
export type UnknownFieldRule = (typeof unknownFieldRules)[number];
/** FIELD_NAMES: a name BigQuery refuses is a dead letter, or mapped (records/field-names.ts). */
export const fieldNameRules = ['strict', 'sanitize'] as const;
export type FieldNameRule = (typeof fieldNameRules)[number];

/** A route's `"unknownFields"` and `"fieldNames"`, the pipeline's where it does not say. */
export function routeFieldRules(
  r: Record<string, unknown>,
  defaults: { unknownFields?: UnknownFieldRule; fieldNames?: FieldNameRule },
  fail: (message: string) => never,
): { unknownFields: UnknownFieldRule; fieldNames: FieldNameRule } {
  const unknownFields = r.unknownFields ?? defaults.unknownFields ?? 'reject';
  if (!unknownFieldRules.includes(unknownFields as UnknownFieldRule))
    return fail(`"unknownFields" must be one of ${unknownFieldRules.join(', ')}`);
  const fieldNames = r.fieldNames ?? defaults.fieldNames ?? 'strict';
  if (!fieldNameRules.includes(fieldNames as FieldNameRule))
    return fail(`"fieldNames" must be one of ${fieldNameRules.join(', ')}`);
  return { unknownFields: unknownFields as UnknownFieldRule, fieldNames: fieldNames as FieldNameRule };
}
