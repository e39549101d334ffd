import type { ValueFormatName } from '../config/routes.js';
import type { ProtoWriter } from '../encoders/proto-writer.js';
import { DrainError, isRetriable, PartitionWaitsError } from '../kernel/errors.js';
import type { Logger } from '../kernel/logger.js';
import type { JsonValue, KafkaRecord } from '../kernel/records.js';
import { type RetryPolicy, withRetry } from '../kernel/retry.js';
import { fitColumns } from '../schema/compare.js';
import type { SchemaField } from '../schema/table-schema.js';
import { type CompiledRows, type CompiledSchema, UnmappableSchemaError, ValueError } from './mapped.js';
import {
  type RegisteredSchema,
  SchemaNotFoundError,
  type SchemaRegistry,
  type SchemaType,
} from './schema-registry.js';
import { readWireHeader } from './wire.js';

/**
 * How a route's record values become a row's user columns when they are not JSON text: Avro, Protobuf or
 * JSON Schema in Confluent's wire format (their schemas from the registry, by id, once per run), or raw
 * Avro with a schema file. `prepare` fetches what a batch's records name before `decode` runs on them, so
 * that decoding stays synchronous and a registry fault stops the batch before any record is judged.
 */
export interface ValueFormat {
  readonly name: ValueFormatName;
  /** Fetches the schemas the records name (a registry that does not answer: PartitionWaitsError). */
  prepare(records: readonly KafkaRecord[], signal?: AbortSignal): Promise<void>;
  decode(value: Buffer): DecodedValue;
  /**
   * A record's row written straight from its bytes into the table's message (`target`: its columns,
   * metadata included), for the schemas where a compiled path exists: false sends the record the general
   * way (decode, validate, encode). Absent: the format has no such path. `primaryKey`: cdc mode's table
   * key (a Debezium envelope's delete is then taken too).
   */
  directRows?(
    target: readonly SchemaField[],
    primaryKey?: readonly string[],
  ): (writer: ProtoWriter, record: KafkaRecord) => boolean;
  /**
   * The columns a record's payload holds as JSON text of just those fields (its schema's `textFields`),
   * after the wire format's header: the modes that send rows as JSON text may send that text. Undefined:
   * the general way.
   */
  textFields?(record: KafkaRecord): readonly SchemaField[] | undefined;
  /**
   * A record's fields as the members of its row's JSON text, straight from its bytes onto `columns` (the
   * table's user columns), for the schemas with such a path (Avro, Protobuf): UTF-8 bytes good until the
   * next call, or undefined, the general way.
   */
  membersText?(columns: readonly SchemaField[]): (record: KafkaRecord) => Buffer | undefined;
}

export type DecodedValue =
  | { readonly ok: true; readonly value: Record<string, JsonValue> }
  | { readonly ok: false; readonly kind: 'decode' | 'schema'; readonly message: string };

/** A schema's text → what it compiles to; references resolved through the registry (Protobuf imports). */
export type SchemaCompiler = (schema: RegisteredSchema, registry: SchemaRegistry) => Promise<CompiledSchema>;

/** The value formats a schema registry serves (VALUE_FORMAT's names but `json`). */
export type RegistryFormatName = Exclude<ValueFormatName, 'json'>;

/**
 * A value format a schema registry serves: one folder of formats/ (its schema compiler, its reader, its
 * text writer, its compiled row path), registered by name in registry.ts.
 */
export interface FormatDefinition {
  /** What the registry calls its schemas (`schemaType`). */
  readonly schemaType: SchemaType;
  readonly compile: SchemaCompiler;
}

type Known =
  | { readonly compiled: CompiledSchema }
  | { readonly kind: 'decode' | 'schema'; readonly message: string }
  | { readonly wait: string };

export interface RegistryFormatOptions {
  readonly name: RegistryFormatName;
  /** What the registry calls the route's schemas: a schema id of another type is refused. */
  readonly schemaType: SchemaType;
  readonly registry: SchemaRegistry;
  readonly compile: SchemaCompiler;
  /** The table's user columns. */
  readonly columns: readonly SchemaField[];
  /**
   * The columns follow the values' schema (no schema file): a version with columns the table lacks waits
   * for the next run, which adds them before anything of it is written.
   */
  readonly columnsFollowSchema: boolean;
  readonly retry: RetryPolicy;
  readonly logger: Logger;
  /** Told once per run of each schema id whose records become dead letters (the audit trail). */
  readonly onIncompatible?: (schemaId: number, reason: string) => Promise<void>;
}

export function createRegistryFormat(options: RegistryFormatOptions): ValueFormat {
  const { registry, logger } = options;
  const known = new Map<number, Known>();
  const loading = new Map<number, Promise<Known>>();

  async function load(id: number, signal?: AbortSignal): Promise<Known> {
    let registered: RegisteredSchema;
    try {
      registered = await withRetry(
        options.retry,
        () => registry.schemaById(id),
        (error, attempt, delayMs) =>
          logger.warn('the schema registry failed; retrying', { schemaId: id, error, attempt, delayMs }),
        signal,
      );
    } catch (error) {
      if (error instanceof SchemaNotFoundError)
        return { kind: 'decode', message: `schema id ${id} is not in the schema registry` };
      if (isRetriable(error))
        throw new PartitionWaitsError(
          `the schema registry did not give schema id ${id}: ${(error as Error).message}`,
          error,
        );
      throw error;
    }
    if (registered.schemaType !== options.schemaType)
      return refused(id, `schema id ${id} is ${registered.schemaType}, but the route reads ${options.name}`);
    let compiled: CompiledSchema;
    try {
      compiled = await options.compile(registered, registry);
    } catch (error) {
      if (error instanceof UnmappableSchemaError || error instanceof SchemaNotFoundError)
        return refused(id, `schema id ${id}: ${error.message}`);
      if (isRetriable(error))
        throw new PartitionWaitsError(
          `the schema registry did not give what schema id ${id} references: ${(error as Error).message}`,
          error,
        );
      throw error;
    }
    const fit = fitColumns(compiled.fields, options.columns);
    if (fit.conflict !== undefined)
      return refused(id, `schema id ${id} does not fit the table: ${fit.conflict}`);
    if (fit.missing.length > 0 && options.columnsFollowSchema) {
      const message = `records of schema id ${id} have columns the table lacks (${fit.missing.join(', ')}): the next run adds them before writing them`;
      logger.notice('a newer schema version than the table', {
        event: 'schema_ahead',
        schemaId: id,
        columns: fit.missing,
      });
      return { wait: message };
    }
    return { compiled };
  }

  /** A version the table cannot take: said once per schema id, its records dead letters. */
  async function refused(id: number, message: string): Promise<Known> {
    logger.warn('records of this schema version become dead letters', {
      event: 'schema_incompatible',
      schemaId: id,
      reason: message,
    });
    // Awaited (once per schema id and run): the record is there before its records are dead letters.
    await options
      .onIncompatible?.(id, message)
      .catch((error: unknown) =>
        logger.warn('recording the incompatible schema in the audit trail failed', { error, schemaId: id }),
      );
    return { kind: 'schema', message };
  }

  return {
    name: options.name,
    async prepare(records, signal) {
      // The ids the records name, in the order they first do (a run of records of one id: one lookup).
      const named = new Set<number>();
      let last = -1;
      for (const record of records) {
        const value = record.value;
        if (value === null || value.length < 5 || value[0] !== 0) continue;
        const id = value.readUInt32BE(1);
        if (id === last) continue;
        last = id;
        named.add(id);
      }
      for (const id of named) {
        if (known.has(id)) continue;
        // One load per id however many partitions' batches name it at once (said once, audited once).
        let pending = loading.get(id);
        if (pending === undefined) {
          pending = load(id, signal).finally(() => loading.delete(id));
          loading.set(id, pending);
        }
        // Registry faults throw and are not kept: the next batch asks again.
        known.set(id, await pending);
      }
      for (const id of named) {
        const entry = known.get(id);
        if (entry !== undefined && 'wait' in entry) throw new PartitionWaitsError(entry.wait);
      }
    },
    directRows(target, primaryKey) {
      // Per schema id, compiled the first time a record names it (null: no compiled path for it).
      const byId = new Map<number, CompiledRows | null>();
      // The last record's id and its rows: a run of records of one id looks it up once.
      let lastId = -1;
      let lastRows: CompiledRows | null = null;
      return (writer, record) => {
        const value = record.value;
        if (value === null || value.length < 5 || value[0] !== 0) return false;
        const id = value.readUInt32BE(1);
        if (id !== lastId) {
          let rows = byId.get(id);
          if (rows === undefined) {
            const entry = known.get(id);
            if (entry === undefined) return false;
            rows = ('compiled' in entry ? entry.compiled.rows?.(target, primaryKey) : undefined) ?? null;
            byId.set(id, rows);
          }
          lastId = id;
          lastRows = rows;
        }
        return lastRows?.(writer, value, 5) === true;
      };
    },
    membersText(columns) {
      // Per schema id, compiled the first time a record names it (null: no such path for it).
      const byId = new Map<number, ((payload: Buffer, start: number) => Buffer | undefined) | null>();
      return (record) => {
        const value = record.value;
        if (value === null || value.length < 5 || value[0] !== 0) return undefined;
        const id = value.readUInt32BE(1);
        let text = byId.get(id);
        if (text === undefined) {
          const entry = known.get(id);
          if (entry === undefined) return undefined;
          text = ('compiled' in entry ? entry.compiled.membersText?.(columns) : undefined) ?? null;
          byId.set(id, text);
        }
        return text?.(value, 5);
      };
    },
    textFields(record) {
      const value = record.value;
      if (value === null || value.length < 5 || value[0] !== 0) return undefined;
      const entry = known.get(value.readUInt32BE(1));
      return entry !== undefined && 'compiled' in entry ? entry.compiled.textFields : undefined;
    },
    decode(value) {
      const header = readWireHeader(value);
      if (!header.ok) return { ok: false, kind: 'decode', message: header.message };
      const entry = known.get(header.schemaId);
      if (entry === undefined)
        throw new DrainError(`schema id ${header.schemaId} was not prepared`, { retriable: false });
      if ('wait' in entry) throw new PartitionWaitsError(entry.wait);
      if (!('compiled' in entry)) return { ok: false, kind: entry.kind, message: entry.message };
      return decodeWith(entry.compiled, value.subarray(header.offset));
    },
  };
}

/** A payload decoded by a compiled schema, or why it is a dead letter. */
export function decodeWith(compiled: CompiledSchema, payload: Buffer): DecodedValue {
  try {
    return { ok: true, value: compiled.decode(payload) };
  } catch (error) {
    if (error instanceof ValueError) return { ok: false, kind: error.kind, message: error.message };
    return { ok: false, kind: 'decode', message: `value does not decode: ${(error as Error).message}` };
  }
}
