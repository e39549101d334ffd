/**
 * Protobuf (`VALUE_FORMAT=protobuf`): schemas from the registry, imports resolved through it (files.ts).
 * schema.ts compiles a message (the general path, protobufjs's); scan.ts, plans.ts, scalars.ts and rows.ts
 * are the compiled path to the table's message, text.ts and struct.ts to a row's JSON text.
 */
import type { FormatDefinition } from '../value-format.js';
import { compileProtobuf } from './schema.js';

export const protobufFormat: FormatDefinition = { schemaType: 'PROTOBUF', compile: compileProtobuf };
