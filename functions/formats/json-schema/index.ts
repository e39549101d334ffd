/**
 * JSON Schema (`VALUE_FORMAT=json-schema`): schemas from the registry; schema.ts maps one to columns, and
 * its values are read by the JSON reader (encoders/), as JSON text is.
 */
import type { FormatDefinition } from '../value-format.js';
import { compileJsonSchema } from './schema.js';

export const jsonSchemaFormat: FormatDefinition = {
  schemaType: 'JSON',
  compile: async (schema) => compileJsonSchema(schema.schema),
};
