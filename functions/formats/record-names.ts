/**
 * The record type a value in Confluent's wire format holds (a route's `when: {recordName}`): the Avro
 * record's full name, the Protobuf message's (by its message indexes), the JSON Schema's `title`, read from
 * the registry by the value's schema id, once per id and run.
 */
import { isRetriable, PartitionWaitsError } from '../kernel/errors.js';
import type { Logger } from '../kernel/logger.js';
import type { KafkaRecord } from '../kernel/records.js';
import { defaultRetryPolicy, withRetry } from '../kernel/retry.js';
import type { CompiledSchema } from './mapped.js';
import { formatOfSchemaType, registryFormats } from './registry.js';
import type { SchemaRegistry } from './schema-registry.js';
import { readWireHeader } from './wire.js';

export interface RecordNames {
  /** Reads the schemas the records name (a registry that does not answer: PartitionWaitsError). */
  prepare(records: readonly KafkaRecord[], signal?: AbortSignal): Promise<void>;
  /** The record's type name; undefined when its value names none (not the wire format, an unknown id). */
  nameOf(record: KafkaRecord): string | undefined;
}

export function createRecordNames(registry: SchemaRegistry, logger: Logger): RecordNames {
  const known = new Map<number, CompiledSchema | null>();

  async function load(id: number, signal?: AbortSignal): Promise<CompiledSchema | null> {
    try {
      const registered = await withRetry(
        defaultRetryPolicy,
        () => registry.schemaById(id),
        (error, attempt, delayMs) =>
          logger.warn('the schema registry failed; retrying', { schemaId: id, error, attempt, delayMs }),
        signal,
      );
      // The same compilers the route's format uses, by the schema's own type.
      const format = formatOfSchemaType(registered.schemaType);
      if (format === undefined) return null;
      return await registryFormats[format].compile(registered, registry);
    } catch (error) {
      if (isRetriable(error))
        throw new PartitionWaitsError(
          `the schema registry did not give schema id ${id} (routing by record name): ${(error as Error).message}`,
          error,
        );
      // Not in the registry, or not a schema that compiles: its records are no route's (dead letters).
      return null;
    }
  }

  return {
    async prepare(records, signal) {
      for (const record of records) {
        const value = record.value;
        if (value === null || value.length < 5 || value[0] !== 0) continue;
        const id = value.readUInt32BE(1);
        if (!known.has(id)) known.set(id, await load(id, signal));
      }
    },
    nameOf(record) {
      if (record.value === null) return undefined;
      const header = readWireHeader(record.value);
      if (!header.ok) return undefined;
      return known.get(header.schemaId)?.recordName?.(record.value.subarray(header.offset));
    },
  };
}
