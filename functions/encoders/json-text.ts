/**
 * A row's JSON text written as bytes, for the text paths of the binary formats (avro/text.ts,
 * protobuf/text.ts): each member goes into one buffer, strings copied from the payload with JSON's escapes,
 * and the row's bytes are copied out once, at the end (never a string: row-text.ts `rowJson`). Joining a
 * string per value cost Avro's and Protobuf's rows three to four times what JSON's own text does (#42),
 * most of it the garbage collector's.
 * One row at a time, on one thread: the writer is the caller's.
 */
import { isUtf8 } from 'node:buffer';
import { decimalLength, writeDate, writeDateTime, writeDecimal } from './digits.js';

export class JsonText {
  private bytes = Buffer.allocUnsafe(1 << 14);
  position = 0;

  reset(): void {
    this.position = 0;
  }

  /** The bytes written since the reset: a view of the writer's own buffer, good until its next reset. */
  written(): Buffer {
    return this.bytes.subarray(0, this.position);
  }

  /** The last byte written (-1 when none since the reset). */
  last(): number {
    return this.position === 0 ? -1 : this.bytes[this.position - 1]!;
  }

  byte(b: number): void {
    if (this.position === this.bytes.length) this.grow(1);
    this.bytes[this.position++] = b;
  }

  /** Text as it is: a JSON fragment (a member's name and colon, a number, a literal). */
  raw(s: string): void {
    this.room(s.length);
    const b = this.bytes;
    let p = this.position;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) {
        // Not ASCII: Node encodes the rest (at most three bytes a UTF-16 unit).
        this.position = p;
        this.room(3 * (s.length - i));
        this.position += this.bytes.write(s.slice(i), this.position, 'utf8');
        return;
      }
      b[p++] = c;
    }
    this.position = p;
  }

  /** Text in quotes, its characters as they are (dates, timestamps, decimals: nothing to escape). */
  quoted(s: string): void {
    this.byte(34);
    this.raw(s);
    this.byte(34);
  }

  /** A JavaScript string as JSON's string: `JSON.stringify`'s bytes. */
  string(s: string): void {
    this.raw(JSON.stringify(s));
  }

  /**
   * UTF-8 bytes (already checked) as a JSON string, escaped as `JSON.stringify` escapes the text they
   * decode to: `"` and `\`, and the control characters (the short forms where JSON has them).
   */
  stringFrom(source: Buffer, start: number, end: number): void {
    this.copyEscaped(source, start, end);
  }

  /**
   * Bytes as a JSON string (as `stringFrom`) where they are UTF-8, checked as they are copied (a second
   * pass only over text that is not ASCII); false where they are not (then what was written is garbage).
   */
  utf8From(source: Buffer, start: number, end: number): boolean {
    return this.copyEscaped(source, start, end) < 0x80 || isUtf8(source.subarray(start, end));
  }

  /** The bytes copied with JSON's escapes; every byte OR-ed together (≥ 0x80: not all ASCII). */
  private copyEscaped(source: Buffer, start: number, end: number): number {
    this.room(2 + 6 * (end - start));
    const b = this.bytes;
    let p = this.position;
    let seen = 0;
    b[p++] = 34;
    for (let i = start; i < end; i++) {
      const c = source[i]!;
      seen |= c;
      if (c >= 0x20 && c !== 34 && c !== 92) b[p++] = c;
      else {
        b[p++] = 92;
        const short = escapes[c];
        if (short !== undefined) b[p++] = short;
        else {
          b[p++] = 117; // \u00XX
          b[p++] = 48;
          b[p++] = 48;
          b[p++] = hex[c >> 4]!;
          b[p++] = hex[c & 15]!;
        }
      }
    }
    b[p++] = 34;
    this.position = p;
    return seen;
  }

  /** Bytes as a JSON string of their base64 (BigQuery's JSON form of BYTES). */
  base64From(source: Buffer, start: number, end: number): void {
    this.room(2 + 4 * Math.ceil((end - start) / 3));
    this.byte(34);
    this.position += this.bytes.write(source.toString('base64', start, end), this.position, 'latin1');
    this.byte(34);
  }

  /** A decimal of a safe unscaled integer and a scale ≤ 38, as a JSON string of its text (digits.ts). */
  decimal(unscaled: number, scale: number): void {
    const length = decimalLength(unscaled, scale);
    this.room(length + 2);
    this.bytes[this.position] = 34;
    this.position = writeDecimal(this.bytes, this.position + 1, unscaled, scale, length);
    this.bytes[this.position++] = 34;
  }

  /** `"YYYY-MM-DD"` of days since the epoch; false outside years 0000-9999. */
  date(days: number): boolean {
    this.room(12);
    const end = writeDate(this.bytes, this.position + 1, days);
    if (end < 0) return false;
    this.bytes[this.position] = 34;
    this.bytes[end] = 34;
    this.position = end + 1;
    return true;
  }

  /** `"YYYY-MM-DDTHH:MM:SS.ffffff"` (`Z` before the closing quote with `zoned`); false outside years 0000-9999. */
  dateTime(micros: number, zoned: boolean): boolean {
    this.room(29);
    let end = writeDateTime(this.bytes, this.position + 1, micros, 84);
    if (end < 0) return false;
    this.bytes[this.position] = 34;
    if (zoned) this.bytes[end++] = 90;
    this.bytes[end] = 34;
    this.position = end + 1;
    return true;
  }

  /** A safe integer's digits. */
  integer(n: number): void {
    if (n < 0 || n > 0x7fffffff || n !== (n | 0)) {
      this.raw(String(n));
      return;
    }
    this.room(10);
    const b = this.bytes;
    let digits = 1;
    for (let x = n; x >= 10; x = (x / 10) | 0) digits++;
    let p = this.position + digits;
    this.position = p;
    let x = n;
    do {
      b[--p] = 48 + (x % 10);
      x = (x / 10) | 0;
    } while (x > 0);
  }

  private room(n: number): void {
    if (this.position + n > this.bytes.length) this.grow(n);
  }

  private grow(n: number): void {
    const bigger = Buffer.allocUnsafe(Math.max(2 * this.bytes.length, this.position + n));
    this.bytes.copy(bigger, 0, 0, this.position);
    this.bytes = bigger;
  }
}

/** The short escapes JSON has (`\"`, `\\`, `\b`, `\t`, `\n`, `\f`, `\r`), by the byte escaped. */
const escapes: (number | undefined)[] = [];
escapes[34] = 34;
escapes[92] = 92;
escapes[8] = 98;
escapes[9] = 116;
escapes[10] = 110;
escapes[12] = 102;
escapes[13] = 114;

const hex = Buffer.from('0123456789abcdef');
