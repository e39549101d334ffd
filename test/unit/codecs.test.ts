import { readFileSync } from 'node:fs';
import kafkajs from 'kafkajs';
import snappy from 'snappyjs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  loadLz4,
  lz4Decompress,
  registerCompressionCodecs,
  snappyDecompress,
  zstdDecompressBuffer,
} from '../../functions/sources/codecs.js';

// The fixtures were written by the reference command-line tools (zstd 1.5, lz4 1.9), not by the packages
// under test: `printf 'kafka-bigquery-drain %.0s' $(seq 1 200) | zstd -c` (then a second frame of
// "second frame"), `lz4 -c --content-size` and `lz4 -c -BX` (block checksums).
const text = 'kafka-bigquery-drain '.repeat(200);
const zstdTwoFrames =
  'KLUv/WRoD+0AAKhrYWZrYS1iaWdxdWVyeS1kcmFpbiABAKEA+8kESFmjbyi1L/0EWGEAAHNlY29uZCBmcmFtZRdkB7Y=';
const lz4ContentSize =
  'BCJNGGxAaBAAAAAAAAD5MAAAAP8Ga2Fma2EtYmlncXVlcnktZHJhaW4gFQD/////////////////////S1ByYWluIAAAAADaNVFh';
const lz4BlockChecksums =
  'BCJNGHRAvTAAAAD/BmthZmthLWJpZ3F1ZXJ5LWRyYWluIBUA/////////////////////0tQcmFpbiDBgSlHAAAAANo1UWE=';

describe('compression codecs', () => {
  beforeAll(loadLz4);

  it('reads zstd, every frame of it', () => {
    const out = zstdDecompressBuffer(Buffer.from(zstdTwoFrames, 'base64'));
    expect(out.toString()).toBe(`${text}second frame`);
  });

  it('reads lz4 frames with a content size and with block checksums', () => {
    expect(lz4Decompress(Buffer.from(lz4ContentSize, 'base64')).toString()).toBe(text);
    expect(lz4Decompress(Buffer.from(lz4BlockChecksums, 'base64')).toString()).toBe(text);
    const two = Buffer.concat([
      Buffer.from(lz4ContentSize, 'base64'),
      Buffer.from(lz4BlockChecksums, 'base64'),
    ]);
    expect(lz4Decompress(two).toString()).toBe(text + text);
    expect(() => lz4Decompress(Buffer.from(lz4ContentSize, 'base64').subarray(0, 30))).toThrow(/truncated/);
  });

  it('reads lz4 linked blocks (the librdkafka default), whose matches reach into the block before', () => {
    // `lz4 -c -B4 -BD` of 'kafka-bigquery-drain ' x 20,000: 64 KB blocks, most of them a few bytes long.
    const file = readFileSync(new URL('../fixtures/linked-blocks.lz4', import.meta.url));
    expect(lz4Decompress(file).toString()).toBe('kafka-bigquery-drain '.repeat(20_000));
  });

  it('reads raw snappy (librdkafka) and xerial-framed snappy (the Java client)', () => {
    const a = Buffer.from('first block '.repeat(50));
    const b = Buffer.from('second block '.repeat(70));
    expect(snappyDecompress(Buffer.from(snappy.compress(a))).equals(a)).toBe(true);
    const block = (data: Buffer) => {
      const compressed = Buffer.from(snappy.compress(data));
      const length = Buffer.alloc(4);
      length.writeUInt32BE(compressed.length);
      return Buffer.concat([length, compressed]);
    };
    const header = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00, 0, 0, 0, 1, 0, 0, 0, 1]);
    const framed = Buffer.concat([header, block(a), block(b)]);
    expect(snappyDecompress(framed).toString()).toBe(a.toString() + b.toString());
    expect(() => snappyDecompress(framed.subarray(0, framed.length - 3))).toThrow(/truncated/);
  });

  it('registers with kafkajs, which then looks each codec up instead of failing', async () => {
    registerCompressionCodecs();
    registerCompressionCodecs();
    const { CompressionCodecs, CompressionTypes } = kafkajs;
    for (const type of [CompressionTypes.Snappy, CompressionTypes.LZ4, CompressionTypes.ZSTD] as const) {
      const codec = CompressionCodecs[type]();
      expect(typeof codec.decompress).toBe('function');
    }
    const zstd = CompressionCodecs[CompressionTypes.ZSTD]();
    expect((await zstd.decompress(Buffer.from(zstdTwoFrames, 'base64'))).toString()).toMatch(/second frame$/);
  });
});
