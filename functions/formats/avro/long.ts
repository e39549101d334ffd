import avro from 'avsc';

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * Longs as numbers where they are safe and as bigints where they are not: never rounded (avsc's own long
 * type reads through a double, and turns a negative long below -2^52 into a positive number). Read from
 * the varint's own bytes (avsc's `noUnpack`): up to 7 bytes in plain numbers (49 bits, exact), longer
 * ones through a bigint; no buffer or bigint made for the common case.
 */
export const exactLong = avro.types.LongType.__with(
  {
    fromBuffer: (varint: Buffer) => {
      const length = varint.length;
      if (length <= 7) {
        let zigzag = 0;
        let scale = 1;
        for (let i = 0; i < length; i++) {
          zigzag += (varint[i]! & 0x7f) * scale;
          scale *= 128;
        }
        return zigzag % 2 === 0 ? zigzag / 2 : -(zigzag + 1) / 2;
      }
      if (length > 10) throw new Error(`a long of ${length} bytes is over 64 bits`);
      let zigzag = 0n;
      for (let i = length - 1; i >= 0; i--) zigzag = (zigzag << 7n) | BigInt(varint[i]! & 0x7f);
      const n = (zigzag & 1n) === 0n ? zigzag >> 1n : -((zigzag + 1n) >> 1n);
      if (n < INT64_MIN || n > INT64_MAX) throw new Error(`the long ${n} is over 64 bits`);
      return n >= MIN_SAFE && n <= MAX_SAFE ? Number(n) : n;
    },
    toBuffer: (n: number | bigint) => {
      const value = BigInt(n);
      let zigzag = value >= 0n ? value << 1n : (-value << 1n) - 1n;
      const bytes: number[] = [];
      while (zigzag >= 0x80n) {
        bytes.push(Number((zigzag & 0x7fn) | 0x80n));
        zigzag >>= 7n;
      }
      bytes.push(Number(zigzag));
      return Buffer.from(bytes);
    },
    fromJSON: (n: number) => n,
    toJSON: (n: number | bigint) => Number(n),
    isValid: (n: unknown) =>
      (typeof n === 'number' && Number.isSafeInteger(n)) ||
      (typeof n === 'bigint' && n >= INT64_MIN && n <= INT64_MAX),
    compare: (a: number | bigint, b: number | bigint) => (a < b ? -1 : a > b ? 1 : 0),
  },
  true,
);
