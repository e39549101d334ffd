/**
 * Confluent's wire format: magic byte 0, the schema id as 4 bytes big-endian, then the payload. Protobuf
 * payloads first carry the message-index list (zigzag varints: a count, then one index per nesting level;
 * a lone 0 stands for [0], the file's first message).
 */
export type WireHeader = { ok: true; schemaId: number; offset: number } | { ok: false; message: string };

export function readWireHeader(value: Buffer): WireHeader {
  if (value.length < 5)
    return { ok: false, message: `value of ${value.length} bytes is too short for the wire format` };
  if (value[0] !== 0)
    return {
      ok: false,
      message: `value does not start with the wire format's magic byte 0 (found ${value[0]})`,
    };
  return { ok: true, schemaId: value.readUInt32BE(1), offset: 5 };
}

export type MessageIndexes = { ok: true; indexes: number[]; offset: number } | { ok: false; message: string };

export function readMessageIndexes(value: Buffer, from: number): MessageIndexes {
  let offset = from;
  const next = (): number | undefined => {
    let result = 0;
    let shift = 0;
    for (;;) {
      if (offset >= value.length || shift > 28) return undefined;
      const byte = value[offset++]!;
      result |= (byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return (result >>> 1) ^ -(result & 1);
      shift += 7;
    }
  };
  const count = next();
  if (count === undefined || count < 0 || count > 100)
    return { ok: false, message: 'the Protobuf message-index list is malformed' };
  if (count === 0) return { ok: true, indexes: [0], offset };
  const indexes: number[] = [];
  for (let i = 0; i < count; i++) {
    const index = next();
    if (index === undefined || index < 0)
      return { ok: false, message: 'the Protobuf message-index list is malformed' };
    indexes.push(index);
  }
  return { ok: true, indexes, offset };
}
