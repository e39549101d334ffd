/**
 * The drain's timers (budget, hard stop, lease renewal and give-up, share polling) under a fake clock:
 * exact instants, no sleeps, no wall time.
 */
import { describe, expect, test } from 'vitest';
import { ownedBy } from '../../functions/drain/assignment.js';
import { DrainError } from '../../functions/kernel/errors.js';
import { createMemoryLogger } from '../../functions/kernel/logger.js';
import type { KafkaRecord, Watermarks } from '../../functions/kernel/records.js';
import { testDrainOptions } from '../support/drain-options.js';
import { createFakeClock } from '../support/fake-clock.js';
import {
  createMemoryCheckpoints,
  createMemoryDeadLetters,
  createMemorySink,
  createMemorySource,
  record,
} from '../support/memory-ports.js';
import { runDrain } from '../support/run-drain.js';

const ttl = 1_200;

function setup(partitions: number, perPartition: number) {
  const clock = createFakeClock();
  const log = new Map<string, KafkaRecord[]>();
  for (let p = 0; p < partitions; p++) {
    log.set(
      `t~${p}`,
      Array.from({ length: perPartition }, (_, o) => record('t', p, o, { n: o })),
    );
  }
  const checkpoints = createMemoryCheckpoints(clock.now);
  const ports = {
    source: createMemorySource(log, { sleep: (ms) => clock.timers.sleep(ms) }),
    checkpoints,
    sink: createMemorySink(),
    deadLetters: createMemoryDeadLetters(),
  };
  const context = {
    logger: createMemoryLogger(),
    now: clock.now,
    timers: clock.timers,
    signal: new AbortController().signal,
  };
  return { clock, ports, checkpoints, context };
}

describe('the drain under a fake clock', () => {
  test('a write three times longer than the lease TTL keeps its lease: renewed every third of the TTL while it runs', async () => {
    const { clock, ports, checkpoints, context } = setup(1, 4);
    const renewedAt: number[] = [];
    const renew = checkpoints.renew.bind(checkpoints);
    checkpoints.renew = async (lease, ttlMs) => {
      renewedAt.push(clock.now());
      return renew(lease, ttlMs);
    };
    const write = ports.sink.write.bind(ports.sink);
    ports.sink.write = async (rows) => {
      await clock.timers.sleep(3 * ttl);
      return write(rows);
    };
    const summary = await clock.run(runDrain(ports, { ...testDrainOptions, leaseTtlMs: ttl }, context));
    expect(summary.partitions[0]!.skipped).toBeUndefined();
    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(4);
    // The write ends at 3,600, after the renewal due then.
    expect(renewedAt).toEqual([400, 800, 1_200, 1_600, 2_000, 2_400, 2_800, 3_200, 3_600]);
    expect(clock.pending()).toBe(0);
  });

  test('at the hard stop (budget plus settle time) a write that never returns is abandoned, uncommitted', async () => {
    const { clock, ports, checkpoints, context } = setup(1, 10);
    let abortedAt: number | undefined;
    ports.sink.write = (_rows, signal) => {
      signal?.addEventListener('abort', () => {
        abortedAt = clock.now();
      });
      return new Promise(() => {});
    };
    const options = { ...testDrainOptions, budgetMs: 1_000, settleMs: 300, leaseTtlMs: 60_000 };
    const summary = await clock.run(runDrain(ports, options, context));
    expect(abortedAt).toBe(1_300);
    expect(summary.stopReason).toBe('budget');
    // Only where it starts was committed (it had no checkpoint), nothing of the batch.
    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(0);
    expect(checkpoints.commits.filter((c) => c.nextOffset > c.fromOffset)).toEqual([]);
    expect(clock.pending()).toBe(0);
  });

  test('a lease Firestore will not renew is left at its expiry minus a sixth of the TTL: the write in flight abandoned', async () => {
    const { clock, ports, checkpoints, context } = setup(1, 10);
    checkpoints.renew = async () => {
      throw new DrainError('firestore: unavailable', { retriable: true });
    };
    let abortedAt: number | undefined;
    ports.sink.write = (_rows, signal) => {
      signal?.addEventListener('abort', () => {
        abortedAt = clock.now();
      });
      return new Promise(() => {});
    };
    const summary = await clock.run(
      runDrain(ports, { ...testDrainOptions, leaseTtlMs: ttl, budgetMs: 60_000 }, context),
    );
    // Leased at 0 with a TTL of 1.2 s: expiry at 1,200, given up at 1,000.
    expect(abortedAt).toBe(1_000);
    expect(summary.partitions[0]!.skipped).toBe('error');
    expect(summary.stopReason).toBe('caught_up');
    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(0);
  });

  test("a dead run's partition is taken 50 ms after its lease expires, not before and not at the budget", async () => {
    const { clock, ports, checkpoints, context } = setup(4, 2);
    const [dead] = (await ports.source.watermarks(['t'])).filter((m) => ownedBy([m], 0, 2).length === 0) as [
      Watermarks,
    ];
    await checkpoints.acquire(dead, 'a-dead-run', 700);
    const acquiredAt = new Map<number, number>();
    const acquire = checkpoints.acquire.bind(checkpoints);
    checkpoints.acquire = async (p, owner, ttlMs) => {
      const lease = await acquire(p, owner, ttlMs);
      if (lease !== undefined) acquiredAt.set(p.partition, clock.now());
      return lease;
    };
    const summary = await clock.run(
      runDrain(ports, { ...testDrainOptions, taskIndex: 0, taskCount: 2, budgetMs: 60_000 }, context),
    );
    expect(acquiredAt.get(dead.partition)).toBe(750);
    expect(summary.partitions.find((p) => p.partition === dead.partition)).toMatchObject({
      shared: true,
      read: 2,
    });
    expect(checkpoints.checkpoint(dead)).toBe(2);
    expect(summary.stopReason).toBe('caught_up');
  });

  test('a task slow to start keeps its share: free partitions of another task are taken only after the grace', async () => {
    const { clock, ports, checkpoints, context } = setup(4, 2);
    const options = { ...testDrainOptions, taskCount: 2, budgetMs: 60_000, shareGraceMs: 15_000 };
    const acquiredAt: number[] = [];
    const acquire = checkpoints.acquire.bind(checkpoints);
    checkpoints.acquire = async (p, owner, ttlMs) => {
      if (owner === 'task-0') acquiredAt.push(clock.now());
      return acquire(p, owner, ttlMs);
    };
    const first = runDrain(ports, { ...options, runId: 'task-0', taskIndex: 0 }, context);
    await clock.advance(5_000);
    // Task 1 starts 5 s late, within the grace: its share is still its own.
    const late = runDrain(ports, { ...options, runId: 'task-1', taskIndex: 1 }, context);
    const [a, b] = await clock.run(Promise.all([first, late]));
    expect(a.partitions.filter((p) => p.shared)).toEqual([]);
    expect(b.partitions.filter((p) => p.shared)).toEqual([]);
    expect(b.recordsRead).toBe(4);
    expect(a.recordsRead + b.recordsRead).toBe(8);
    // Task 0 took only its own partitions, at its start.
    expect(acquiredAt).toEqual([0, 0]);
  });

  test('a task that never starts: its free partitions are taken exactly when the grace ends', async () => {
    const { clock, ports, checkpoints, context } = setup(4, 2);
    const acquiredAt: number[] = [];
    const acquire = checkpoints.acquire.bind(checkpoints);
    checkpoints.acquire = async (p, owner, ttlMs) => {
      acquiredAt.push(clock.now());
      return acquire(p, owner, ttlMs);
    };
    const options = { ...testDrainOptions, taskCount: 2, budgetMs: 60_000, shareGraceMs: 15_000 };
    const summary = await clock.run(runDrain(ports, { ...options, runId: 'task-0', taskIndex: 0 }, context));
    expect(acquiredAt).toEqual([0, 0, 15_000, 15_000]);
    expect(summary.partitions.filter((p) => p.shared).map((p) => p.read)).toEqual([2, 2]);
    expect(summary.recordsRead).toBe(8);
  });
});
