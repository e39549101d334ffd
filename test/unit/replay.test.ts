import { describe, expect, test } from 'vitest';
import { splitReplayed } from '../../functions/modes/storage-write/replay.js';
import { record } from '../support/memory-ports.js';

describe('splitReplayed', () => {
  const batch = Array.from({ length: 8 }, (_, o) => record('t', 0, o + 10, { n: o }));

  test('no replay: every record is written', () => {
    expect(splitReplayed(batch, undefined)).toEqual({ fresh: batch, heldRows: 0, heldLetters: 0 });
  });

  const held = (...offsets: number[]) =>
    new Map(offsets.map((o) => [o, batch.find((r) => r.offset === o)!.timestamp] as const));

  test('an offset held with another timestamp is another record (a recreated topic): written', () => {
    const rows = new Map([...held(10, 11)].map(([o, ts]) => [o, o === 11 ? ts - 86_400_000 : ts] as const));
    const { fresh, heldRows } = splitReplayed(batch.slice(0, 2), { rows, deadLetters: new Map(), until: 20 });
    expect(fresh.map((r) => r.offset)).toEqual([11]);
    expect(heldRows).toBe(1);
  });

  test('offsets the tables hold below the replay end are counted, as rows or letters; the rest are written', () => {
    const replay = { rows: held(10, 11, 15, 17), deadLetters: held(12), until: 16 };
    const { fresh, heldRows, heldLetters } = splitReplayed(batch, replay);
    // 17 is at or past the replay's end: whatever the table holds there, it is read as new.
    expect(fresh.map((r) => r.offset)).toEqual([13, 14, 16, 17]);
    expect([heldRows, heldLetters]).toEqual([3, 1]);
  });
});
