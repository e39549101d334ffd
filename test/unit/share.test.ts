import { describe, expect, test } from 'vitest';
import { planSharing } from '../../functions/drain/share.js';
import type { PartitionState } from '../../functions/kernel/ports.js';
import type { Watermarks } from '../../functions/kernel/records.js';

const mark = (partition: number, end: number, logStart = 0): Watermarks => ({
  topic: 't',
  partition,
  logStart,
  end,
});
const state = (partition: number, s: Partial<PartitionState>): [string, PartitionState] => [
  `t~${partition}`,
  {
    topic: 't',
    partition,
    nextOffset: null,
    leaseOwner: null,
    leaseExpiresAt: 0,
    paused: false,
    version: 1,
    ...s,
  },
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

  test('a held partition is watched: taken once its lease lapses unchanged, left alone once its holder writes', () => {
    const watched = new Map();
    const candidates = [mark(0, 10), mark(1, 10), mark(2, 10)];
    const first = planSharing(
      candidates,
      new Map([
        state(0, { nextOffset: 0, leaseOwner: 'dead', leaseExpiresAt: now + 500 }),
        state(1, { nextOffset: 0, leaseOwner: 'renewing', leaseExpiresAt: now + 800 }),
        state(2, { nextOffset: 0, leaseOwner: 'committing', leaseExpiresAt: now + 9_000 }),
      ]),
      now,
      watched,
      2_000,
    );
    expect(first.take).toEqual([]);
    // Looked at again at the earliest expiry, or after the poll interval, whichever comes first.
    expect(first.waitUntil).toBe(now + 500);
    expect(first.remaining.map((m) => m.partition)).toEqual([0, 1, 2]);

    const later = now + 550;
    const second = planSharing(
      first.remaining,
      new Map([
        state(0, { nextOffset: 0, leaseOwner: 'dead', leaseExpiresAt: now + 500 }), // lapsed, unchanged
        state(1, { nextOffset: 0, leaseOwner: 'renewing', leaseExpiresAt: later + 800 }), // renewed
        state(2, { nextOffset: 3, leaseOwner: 'committing', leaseExpiresAt: now + 9_000, version: 2 }), // wrote
      ]),
      later,
      watched,
      2_000,
    );
    expect(second.take.map((m) => m.partition)).toEqual([0]);
    expect(second.remaining.map((m) => m.partition)).toEqual([0]);
    expect(second.waitUntil).toBeUndefined();
  });

  test('a held partition that has not changed yet is looked at again after the poll interval', () => {
    const plan = planSharing(
      [mark(0, 10)],
      new Map([state(0, { nextOffset: 0, leaseOwner: 'x', leaseExpiresAt: now + 60_000 })]),
      now,
      new Map(),
      2_000,
    );
    expect(plan.waitUntil).toBe(now + 2_000);
  });
});
