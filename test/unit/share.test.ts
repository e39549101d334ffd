import { describe, expect, test } from 'vitest';
import { planSharing } from '../../functions/drain/share.js';
import type { PartitionState, Watermarks } from '../../functions/drain/types.js';

const mark = (partition: number, end: number, logStart = 0): Watermarks => ({
  topic: 't',
  partition,
  logStart,
  end,
});
const state = (partition: number, s: Partial<PartitionState>): [string, PartitionState] => [
  `t~${partition}`,
  { topic: 't', partition, nextOffset: null, leaseOwner: null, leaseExpiresAt: 0, paused: false, ...s },
];
const now = 1_000_000;

describe('planSharing', () => {
  test('free partitions whose records wait are taken, most waiting first; caught-up and paused ones are not', () => {
    const plan = planSharing(
      [mark(0, 10), mark(1, 100), mark(2, 50), mark(3, 50), mark(4, 7, 7)],
      new Map([
        state(0, { nextOffset: 5 }), // 5 waiting, released
        state(1, { nextOffset: 10, leaseOwner: 'x', leaseExpiresAt: now - 1 }), // 90 waiting, expired
        state(2, { nextOffset: 50 }), // caught up
        state(3, { nextOffset: 0, paused: true }), // paused by an operator
        // 4: never drained, but its log is empty (log start = end)
      ]),
      now,
      new Map(),
    );
    expect(plan.take.map((m) => m.partition)).toEqual([1, 0]);
    expect(plan.waitUntil).toBeUndefined();
  });

  test('a partition never drained is taken if its log holds records', () => {
    const plan = planSharing([mark(0, 10, 4)], new Map(), now, new Map());
    expect(plan.take.map((m) => m.partition)).toEqual([0]);
  });

  test('a held lease is waited for until it expires, unless its expiry moves (a live holder renews it)', () => {
    const watched = new Map<string, number>();
    const candidates = [mark(0, 10), mark(1, 10)];
    const first = planSharing(
      candidates,
      new Map([
        state(0, { nextOffset: 0, leaseOwner: 'dead', leaseExpiresAt: now + 500 }),
        state(1, { nextOffset: 0, leaseOwner: 'alive', leaseExpiresAt: now + 800 }),
      ]),
      now,
      watched,
    );
    expect(first.take).toEqual([]);
    expect(first.waitUntil).toBe(now + 500);
    expect(first.remaining.map((m) => m.partition)).toEqual([0, 1]);

    // At the first expiry: the dead lease has lapsed, the live one was renewed.
    const later = now + 550;
    const second = planSharing(
      first.remaining,
      new Map([
        state(0, { nextOffset: 0, leaseOwner: 'dead', leaseExpiresAt: now + 500 }),
        state(1, { nextOffset: 0, leaseOwner: 'alive', leaseExpiresAt: later + 800 }),
      ]),
      later,
      watched,
    );
    expect(second.take.map((m) => m.partition)).toEqual([0]);
    expect(second.remaining.map((m) => m.partition)).toEqual([0]);
    expect(second.waitUntil).toBeUndefined();
  });
});
