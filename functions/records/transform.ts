import type { JsonValue, KafkaRecord } from '../kernel/records.js';
import { importUserModule } from './user-module.js';

/**
 * Transforms: `TRANSFORM_MODULE` (per route `transformModule`) names a JS/TS module exporting
 * `transform(value, context)`. It returns the value to write (changed, or a new one), or `null`/`undefined`
 * to drop the record, and may be async. A dropped record is `filtered` (counted, nothing written, no dead
 * letter); a transform that throws makes a `transform` dead letter with its message. It runs after the value
 * is decoded and before it is validated against the table, so the table's columns are what it returns.
 * It must be deterministic: a range read again after a crash is transformed again, and exactly once means
 * the same rows.
 */
export interface TransformContext {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  /** The record's Kafka timestamp, ISO 8601. */
  readonly timestamp: string;
  /** The key as bytes, and as text where it is UTF-8 (else null); both null without a key. */
  readonly key: Buffer | null;
  readonly keyText: string | null;
  readonly headers: Readonly<Record<string, string>>;
}

export type TransformOutcome =
  | { readonly value: JsonValue }
  | { readonly filtered: true }
  | { readonly error: string };

export interface Transform {
  apply(value: JsonValue, record: KafkaRecord): Promise<TransformOutcome>;
}

type TransformFunction = (value: JsonValue, context: TransformContext) => unknown;

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

export function createTransform(transform: TransformFunction): Transform {
  return {
    async apply(value, record) {
      let keyText: string | null = null;
      if (record.key !== null) {
        try {
          keyText = strictUtf8.decode(record.key);
        } catch {
          keyText = null;
        }
      }
      const context: TransformContext = {
        topic: record.topic,
        partition: record.partition,
        offset: record.offset,
        timestamp: new Date(record.timestamp).toISOString(),
        key: record.key,
        keyText,
        headers: record.headers,
      };
      let result: unknown;
      try {
        result = await transform(value, context);
      } catch (error) {
        return { error: `transform threw: ${error instanceof Error ? error.message : String(error)}` };
      }
      if (result === null || result === undefined) return { filtered: true };
      return { value: result as JsonValue };
    },
  };
}

/** Loads `TRANSFORM_MODULE` (called by the entry points only). */
export async function loadTransform(specifier: string): Promise<Transform> {
  const module = (await importUserModule(specifier)) as {
    transform?: unknown;
    default?: { transform?: unknown } | ((...args: unknown[]) => unknown);
  };
  const fn =
    module.transform ?? (typeof module.default === 'function' ? module.default : module.default?.transform);
  if (typeof fn !== 'function')
    throw new Error(`TRANSFORM_MODULE ${specifier} exports no transform(value, context) function`);
  return createTransform(fn as TransformFunction);
}
