/**
 * The value formats a schema registry serves, by `VALUE_FORMAT`'s names: each a folder of formats/ whose
 * index.ts defines it. Adding a format is a folder and a line here, as adding a write mode is
 * (modes/registry.ts). JSON text (`json`) is no registry format: the JSON reader (encoders/) reads it.
 */
import { avroFormat } from './avro/index.js';
import { jsonSchemaFormat } from './json-schema/index.js';
import { protobufFormat } from './protobuf/index.js';
import type { FormatDefinition, RegistryFormatName } from './value-format.js';

export const registryFormats: Readonly<Record<RegistryFormatName, FormatDefinition>> = {
  avro: avroFormat,
  protobuf: protobufFormat,
  'json-schema': jsonSchemaFormat,
};

/** The format whose schemas the registry calls `schemaType`. */
export function formatOfSchemaType(schemaType: string): RegistryFormatName | undefined {
  return (Object.keys(registryFormats) as RegistryFormatName[]).find(
    (name) => registryFormats[name].schemaType === schemaType,
  );
}
