import { describe, expect, test } from 'vitest';
import { JsonText } from '../../functions/encoders/json-text.js';

/** Every character's case, and the strings the text paths meet: the writer's bytes are JSON.stringify's. */
describe('JsonText: a row written as bytes reads as JSON.stringify writes it', () => {
  const every = Array.from({ length: 0x80 }, (_, c) => String.fromCharCode(c)).join('');
  const strings = [
    '',
    every,
    'ünïcødé ✓ 😀',
    '\u2028\u2029 line separators stay as they are',
    '"\\"',
    'x'.repeat(40_000),
  ];

  test.each(strings.map((s) => [s.slice(0, 24), s]))('string from UTF-8 bytes: %j', (_, s) => {
    const out = new JsonText();
    const bytes = Buffer.from(`pad${s}pad`);
    out.stringFrom(bytes, 3, bytes.length - 3);
    expect(out.written().toString()).toBe(JSON.stringify(s));
    out.reset();
    out.string(s);
    expect(out.written().toString()).toBe(JSON.stringify(s));
    out.reset();
    expect(out.utf8From(bytes, 3, bytes.length - 3)).toBe(true);
    expect(out.written().toString()).toBe(JSON.stringify(s));
  });

  test.each([
    ['a byte no UTF-8 text holds', [0x61, 0xff]],
    ['a sequence cut short', [0xe2, 0x9c]],
    ['an overlong form', [0xc0, 0xaf]],
    ['a surrogate', [0xed, 0xa0, 0x80]],
    ['a lone continuation byte after ASCII', [0x41, 0x42, 0x80]],
  ])('bytes that are not UTF-8 (%s): utf8From says false', (_, bytes) => {
    const out = new JsonText();
    expect(out.utf8From(Buffer.from(bytes), 0, bytes.length)).toBe(false);
    expect(out.utf8From(Buffer.from([0x20, ...bytes, 0x20]), 1, 1 + bytes.length)).toBe(false);
  });

  test('integers, raw text (not ASCII too), quoted text and base64, one after another; grown from a small buffer', () => {
    const out = new JsonText();
    const numbers = [
      0,
      7,
      9,
      10,
      99,
      100,
      2147483647,
      2147483648,
      -1,
      -2147483648,
      2 ** 53 - 1,
      -(2 ** 53 - 1),
    ];
    const parts: string[] = [];
    for (let round = 0; round < 400; round++) {
      for (const n of numbers) {
        out.integer(n);
        parts.push(String(n));
      }
      out.raw(',"ключ":');
      parts.push(',"ключ":');
      out.quoted('2024-02-29T23:59:59.999999Z');
      parts.push('"2024-02-29T23:59:59.999999Z"');
      const bytes = Buffer.from([0, 1, 2, 250, 251, 252, 253, 254, 255, round & 255]);
      out.base64From(bytes, 1, bytes.length);
      parts.push(`"${bytes.subarray(1).toString('base64')}"`);
      out.byte(59);
      parts.push(';');
    }
    expect(out.written().toString()).toBe(parts.join(''));
    out.reset();
    expect(out.written().toString()).toBe('');
  });
});
