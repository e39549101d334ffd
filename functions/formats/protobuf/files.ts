/**
 * The files of a registered Protobuf schema into one protobufjs root: Google's well-known types (protobufjs's
 * own), and each file as .proto text or, as some serializers register it, a base64 FileDescriptorProto.
 */
import protobuf from 'protobufjs';
import descriptor from 'protobufjs/ext/descriptor/index.js';
import { UnmappableSchemaError } from '../mapped.js';

export const wellKnownFiles = [
  'google/protobuf/timestamp.proto',
  'google/protobuf/duration.proto',
  'google/protobuf/wrappers.proto',
  'google/protobuf/struct.proto',
  'google/protobuf/empty.proto',
  'google/protobuf/any.proto',
  'google/protobuf/field_mask.proto',
];

/** Adds one file (text or base64 descriptor) to the root; returns its top-level messages' full names. */
export function addFile(root: protobuf.Root, text: string, name: string): string[] {
  const trimmed = text.trim();
  if (/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed) && !/\b(message|syntax)\b/.test(trimmed)) {
    try {
      const file = descriptor.FileDescriptorProto.decode(Buffer.from(trimmed, 'base64')) as unknown as {
        package?: string;
        syntax?: string;
        messageType?: { name: string }[];
        enumType?: unknown[];
      };
      // As protobufjs's Root.fromDescriptor does, but into the shared root and without resolving yet:
      // the file's imports (the well-known types, the references) are resolved with everything else.
      const edition = file.syntax === 'proto3' ? 'proto3' : 'proto2';
      const into = file.package ? root.define(file.package) : root;
      const fromDescriptor = (kind: unknown) =>
        (kind as { fromDescriptor(d: unknown, edition: string): protobuf.ReflectionObject }).fromDescriptor;
      for (const m of file.messageType ?? []) into.add(fromDescriptor(protobuf.Type)(m, edition));
      for (const e of file.enumType ?? []) into.add(fromDescriptor(protobuf.Enum)(e, edition));
      const prefix = file.package ? `${file.package}.` : '';
      return (file.messageType ?? []).map((m) => `${prefix}${m.name}`);
    } catch (error) {
      throw new UnmappableSchemaError(`${name}: not a Protobuf schema (${(error as Error).message})`);
    }
  }
  let parsed: protobuf.IParserResult;
  try {
    parsed = protobuf.parse(text, root, { keepCase: true });
  } catch (error) {
    throw new UnmappableSchemaError(`${name}: not a Protobuf schema (${(error as Error).message})`);
  }
  // Declaration order, as the message indexes count: parse the file alone to see only its own messages.
  const alone = protobuf.parse(text, new protobuf.Root(), { keepCase: true });
  const ns = alone.package ? alone.root.lookup(alone.package) : alone.root;
  const prefix = parsed.package ? `${parsed.package}.` : '';
  return ((ns as protobuf.Namespace | null)?.nestedArray ?? [])
    .filter((n) => n instanceof protobuf.Type)
    .map((n) => `${prefix}${n.name}`);
}
