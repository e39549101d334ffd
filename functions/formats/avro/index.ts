/**
 * Avro (`VALUE_FORMAT=avro`): schemas from the registry, or one schema file for raw Avro binary
 * (`VALUE_SCHEMA_FILE`). schema.ts compiles a writer's schema (the general path, avsc's); read.ts, plans.ts,
 * scalars.ts and rows.ts are the compiled path to the table's message, text.ts to a row's JSON text;
 * envelope.ts reads Debezium's change events.
 */
import { type DecodedValue, decodeWith, type FormatDefinition, type ValueFormat } from '../value-format.js';
import { compileAvro } from './schema.js';

export const avroFormat: FormatDefinition = {
  schemaType: 'AVRO',
  compile: async (schema) => compileAvro(schema.schema),
};

/** Raw Avro binary, every value written with the one schema of VALUE_SCHEMA_FILE. */
export function createRawAvroFormat(schemaText: string): ValueFormat {
  const compiled = compileAvro(schemaText);
  return {
    name: 'avro',
    prepare: async () => {},
    decode: (value): DecodedValue => decodeWith(compiled, value),
  };
}
