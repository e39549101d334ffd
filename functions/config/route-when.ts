/**
 * A route's `when`: which of its topics' records it takes, when one topic feeds several tables. A record
 * goes to the first route of its topic whose `when` matches it, or to the first route of the topic without
 * a `when`; a record no route takes is a `schema` dead letter naming its topic.
 */

/** By a header's value, a field of the value (a dotted path) equal to a JSON value, or the record's type. */
export type RouteWhen =
  | { readonly kind: 'header'; readonly name: string; readonly value: string }
  | {
      readonly kind: 'field';
      readonly path: readonly string[];
      readonly value: string | number | boolean | null;
    }
  | { readonly kind: 'recordName'; readonly name: string };

/** `"when"` of a route in ROUTES_FILE, or a string saying what is wrong with it. */
export function parseWhen(value: unknown): RouteWhen | string {
  const usage =
    '"when" must be {"header": {"<name>": "<value>"}}, {"field": {"<path>": <value>}} or {"recordName": "<full name>"}';
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return usage;
  const entries = Object.entries(value);
  if (entries.length !== 1) return usage;
  const [kind, spec] = entries[0]!;
  if (kind === 'recordName') {
    return typeof spec === 'string' && /^[A-Za-z_][A-Za-z0-9_.]*$/.test(spec)
      ? { kind: 'recordName', name: spec }
      : '"when": "recordName" must be a record\'s full name (namespace.Name)';
  }
  if (kind !== 'header' && kind !== 'field') return usage;
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec) || Object.keys(spec).length !== 1)
    return `"when": "${kind}" must be an object of one entry`;
  const [name, wanted] = Object.entries(spec)[0]!;
  if (kind === 'header') {
    return typeof wanted === 'string' && name !== ''
      ? { kind: 'header', name, value: wanted }
      : '"when": a header\'s value must be a string';
  }
  const path = name.split('.');
  if (path.some((p) => p === '')) return `"when": "${name}" is not a field path (a.b.c)`;
  if (wanted !== null && !['string', 'number', 'boolean'].includes(typeof wanted))
    return '"when": a field\'s value must be a string, a number, true, false or null';
  return { kind: 'field', path, value: wanted as string | number | boolean | null };
}

/** What a `when` needs of the route's values: a field of JSON text; a record name from the registry. */
export function whenFormatProblem(
  when: RouteWhen | null,
  format: 'json' | 'avro' | 'protobuf' | 'json-schema',
  rawAvro: boolean,
): string | undefined {
  if (when?.kind === 'field' && format !== 'json')
    return '"when": {"field": ...} reads JSON values; route Avro, Protobuf or JSON Schema values by "recordName" or "header"';
  if (when?.kind === 'recordName' && (format === 'json' || rawAvro))
    return '"when": {"recordName": ...} needs values in the wire format with a schema registry (valueFormat avro, protobuf or json-schema)';
  return undefined;
}

/** How `status`, logs and docs show a `when`. */
export function describeWhen(when: RouteWhen): string {
  if (when.kind === 'header') return `header ${when.name} = ${JSON.stringify(when.value)}`;
  if (when.kind === 'field') return `field ${when.path.join('.')} = ${JSON.stringify(when.value)}`;
  return `record name ${when.name}`;
}
