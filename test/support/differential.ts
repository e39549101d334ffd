/**
 * What the differential tests of the compiled paths (avro-rows, protobuf-rows, json-schema-rows) share: a
 * seeded generator, a registry format's decode without a registry, and what BigQuery reads of a row.
 */
import type { CompiledSchema } from '../../functions/formats/mapped.js';
import { ValueError } from '../../functions/formats/mapped.js';
import type { ValueFormat } from '../../functions/formats/value-format.js';

/** A seeded generator (mulberry32): the same records every run, and a failure names its seed. */
export function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function pick<T>(next: () => number, values: readonly T[]): T {
  return values[Math.floor(next() * values.length)]!;
}

/** The general path's format for a compiled schema: its decode after `headerBytes`, as the registry format's. */
export function generalFormat(
  compiled: CompiledSchema,
  name: ValueFormat['name'],
  headerBytes: number,
): ValueFormat {
  return {
    name,
    prepare: async () => {},
    decode(value) {
      try {
        return { ok: true, value: compiled.decode(value.subarray(headerBytes)) };
      } catch (error) {
        if (error instanceof ValueError) return { ok: false, kind: error.kind, message: error.message };
        return { ok: false, kind: 'decode', message: (error as Error).message };
      }
    },
  };
}

/** A row as BigQuery reads it: fields that are null or empty REPEATED are the same as absent. */
export function bigQueryReads(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(bigQueryReads);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.entries(v)
      .filter(([, x]) => x !== null && !(Array.isArray(x) && x.length === 0))
      .map(([k, x]) => [k, bigQueryReads(x)]),
  );
}
