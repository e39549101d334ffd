/**
 * Avro's named types (records, enums, fixed) for the compiled paths (avro/plans.ts, avro/envelope.ts): a
 * type used by name after its definition reads as its definition, resolved as avro/schema.ts's mapper resolves it
 * (a full name, or a short one in the enclosing namespace, or bare).
 */
import { primitives } from './types.js';

/** Where a type stands: the schema's named types by full name, the enclosing namespace, how deep. */
export interface Scope {
  readonly names: ReadonlyMap<string, Record<string, unknown>>;
  readonly namespace: string;
  readonly depth: number;
}

/** Named types no deeper than this are followed: a recursive one is no table (avro/schema.ts refuses it). */
const maxDepth = 32;

/** A writer schema's scope at its top: every named type it defines. */
export function scopeOf(schema: unknown): Scope {
  const names = new Map<string, Record<string, unknown>>();
  collectNames(schema, '', names);
  return { names, namespace: isObject(schema) ? namespaceOf(schema, '') : '', depth: 0 };
}

/** The scope inside a named type's definition (its namespace encloses what it defines). */
export function inside(type: unknown, scope: Scope): Scope | undefined {
  if (scope.depth >= maxDepth) return undefined;
  return {
    ...scope,
    namespace: isObject(type) ? namespaceOf(type, scope.namespace) : scope.namespace,
    depth: scope.depth + 1,
  };
}

/** A type named by name → its definition; other types as they are; undefined for a name not defined. */
export function resolve(type: unknown, scope: Scope): unknown {
  if (typeof type !== 'string' || type === 'null' || primitives[type] !== undefined) return type;
  const full = type.includes('.')
    ? type
    : scope.names.has(`${scope.namespace}.${type}`)
      ? `${scope.namespace}.${type}`
      : type;
  return scope.names.get(full) ?? scope.names.get(type);
}

/** A named type's namespace: its full name's, its own, or the enclosing one ('' for none). */
export function namespaceOf(type: Record<string, unknown>, enclosing: string): string {
  const name = typeof type.name === 'string' ? type.name : '';
  if (name.includes('.')) return name.slice(0, name.lastIndexOf('.'));
  if (typeof type.name !== 'string') return enclosing;
  return typeof type.namespace === 'string' ? type.namespace : enclosing;
}

function collectNames(type: unknown, namespace: string, names: Map<string, Record<string, unknown>>): void {
  if (Array.isArray(type)) {
    for (const t of type) collectNames(t, namespace, names);
    return;
  }
  if (!isObject(type)) return;
  let inner = namespace;
  if (typeof type.name === 'string' && ['record', 'error', 'enum', 'fixed'].includes(type.type as string)) {
    inner = namespaceOf(type, namespace);
    const short = type.name.slice(type.name.lastIndexOf('.') + 1);
    const full = inner === '' ? short : `${inner}.${short}`;
    names.set(full, type);
    if (!full.includes('.')) names.set(type.name, type);
  }
  if (Array.isArray(type.fields))
    for (const f of type.fields as { type?: unknown }[]) collectNames(f.type, inner, names);
  collectNames(type.items, inner, names);
  collectNames(type.values, inner, names);
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
