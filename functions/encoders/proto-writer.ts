import { isUtf8 } from 'node:buffer';
import { decimalLength, writeDateTime, writeDecimal } from './digits.js';

/**
 * The few protocol buffer encodings a row needs, written straight into one growing buffer: varints,
 * 64-bit doubles, length-delimited strings, bytes and nested messages. No object per field (protobufjs's
 * writer allocates an operation per write): the rows of a whole append go into one buffer and are handed
 * on as views of it.
 */
export class ProtoWriter {
  buffer: Buffer;
  position = 0;

  constructor(size = 64 * 1024) {
    this.buffer = Buffer.allocUnsafe(size);
  }

  /** Room for `bytes` more. */
  private reserve(bytes: number): void {
    if (this.position + bytes <= this.buffer.length) return;
    let size = this.buffer.length * 2;
    while (size < this.position + bytes) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    this.buffer.copy(grown, 0, 0, this.position);
    this.buffer = grown;
  }

  /** An unsigned varint below 2^53 (tags, lengths, non-negative integers). */
  varint(value: number): void {
    this.reserve(10);
    const buffer = this.buffer;
    let at = this.position;
    let v = value;
    while (v >= 0x80) {
      buffer[at++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    buffer[at++] = v;
    this.position = at;
  }

  /** A varint of any 64-bit two's complement value (negative int32/int64 take 10 bytes, as protobuf says). */
  bigVarint(value: bigint): void {
    let v = BigInt.asUintN(64, value);
    this.reserve(10);
    while (v >= 0x80n) {
      this.buffer[this.position++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.buffer[this.position++] = Number(v);
  }

  /** An int64 (or int32) varint of a safe integer. */
  integer(value: number): void {
    if (value >= 0) this.varint(value);
    else {
      // Two's complement in two 32-bit halves: exact for any safe integer, no bigint.
      const high = Math.floor(value / 4294967296);
      this.varint64(value - high * 4294967296, high >>> 0);
    }
  }

  /** A varint of the 64 bits `hi`:`lo` (each an unsigned 32-bit half). */
  varint64(lo: number, hi: number): void {
    if (hi === 0) {
      this.varint(lo);
      return;
    }
    this.reserve(10);
    const buffer = this.buffer;
    let at = this.position;
    let low = lo;
    let high = hi;
    // Seven bits at a time from the low half, then the high half's bits shifted in.
    for (let i = 0; i < 4; i++) {
      buffer[at++] = (low & 0x7f) | 0x80;
      low >>>= 7;
    }
    // Bits 28 to 34: four of the low half, three of the high.
    let byte = (low & 0x0f) | ((high & 0x07) << 4);
    high >>>= 3;
    while (high !== 0) {
      buffer[at++] = byte | 0x80;
      byte = high & 0x7f;
      high >>>= 7;
    }
    buffer[at++] = byte;
    this.position = at;
  }

  double(value: number): void {
    this.reserve(8);
    this.buffer.writeDoubleLE(value, this.position);
    this.position += 8;
  }

  string(value: string): void {
    // Short ASCII text (most columns) byte by byte: cheaper than two calls into native code.
    const count = value.length;
    if (count < 0x80) {
      this.reserve(count + 1);
      const buffer = this.buffer;
      let at = this.position + 1;
      let i = 0;
      for (; i < count; i++) {
        const code = value.charCodeAt(i);
        if (code >= 0x80) break;
        buffer[at++] = code;
      }
      if (i === count) {
        buffer[this.position] = count;
        this.position = at;
        return;
      }
    }
    const length = Buffer.byteLength(value, 'utf8');
    this.varint(length);
    this.reserve(length);
    this.position += this.buffer.write(value, this.position, length, 'utf8');
  }

  /** A decimal of a safe unscaled integer and a scale ≤ 38, as its text (digits.ts). */
  decimal(unscaled: number, scale: number): void {
    const length = decimalLength(unscaled, scale);
    this.reserve(length + 1);
    this.buffer[this.position] = length;
    this.position = writeDecimal(this.buffer, this.position + 1, unscaled, scale, length);
  }

  /** `YYYY-MM-DD HH:MM:SS.ffffff` of microseconds since the epoch (DATETIME); false outside years 0000-9999. */
  dateTime(micros: number): boolean {
    this.reserve(27);
    const end = writeDateTime(this.buffer, this.position + 1, micros, 32);
    if (end < 0) return false;
    this.buffer[this.position] = 26;
    this.position = end;
    return true;
  }

  bytes(value: Uint8Array): void {
    this.varint(value.length);
    this.reserve(value.length);
    this.buffer.set(value, this.position);
    this.position += value.length;
  }

  /**
   * A string's bytes `start` to `end` of `source`, length-delimited, where they are UTF-8: checked as they
   * are copied (a second pass only over text that is not ASCII); false where they are not (then the
   * message is garbage).
   */
  utf8From(source: Buffer, start: number, end: number): boolean {
    const length = end - start;
    if (length >= 48) {
      // Long text: checked in native code first, then copied so.
      if (!isUtf8(source.subarray(start, end))) return false;
      this.delimitedFrom(source, start, end);
      return true;
    }
    this.reserve(length + 1);
    const buffer = this.buffer;
    buffer[this.position] = length;
    let at = this.position + 1;
    let seen = 0;
    for (let i = start; i < end; i++) {
      const c = source[i]!;
      seen |= c;
      buffer[at++] = c;
    }
    this.position = at;
    return seen < 0x80 || isUtf8(source.subarray(start, end));
  }

  /** Bytes `start` to `end` of `source`, length-delimited (a string's UTF-8 bytes, or bytes). */
  delimitedFrom(source: Uint8Array, start: number, end: number): void {
    const length = end - start;
    this.varint(length);
    this.reserve(length);
    const buffer = this.buffer;
    let at = this.position;
    // Short runs byte by byte: cheaper than a call into native code.
    if (length < 48) for (let i = start; i < end; i++) buffer[at++] = source[i]!;
    else buffer.set(source.subarray(start, end), at);
    this.position += length;
  }

  /**
   * Starts a nested message: one byte is kept for its length (most nested messages are shorter than 128
   * bytes); returns where it starts.
   */
  begin(): number {
    this.reserve(1);
    return this.position++;
  }

  /** Ends the nested message begun at `start`: a longer one moves right to make room for its length. */
  end(start: number): void {
    const length = this.position - start - 1;
    if (length < 0x80) {
      this.buffer[start] = length;
      return;
    }
    let size = 1;
    for (let v = length; v >= 0x80; v = Math.floor(v / 0x80)) size++;
    this.reserve(size - 1);
    this.buffer.copyWithin(start + size, start + 1, this.position);
    const end = this.position + size - 1;
    this.position = start;
    this.varint(length);
    this.position = end;
  }
}
