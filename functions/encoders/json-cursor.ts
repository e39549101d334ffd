/**
 * A cursor over one JSON text's bytes, for the one-pass path (json-transcoder.ts): each step reads what is
 * at the cursor and moves past it, or says it cannot (false, -1) without judging why; the caller then
 * leaves the record to the general path, which says why.
 */
export class JsonCursor {
  bytes: Buffer = Buffer.alloc(0);
  end = 0;
  at = 0;

  reset(bytes: Buffer): void {
    this.bytes = bytes;
    this.end = bytes.length;
    this.at = 0;
  }

  /** Past any whitespace (called only where there is a byte ≤ 32: most JSON has none between tokens). */
  space(): void {
    const b = this.bytes;
    let p = this.at;
    if (b[p]! > 32) return;
    let c = b[p];
    while (c === 32 || c === 10 || c === 13 || c === 9) c = b[++p];
    this.at = p;
  }

  /** At `byte` (then past it), or false. */
  take(byte: number): boolean {
    if (this.bytes[this.at] !== byte) return false;
    this.at++;
    return true;
  }

  /** At a string's opening quote: the index of its closing one, or -1 (an escape, a control character). */
  stringEnd(): number {
    const b = this.bytes;
    if (b[this.at] !== 34) return -1;
    for (let q = this.at + 1, end = this.end; q < end; q++) {
      const c = b[q]!;
      if (c === 34) return q;
      if (c === 92 || c < 32) return -1;
    }
    return -1;
  }

  /** At a number: past the end of its JSON form, or -1 when it is not one (`01`, `1.`, `.5`, `-`). */
  numberEnd(): number {
    const b = this.bytes;
    let q = this.at;
    if (b[q] === 45) q++;
    if (b[q] === 48) q++;
    else {
      const start = q;
      while (isDigit(b[q])) q++;
      if (q === start) return -1;
    }
    if (b[q] === 46) {
      const start = ++q;
      while (isDigit(b[q])) q++;
      if (q === start) return -1;
    }
    if (b[q] === 101 || b[q] === 69) {
      q++;
      if (b[q] === 43 || b[q] === 45) q++;
      const start = q;
      while (isDigit(b[q])) q++;
      if (q === start) return -1;
    }
    return q;
  }

  /** At `true`, `false` or `null` as given (then past it), or false. */
  literal(text: readonly number[]): boolean {
    const b = this.bytes;
    const p = this.at;
    for (let i = 0; i < text.length; i++) if (b[p + i] !== text[i]) return false;
    this.at = p + text.length;
    return true;
  }

  /** Whether bytes [start, end) are `key`'s. */
  matches(key: Buffer, start: number, end: number): boolean {
    if (key.length !== end - start) return false;
    const b = this.bytes;
    for (let i = 0; i < key.length; i++) if (key[i] !== b[start + i]) return false;
    return true;
  }

  /** Past any JSON value (an unknown field where unknown fields are ignored), or false. */
  skip(depth = 0): boolean {
    if (depth > 64) return false;
    const c = this.bytes[this.at];
    if (c === 34) {
      const q = this.stringEnd();
      this.at = q + 1;
      return q >= 0;
    }
    if (c === 123 || c === 91) return this.skipAll(c === 123 ? 125 : 93, depth);
    if (c === 116) return this.literal(TRUE);
    if (c === 102) return this.literal(FALSE);
    if (c === 110) return this.literal(NULL);
    const q = this.numberEnd();
    this.at = q;
    return q >= 0;
  }

  /** At an object's or array's opening: past its closing `close`, or false. */
  private skipAll(close: number, depth: number): boolean {
    this.at++;
    this.space();
    if (this.take(close)) return true;
    for (;;) {
      if (close === 125) {
        const q = this.stringEnd();
        if (q < 0) return false;
        this.at = q + 1;
        this.space();
        if (!this.take(58)) return false;
        this.space();
      }
      if (!this.skip(depth + 1)) return false;
      this.space();
      if (this.take(44)) {
        this.space();
        continue;
      }
      return this.take(close);
    }
  }
}

export const TRUE = [116, 114, 117, 101];
export const FALSE = [102, 97, 108, 115, 101];
export const NULL = [110, 117, 108, 108];

export function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 48 && c <= 57;
}

const powersOfTen = Array.from({ length: 23 }, (_, k) => 10 ** k);

/**
 * A JSON number's double, as `JSON.parse` reads it: up to 15 digits and 22 decimals without an exponent,
 * the digits as an exact integer divided by an exact power of ten (one correctly rounded division, so
 * the same double); any other form through `Number`.
 */
export function doubleOf(b: Buffer, start: number, end: number): number {
  let i = start;
  const negative = b[i] === 45;
  if (negative) i++;
  let m = 0;
  let digits = 0;
  let scale = -1;
  for (; i < end; i++) {
    const c = b[i]!;
    if (c === 46) scale = 0;
    else if (c >= 48 && c <= 57) {
      m = m * 10 + (c - 48);
      digits++;
      if (scale >= 0) scale++;
    } else return Number(b.toString('latin1', start, end));
  }
  if (digits > 15 || scale > 22) return Number(b.toString('latin1', start, end));
  const v = scale > 0 ? m / powersOfTen[scale]! : m;
  return negative ? -v : v;
}

/** `-?\d{1,maxInteger}(\.\d{1,maxScale})?`: the decimal text validation passes as it is. */
export function plainDecimal(
  b: Buffer,
  start: number,
  end: number,
  maxInteger: number,
  maxScale: number,
): boolean {
  let i = start;
  if (b[i] === 45) i++;
  const integer = i;
  while (i < end && isDigit(b[i])) i++;
  if (i === integer || i - integer > maxInteger) return false;
  if (i === end) return true;
  if (b[i] !== 46) return false;
  const fraction = ++i;
  while (i < end && isDigit(b[i])) i++;
  return i === end && i > fraction && i - fraction <= maxScale;
}

/**
 * A JSON object's top-level fields as their own text (`{"a": 9007199254740993}` → a: `9007199254740993`),
 * undefined when the text is not an object this cursor reads (an escaped key or string, deeper than 64).
 * For values kept whole: the text is exact where a parsed number would not be.
 */
export function topLevelFields(bytes: Buffer): Map<string, string> | undefined {
  const c = new JsonCursor();
  c.reset(bytes);
  c.space();
  if (!c.take(123)) return undefined;
  const fields = new Map<string, string>();
  c.space();
  if (c.take(125)) return fields;
  for (;;) {
    const q = c.stringEnd();
    if (q < 0) return undefined;
    const key = bytes.toString('utf8', c.at + 1, q);
    c.at = q + 1;
    c.space();
    if (!c.take(58)) return undefined;
    c.space();
    const start = c.at;
    if (!c.skip()) return undefined;
    fields.set(key, bytes.toString('utf8', start, c.at));
    c.space();
    if (c.take(44)) {
      c.space();
      continue;
    }
    return c.take(125) ? fields : undefined;
  }
}

/**
 * Whether bytes [start, end) are one JSON value this cursor reads whole (surrounding whitespace allowed),
 * as `JSON.parse` would accept it: a JSON column's text (Debezium's `Json`) taken as it is. False also
 * for text it does not read (an escape, deeper than 64), which then takes the general path.
 */
export function isJsonText(bytes: Buffer, start: number, end: number): boolean {
  const c = new JsonCursor();
  c.reset(bytes.subarray(start, end));
  c.space();
  if (!c.skip()) return false;
  c.space();
  return c.at === c.end;
}
