import { describe, expect, test } from 'vitest';
import { leaseGiveUpMarginMs, startLeaseKeeper } from '../../functions/drain/lease-keeper.js';
import { PartitionLease } from '../../functions/drain/partition-lease.js';
import { DrainError, FencedError } from '../../functions/kernel/errors.js';
import { createMemoryLogger } from '../../functions/kernel/logger.js';
import type { Checkpoints, Lease } from '../../functions/kernel/ports.js';
import type { PartitionRef } from '../../functions/kernel/records.js';
import { createFakeClock } from '../support/fake-clock.js';

const ttl = 1_200;

function leased(clock: ReturnType<typeof createFakeClock>, left: PartitionRef[]) {
  const lease: Lease = {
    topic: 't',
    partition: 0,
    owner: 'run',
    epoch: 1,
    nextOffset: 0,
    expiresAt: clock.now() + ttl,
  };
  const summary = {
    topic: 't',
    partition: 0,
    from: 0,
    to: 0,
    lag: 0,
    read: 0,
    rowsWritten: 0,
    deadLettered: 0,
  };
  return new PartitionLease(
    {
      lease,
      mark: { topic: 't', partition: 0, logStart: 0, end: 10 },
      summary,
      position: 0,
      at: clock.now(),
    },
    (p) => left.push(p),
  );
}

function keep(entry: PartitionLease, renew: Checkpoints['renew'], clock: ReturnType<typeof createFakeClock>) {
  const logger = createMemoryLogger();
  const stop = startLeaseKeeper(
    () => [entry],
    { checkpoints: { renew } as Checkpoints },
    { leaseTtlMs: ttl, logger, now: clock.now },
    clock.timers,
  );
  return { stop, logger };
}

describe('the lease keeper, under a fake clock', () => {
  test('renews every third of the TTL, and a lease renewed in time is never given up', async () => {
    const clock = createFakeClock();
    const left: PartitionRef[] = [];
    const entry = leased(clock, left);
    const renewedAt: number[] = [];
    const { stop } = keep(
      entry,
      async (lease) => {
        renewedAt.push(clock.now());
        return { ...lease, expiresAt: clock.now() + ttl };
      },
      clock,
    );
    await clock.advance(2_000);
    stop();
    expect(renewedAt).toEqual([400, 800, 1_200, 1_600, 2_000]);
    expect(entry.done).toBe(false);
    expect(entry.lease.expiresAt).toBe(2_000 + ttl);
    expect(clock.pending()).toBe(0);
  });

  test('a lease that cannot be renewed is given up at its expiry minus a sixth of the TTL, not a moment before', async () => {
    const clock = createFakeClock();
    const left: PartitionRef[] = [];
    const entry = leased(clock, left);
    const tried: number[] = [];
    const { stop } = keep(
      entry,
      async () => {
        tried.push(clock.now());
        throw new DrainError('firestore: deadline exceeded', { retriable: true });
      },
      clock,
    );
    expect(leaseGiveUpMarginMs(ttl)).toBe(200);
    await clock.advance(ttl - 200 - 1);
    expect(entry.done).toBe(false);
    expect(entry.abandoned.aborted).toBe(false);
    await clock.advance(1);
    expect(entry.done).toBe(true);
    expect(entry.abandoned.aborted).toBe(true);
    expect(entry.summary.skipped).toBe('error');
    expect(left).toEqual([entry.lease]);
    // Tried at a third of the TTL, and again a third later; nothing after the partition was left.
    expect(tried).toEqual([400, 800]);
    await clock.advance(5_000);
    expect(tried).toEqual([400, 800]);
    stop();
  });

  test('a renewal answered with a fence leaves the partition at once, as fenced', async () => {
    const clock = createFakeClock();
    const left: PartitionRef[] = [];
    const entry = leased(clock, left);
    const { stop, logger } = keep(
      entry,
      async () => {
        throw new FencedError('epoch moved');
      },
      clock,
    );
    await clock.advance(399);
    expect(entry.done).toBe(false);
    await clock.advance(1);
    expect(entry.done).toBe(true);
    expect(entry.summary.skipped).toBe('fenced');
    expect(left).toHaveLength(1);
    expect(logger.lines.map((l) => l.message)).toContain('lease lost at renewal');
    stop();
  });

  test('a run that was frozen past its lease expiry leaves the partition as fenced: someone else may hold it', async () => {
    const clock = createFakeClock();
    const left: PartitionRef[] = [];
    const entry = leased(clock, left);
    const renewals: number[] = [];
    const { stop, logger } = keep(
      entry,
      async (lease) => {
        renewals.push(clock.now());
        return lease;
      },
      clock,
    );
    // Frozen: the process did not run while its lease ran out; the first look after it sees it expired.
    entry.advance({ ...entry.lease, expiresAt: clock.now() + 50 }, entry.position, entry.lastRenewedAt);
    await clock.advance(100);
    expect(entry.done).toBe(true);
    expect(entry.summary.skipped).toBe('fenced');
    expect(renewals).toEqual([]);
    expect(logger.lines.map((l) => l.message)).toContain(
      'the lease expired while this run was not running; the partition is left to whoever holds it',
    );
    stop();
  });
});

describe('a partition lease', () => {
  test('leaving happens once: it aborts the write in flight and tells the reader once', () => {
    const clock = createFakeClock();
    const left: PartitionRef[] = [];
    const entry = leased(clock, left);
    entry.advance({ ...entry.lease, expiresAt: 5_000 }, 4, 10);
    expect(entry).toMatchObject({ position: 4, lastRenewedAt: 10, lag: 6 });
    expect(entry.summary).toMatchObject({ to: 4, lag: 6 });
    entry.leave({ skipped: 'fenced' });
    entry.leave({ skipped: 'error', waiting: 'late' });
    expect(entry.summary.skipped).toBe('fenced');
    expect(entry.summary.waiting).toBeUndefined();
    expect(left).toHaveLength(1);
    expect(entry.abandoned.aborted).toBe(true);
    // A renewal answered after the partition was left changes nothing.
    entry.renewed({ ...entry.lease, expiresAt: 99_999 });
    expect(entry.lease.expiresAt).toBe(5_000);
  });
});
