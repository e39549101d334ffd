/**
 * The ranges an operator's forward seek passes over (functions/kernel/undrained.ts, issue #78): kept by the
 * seeks, settled against the checkpoint, and where a replay's freshness is measured from.
 */
import { describe, expect, test } from 'vitest';
import {
  neverDrained,
  replayEnd,
  replayOf,
  seekUndrained,
  settleUndrained,
} from '../../functions/kernel/undrained.js';

describe('ranges never drained', () => {
  test('a seek forward passes a range over; a seek back puts it in the replay’s way', () => {
    const forward = seekUndrained([], 100, 300);
    expect(forward).toEqual([{ from: 100, to: 300, pending: false }]);
    // Below the checkpoint and passed over: the checkpoint does not go through it.
    expect(neverDrained(forward, 150)).toBe(false);
    const back = seekUndrained(forward, 300, 50);
    expect(back).toEqual([{ from: 100, to: 300, pending: true }]);
    expect(neverDrained(back, 150)).toBe(true);
    expect(neverDrained(back, 50)).toBe(false);
    // The replay of [50, 300) is a replay up to 100 only: freshness is measured from there.
    expect(replayEnd(300, back, 50)).toBe(100);
    expect(replayEnd(300, back, 120)).toBe(120);
    expect(replayEnd(300, [], 50)).toBe(300);
  });

  test('a seek back into a range splits it: below the new checkpoint it stays passed over', () => {
    expect(seekUndrained([{ from: 100, to: 300, pending: false }], 400, 200)).toEqual([
      { from: 100, to: 200, pending: false },
      { from: 200, to: 300, pending: true },
    ]);
  });

  test('drained once the checkpoint passed it: settled at the next seek or lease', () => {
    const pending = [{ from: 100, to: 300, pending: true }];
    expect(settleUndrained(pending, 50)).toEqual(pending);
    expect(settleUndrained(pending, 200)).toEqual([{ from: 200, to: 300, pending: true }]);
    expect(settleUndrained(pending, 300)).toEqual([]);
    // Drained, then sought back over again: a true replay this time.
    const again = seekUndrained(pending, 500, 0);
    expect(again).toEqual([]);
    expect(replayEnd(500, again, 0)).toBe(500);
  });

  test('a seek to where it stands, or of a partition never drained, changes nothing; at most 20 kept', () => {
    const one = [{ from: 1, to: 2, pending: false }];
    expect(seekUndrained(one, 5, 5)).toEqual(one);
    expect(seekUndrained(one, null, 9)).toEqual(one);
    let many: ReturnType<typeof seekUndrained> = [];
    for (let i = 0; i < 25; i++) many = seekUndrained(many, i * 10, i * 10 + 5);
    expect(many).toHaveLength(20);
    expect(many[0]).toEqual({ from: 50, to: 55, pending: false });
  });

  test('a forward seek within a replay passes over only what lies beyond it, and the pending ranges it jumps', () => {
    // Drained to 1,000, sought back to 0, drained to 300, sought forward to 600: [300, 600) was drained.
    expect(seekUndrained([], 300, 600, 1_000)).toEqual([]);
    expect(seekUndrained([], 300, 1_200, 1_000)).toEqual([{ from: 1_000, to: 1_200, pending: false }]);
    // A pending range the checkpoint jumps is passed over again, its rest still ahead.
    expect(seekUndrained([{ from: 100, to: 300, pending: true }], 50, 200, 0)).toEqual([
      { from: 100, to: 200, pending: false },
      { from: 200, to: 300, pending: true },
      { from: 50, to: 200, pending: false },
    ]);
  });

  test("a run's replay: its line's end follows the checkpoint, past the ranges never drained", () => {
    // Drained to 1,000, forward to 2,000, drained to 3,000, back to 500.
    const ranges = seekUndrained(seekUndrained([], 1_000, 2_000), 3_000, 500);
    const replay = replayOf(3_000, ranges, 500);
    const line: { replayUntil?: number } = {};
    replay.mark(line, 500);
    expect(line.replayUntil).toBe(1_000);
    replay.mark(line, 1_500); // within what was never drained: no replay ahead of it
    expect(line.replayUntil).toBeUndefined();
    replay.mark(line, 2_500); // past it, in the replay again: it ends at 3,000
    expect(line.replayUntil).toBe(3_000);
    expect([499, 500, 1_500, 2_500, 3_000].map(replay.replayed)).toEqual([true, true, false, true, false]);
  });
});
