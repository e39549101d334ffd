/**
 * Kafka's compression codecs for kafkajs, which reads only gzip by itself: without these, a topic
 * written with snappy, lz4 or zstd (what most producers use) crashes every run. All three are pure
 * JavaScript, so `npm ci` needs no compiler and no download beyond the registry. The drain only reads, so
 * only decompression is provided.
 */
import { decompress as zstdDecompress } from 'fzstd';
import kafkajs from 'kafkajs';
import snappy from 'snappyjs';

const { CompressionCodecs, CompressionTypes } = kafkajs;

/** The header the Java client's snappy (xerial `SnappyOutputStream`) writes: magic, version, compatible. */
const xerialMagic = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const xerialHeaderBytes = 16;

/**
 * Snappy as Kafka producers write it: the Java client frames raw snappy blocks xerial's way (a 16-byte
 * header, then blocks each preceded by its 4-byte big-endian length); librdkafka (kcat) writes one raw
 * snappy block.
 */
export function snappyDecompress(data: Buffer): Buffer {
  if (data.length < xerialHeaderBytes || !data.subarray(0, xerialMagic.length).equals(xerialMagic)) {
    return Buffer.from(snappy.uncompress(data));
  }
  const blocks: Buffer[] = [];
  let at = xerialHeaderBytes;
  while (at < data.length) {
    if (at + 4 > data.length) throw new Error('snappy (xerial): truncated block length');
    const size = data.readUInt32BE(at);
    at += 4;
    if (at + size > data.length) throw new Error('snappy (xerial): truncated block');
    blocks.push(Buffer.from(snappy.uncompress(data.subarray(at, at + size))));
    at += size;
  }
  return Buffer.concat(blocks);
}

/**
 * lz4js, loaded with the first lz4 batch: loading it allocates a 5 MB block buffer for compressing, which
 * the drain never does (5 MB of every run's memory, lz4 or not).
 */
let lz4: typeof import('lz4js').default | undefined;
export async function loadLz4(): Promise<void> {
  lz4 ??= (await import('lz4js')).default;
}

const lz4FrameMagic = 0x184d2204;
const lz4BlockSizes: Record<number, number> = { 4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20 };

/**
 * LZ4 as Kafka writes it since record batches (magic 2): the standard LZ4 frame format, one or more frames.
 * The frame is walked here and only blocks are left to lz4js, whose own frame reader misplaces block
 * checksums. Blocks may be linked (librdkafka's default): they decompress into one buffer, so a match
 * can reach back into earlier blocks.
 */
export function lz4Decompress(data: Buffer): Buffer {
  const codec = lz4;
  if (codec === undefined) throw new Error('lz4: loadLz4() first');
  const frames: { blocks: { at: number; size: number; raw: boolean }[]; bound: number }[] = [];
  let at = 0;
  while (at < data.length) {
    if (at + 7 > data.length) throw new Error('lz4: truncated frame header');
    const magic = data.readUInt32LE(at);
    if ((magic & 0xfffffff0) === 0x184d2a50) {
      at += 8 + data.readUInt32LE(at + 4); // a skippable frame
      continue;
    }
    if (magic !== lz4FrameMagic) throw new Error('lz4: not an LZ4 frame');
    const flags = data[at + 4]!;
    const blockMax = lz4BlockSizes[(data[at + 5]! >> 4) & 0x7];
    if (flags >> 6 !== 1 || blockMax === undefined) throw new Error('lz4: unsupported frame descriptor');
    const blockChecksum = (flags & 0x10) !== 0;
    at += 6 + ((flags & 0x08) !== 0 ? 8 : 0) + ((flags & 0x01) !== 0 ? 4 : 0) + 1;
    const frame: (typeof frames)[number] = { blocks: [], bound: 0 };
    for (;;) {
      if (at + 4 > data.length) throw new Error('lz4: truncated block');
      const word = data.readUInt32LE(at);
      at += 4;
      if (word === 0) break;
      const size = word & 0x7fffffff;
      const raw = (word & 0x80000000) !== 0;
      if (at + size > data.length) throw new Error('lz4: truncated block');
      frame.blocks.push({ at, size, raw });
      frame.bound += raw ? size : blockMax;
      at += size + (blockChecksum ? 4 : 0);
    }
    if ((flags & 0x04) !== 0) at += 4; // content checksum
    frames.push(frame);
  }
  const outputs = frames.map((frame) => {
    const out = new Uint8Array(frame.bound);
    let written = 0;
    for (const block of frame.blocks) {
      if (block.raw) {
        out.set(data.subarray(block.at, block.at + block.size), written);
        written += block.size;
      } else {
        written = codec.decompressBlock(data, out, block.at, block.size, written);
      }
      if (written > out.length) throw new Error('lz4: a block decompresses past its bound');
    }
    return Buffer.from(out.buffer, 0, written);
  });
  return outputs.length === 1 ? outputs[0]! : Buffer.concat(outputs);
}

/** Zstandard frames (one or more) as the Java client (zstd-jni) and librdkafka write them. */
export function zstdDecompressBuffer(data: Buffer): Buffer {
  const out = zstdDecompress(data);
  return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}

function readOnly(name: string, decompress: (data: Buffer) => Buffer | Promise<Buffer>) {
  return () => ({
    async compress(): Promise<Buffer> {
      throw new Error(`${name}: kafka-bigquery-drain reads Kafka and never compresses`);
    },
    async decompress(data: Buffer): Promise<Buffer> {
      return decompress(data);
    },
  });
}

let registered = false;

/** Teaches kafkajs (process-wide) to read snappy, lz4 and zstd record batches. Safe to call twice. */
export function registerCompressionCodecs(): void {
  if (registered) return;
  registered = true;
  CompressionCodecs[CompressionTypes.Snappy] = readOnly('snappy', snappyDecompress);
  CompressionCodecs[CompressionTypes.LZ4] = readOnly('lz4', async (data) => {
    await loadLz4();
    return lz4Decompress(data);
  });
  CompressionCodecs[CompressionTypes.ZSTD] = readOnly('zstd', zstdDecompressBuffer);
}
