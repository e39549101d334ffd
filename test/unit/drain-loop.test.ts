import { describe, expect, test } from 'vitest';
import { ownedBy } from '../../functions/drain/assignment.js';
import { DrainError } from '../../functions/kernel/errors.js';
import { createMemoryLogger } from '../../functions/kernel/logger.js';
import type { KafkaRecord, Watermarks } from '../../functions/kernel/records.js';
import type { Timers } from '../../functions/kernel/timers.js';
import { testDrainOptions } from '../support/drain-options.js';
import { createFakeClock } from '../support/fake-clock.js';
import {
  createMemoryAlerts,
  createMemoryCheckpoints,
  createMemoryDeadLetters,
  createMemorySink,
  createMemorySource,
  record,
} from '../support/memory-ports.js';
import { type DrainOptions, runDrain as drain } from '../support/run-drain.js';

const options: DrainOptions = { ...testDrainOptions };

function logOf(
  partitions: number,
  perPartition: number,
  value = (o: number) => ({ n: o }) as unknown,
): Map<string, KafkaRecord[]> {
  const log = new Map<string, KafkaRecord[]>();
  for (let p = 0; p < partitions; p++) {
    log.set(
      `t~${p}`,
      Array.from({ length: perPartition }, (_, o) => record('t', p, o, value(o))),
    );
  }
  return log;
}

type FakeClock = ReturnType<typeof createFakeClock>;

function recordsPerCommit(checkpoints: ReturnType<typeof createMemoryCheckpoints>): number[] {
  return checkpoints.commits.filter((c) => c.records > 0).map((c) => c.records);
}
const clocks = new WeakMap<Timers, FakeClock>();

/** Every run of these tests is on a fake clock (its context's timers): no sleeps, no wall time. */
function runDrain(...args: Parameters<typeof drain>) {
  const clock = clocks.get(args[2].timers!)!;
  return clock.run(drain(...args));
}

function setup(log: Map<string, KafkaRecord[]>, start = 1_700_000_000_000) {
  const clock = createFakeClock(start);
  clocks.set(clock.timers, clock);
  const checkpoints = createMemoryCheckpoints(clock.now);
  const sleep = (ms: number) => clock.timers.sleep(ms);
  const ports = {
    source: createMemorySource(log, { sleep }),
    checkpoints,
    sink: createMemorySink(),
    deadLetters: createMemoryDeadLetters(),
  };
  const logger = createMemoryLogger();
  const context = { logger, now: clock.now, timers: clock.timers, signal: new AbortController().signal };
  return { ports, checkpoints, logger, context, clock, sleep };
}

describe('runDrain', () => {
  test.each([
    ['skip', 0, 3],
    ['dead-letter', 3, 0],
  ] as const)('TOMBSTONES=%s: tombstones become %i dead letters, %i skipped and counted', async (policy, letters, skipped) => {
    const log = logOf(1, 9);
    const records = log.get('t~0')!;
    for (const at of [2, 5, 8]) records[at] = { ...records[at]!, value: null };
    const { ports, checkpoints, context } = setup(log);
    const summary = await runDrain(ports, { ...options, tombstones: policy }, context);

    expect(summary).toMatchObject({
      recordsRead: 9,
      rowsWritten: 6,
      deadLettered: letters,
      tombstonesSkipped: skipped,
    });
    expect(summary.partitions[0]!.tombstonesSkipped).toBe(skipped === 0 ? undefined : skipped);
    expect(ports.deadLetters.letters.map((l) => l.kind)).toEqual(Array(letters).fill('decode'));
    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(9);
    const counted = checkpoints.commits.reduce((n, c) => n + (c.tombstones ?? 0), 0);
    expect(counted).toBe(skipped);
  });

  test('drains every partition to the end seen at start, in offset order, and stops caught_up', async () => {
    const { ports, checkpoints, context } = setup(logOf(3, 10));
    const summary = await runDrain(ports, options, context);

    expect(summary.stopReason).toBe('caught_up');
    expect(summary.recordsRead).toBe(30);
    expect(summary.rowsWritten).toBe(30);
    for (let p = 0; p < 3; p++) {
      expect(checkpoints.checkpoint({ topic: 't', partition: p })).toBe(10);
      const offsets = ports.sink.rows.filter((r) => r.record.partition === p).map((r) => r.record.offset);
      expect(offsets).toEqual([...Array(10).keys()]);
    }
    // Batches of at most 4 records: 10 records per partition make 3 commits each, after one that
    // records where each partition starts (it had no checkpoint).
    expect(checkpoints.commits.filter((c) => c.nextOffset > c.fromOffset)).toHaveLength(9);
    expect(checkpoints.commits.filter((c) => c.nextOffset === c.fromOffset)).toHaveLength(3);
    expect([...checkpoints.partitions.values()].every((p) => p.leaseOwner === null)).toBe(true);
    expect(checkpoints.runs).toHaveLength(1);
  });

  test('a second run starts at the checkpoint and reads nothing twice', async () => {
    const log = logOf(1, 6);
    const { ports, context } = setup(log);
    await runDrain(ports, options, context);
    log.get('t~0')!.push(record('t', 0, 6, { n: 6 }), record('t', 0, 7, { n: 7 }));
    const second = await runDrain(ports, { ...options, runId: 'run-2' }, context);

    expect(second.partitions[0]).toMatchObject({ from: 6, to: 8, read: 2 });
    expect(ports.sink.rows.map((r) => r.record.offset)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  test('an idle partition costs no read at all', async () => {
    const { ports, context } = setup(new Map([['t~0', []]]));
    const summary = await runDrain(ports, options, context);
    expect(summary.stopReason).toBe('caught_up');
    expect(ports.source.opened()).toBe(0);
  });

  test('records that are not JSON objects become decode dead letters; the checkpoint passes them', async () => {
    const log = logOf(1, 5, (o) => (o === 2 ? '{not json' : o === 3 ? '[1,2]' : { n: o }));
    const { ports, checkpoints, context } = setup(log);
    const summary = await runDrain(ports, options, context);

    expect(summary).toMatchObject({ rowsWritten: 3, deadLettered: 2 });
    expect(ports.deadLetters.letters.map((l) => [l.record.offset, l.kind])).toEqual([
      [2, 'decode'],
      [3, 'decode'],
    ]);
    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(5);
  });

  test('rows the sink rejects become rejected dead letters', async () => {
    const { ports, context } = setup(logOf(1, 4));
    ports.sink = createMemorySink({
      reject: (row) => (row.record.offset === 1 ? 'invalid: amount' : undefined),
    });
    const summary = await runDrain(ports, options, context);
    expect(summary).toMatchObject({ rowsWritten: 3, deadLettered: 1 });
    expect(ports.deadLetters.letters[0]).toMatchObject({ kind: 'rejected', message: 'invalid: amount' });
  });

  test('a sink failure leaves the checkpoint where it was and ends the run with error', async () => {
    const { ports, checkpoints, context } = setup(logOf(1, 10));
    ports.sink.failWith(new DrainError('bigquery down', { retriable: false }));
    const summary = await runDrain(ports, options, context);

    expect(summary.stopReason).toBe('error');
    expect(summary.error).toContain('bigquery down');
    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(0);
    expect(checkpoints.commits.filter((c) => c.nextOffset > c.fromOffset)).toHaveLength(0);
    expect(checkpoints.partitions.get('t~0')!.leaseOwner).toBeNull();
  });

  test('a dead-letter publish failure leaves the checkpoint where it was', async () => {
    const { ports, checkpoints, context } = setup(logOf(1, 4, (o) => (o === 1 ? 'bad' : { n: o })));
    ports.deadLetters.failWith(new DrainError('pubsub down', { retriable: false }));
    const summary = await runDrain(ports, options, context);

    expect(summary.stopReason).toBe('error');
    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(0);
  });

  test('a commit under a stale epoch is refused and the run stops touching that partition', async () => {
    const { ports, checkpoints, context } = setup(logOf(2, 12));
    const realWrite = ports.sink.write.bind(ports.sink);
    let taken = false;
    ports.sink.write = async (rows) => {
      if (!taken && rows[0]!.record.partition === 0 && rows[0]!.record.offset === 4) {
        taken = true;
        // Another run takes partition 0 over (its lease expired while this one was paused, say).
        const p = checkpoints.partitions.get('t~0')!;
        p.leaseOwner = 'other-run';
        p.leaseEpoch += 1;
      }
      return realWrite(rows);
    };
    const summary = await runDrain(ports, options, context);

    const p0 = summary.partitions.find((p) => p.partition === 0)!;
    expect(p0.skipped).toBe('fenced');
    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(4);
    expect(
      checkpoints.commits.filter((c) => c.lease.partition === 0 && c.nextOffset > c.fromOffset),
    ).toHaveLength(1);
    // The other partition is drained as usual, and the taken-over lease is left to its new owner.
    expect(checkpoints.checkpoint({ topic: 't', partition: 1 })).toBe(12);
    expect(checkpoints.partitions.get('t~0')!.leaseOwner).toBe('other-run');
  });

  test('a partition leased by a live run elsewhere is skipped', async () => {
    const { ports, checkpoints, context } = setup(logOf(1, 3));
    await checkpoints.acquire({ topic: 't', partition: 0 }, 'someone-else', 60_000);
    const summary = await runDrain(ports, options, context);
    expect(summary.partitions[0]!.skipped).toBe('leased_elsewhere');
    expect(ports.sink.rows).toHaveLength(0);
    // Never committed: where it stands is not known.
    expect(summary.partitions[0]).toMatchObject({ from: null, lag: null });
  });

  test('a partition held elsewhere still reports its checkpoint and the records waiting behind it', async () => {
    const { ports, checkpoints, context } = setup(logOf(1, 10));
    const held = await checkpoints.acquire({ topic: 't', partition: 0 }, 'a-run-that-died', 60_000);
    await checkpoints.commit(
      {
        lease: held!,
        fromOffset: 0,
        nextOffset: 4,
        records: 4,
        rows: 4,
        deadLetters: 0,
        lastRecordTimestamp: 1,
      },
      60_000,
    );
    const summary = await runDrain(ports, options, context);
    expect(summary.partitions[0]).toMatchObject({ skipped: 'leased_elsewhere', from: 4, to: 4, lag: 6 });
    expect(summary.lag).toBe(6);
    expect(summary.stopReason).toBe('caught_up');
  });

  test('the budget stops fetching, commits what is durable and releases the leases', async () => {
    const { ports, checkpoints, context, clock, sleep } = setup(logOf(1, 10_000));
    const realWrite = ports.sink.write.bind(ports.sink);
    ports.sink.write = async (rows) => {
      await sleep(10);
      return realWrite(rows);
    };
    const started = clock.now();
    const summary = await runDrain(ports, { ...options, budgetMs: 300 }, context);

    expect(summary.stopReason).toBe('budget');
    // The batch in flight at the budget settles (one more write of 10 ms); nothing waits for the hard stop.
    expect(clock.now() - started).toBeGreaterThanOrEqual(300);
    expect(clock.now() - started).toBeLessThanOrEqual(320);
    const checkpoint = checkpoints.checkpoint({ topic: 't', partition: 0 })!;
    expect(checkpoint).toBeGreaterThan(0);
    expect(checkpoint).toBeLessThan(10_000);
    expect(ports.sink.rows).toHaveLength(checkpoint);
    expect(summary.partitions[0]!.lag).toBe(10_000 - checkpoint);
    expect(summary.lag).toBe(10_000 - checkpoint);
    expect(checkpoints.partitions.get('t~0')!.leaseOwner).toBeNull();
  });

  test('the signal stops the run with stopReason signal after the batch in flight is committed', async () => {
    const { ports, checkpoints, context } = setup(logOf(1, 10_000));
    const shutdown = new AbortController();
    const realWrite = ports.sink.write.bind(ports.sink);
    let writes = 0;
    ports.sink.write = async (rows) => {
      if (++writes === 2) shutdown.abort();
      return realWrite(rows);
    };
    const summary = await runDrain(ports, options, { ...context, signal: shutdown.signal });

    expect(summary.stopReason).toBe('signal');
    // The second batch was in flight when the signal came: it is settled and committed; no other starts,
    // not even the rest of the same fetch.
    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(8);
    expect(ports.sink.rows).toHaveLength(8);
  });

  test('a checkpoint below the log start is a retention gap: the fail policy leaves the partition alone', async () => {
    const log = logOf(1, 10);
    const { ports, checkpoints, logger, context } = setup(log);
    await runDrain(ports, { ...options, batchMaxRecords: 100 }, context);
    log.set(
      't~0',
      Array.from({ length: 10 }, (_, i) => record('t', 0, 20 + i, { n: 20 + i })),
    );
    const summary = await runDrain(ports, { ...options, runId: 'run-2' }, context);

    expect(summary.partitions[0]!.skipped).toBe('error');
    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(10);
    expect(logger.lines.find((l) => l.kind === 'retention_gap')).toMatchObject({ lostFrom: 10, lostTo: 20 });
  });

  test('the skip policy records the lost range and continues from the log start', async () => {
    const log = logOf(1, 10);
    const { ports, checkpoints, context } = setup(log);
    await runDrain(ports, { ...options, batchMaxRecords: 100 }, context);
    log.set(
      't~0',
      Array.from({ length: 10 }, (_, i) => record('t', 0, 20 + i, { n: 20 + i })),
    );
    await runDrain(ports, { ...options, runId: 'run-2', retentionGapPolicy: 'skip' }, context);

    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(30);
    expect(checkpoints.commits.find((c) => c.fromOffset === 10)).toMatchObject({ nextOffset: 20, rows: 0 });
  });

  test("a task drains its own share first, then the other tasks' partitions whose records wait", async () => {
    const { ports, checkpoints, context } = setup(logOf(8, 3));
    const a = await runDrain(ports, { ...options, taskIndex: 0, taskCount: 2 }, context);
    const own = a.partitions.filter((p) => p.shared === undefined).map((p) => p.partition);
    const shared = a.partitions.filter((p) => p.shared === true).map((p) => p.partition);
    expect(own.length).toBeGreaterThan(0);
    expect(shared.length).toBeGreaterThan(0);
    expect([...own, ...shared].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(a).toMatchObject({ stopReason: 'caught_up', recordsRead: 24, rowsWritten: 24 });
    for (let p = 0; p < 8; p++) expect(checkpoints.checkpoint({ topic: 't', partition: p })).toBe(3);
    // Its own share came first: every commit of a shared partition follows every commit of its own.
    const order = checkpoints.commits.map((c) => own.includes(c.lease.partition));
    expect(order.lastIndexOf(true)).toBeLessThan(order.indexOf(false));
    // The other task, coming late, finds nothing waiting and touches nothing.
    const b = await runDrain(ports, { ...options, runId: 'r2', taskIndex: 1, taskCount: 2 }, context);
    expect(b).toMatchObject({ recordsRead: 0, commits: 0 });
    expect(b.partitions.filter((p) => p.shared)).toEqual([]);
  });

  test("a partition held by a live run is left to it; a dead run's partition is taken once its lease expires", async () => {
    const { ports, checkpoints, context, clock } = setup(logOf(8, 3));
    // Task 1's run: it leased two of its partitions; it keeps renewing one (alive) and dies on the other.
    const [live, dead] = (await ports.source.watermarks(['t']))
      .filter((m) => !ownedBy([m], 0, 2).length)
      .slice(0, 2) as [Watermarks, Watermarks];
    const liveLease = (await checkpoints.acquire(live, 'task-1', 400))!;
    await checkpoints.acquire(dead, 'task-1-dead', 400);
    const stopRenewing = clock.timers.every(100, () => void checkpoints.renew(liveLease, 400));
    try {
      const started = clock.now();
      const a = await runDrain(ports, { ...options, taskIndex: 0, taskCount: 2 }, context);
      expect(checkpoints.checkpoint(dead)).toBe(3);
      expect(checkpoints.checkpoint(live)).toBeNull();
      expect(a.partitions.find((p) => p.partition === dead.partition)).toMatchObject({
        shared: true,
        read: 3,
      });
      expect(a.partitions.find((p) => p.partition === live.partition)).toBeUndefined();
      expect(a.stopReason).toBe('caught_up');
      // It waited for the dead lease to expire, and not for the live one until its budget.
      expect(clock.now() - started).toBeLessThan(options.budgetMs);
    } finally {
      stopRenewing();
    }
  });

  test('a write slower than the lease TTL keeps its lease: renewals go on while it is in flight', async () => {
    const { ports, checkpoints, context, sleep } = setup(logOf(1, 4));
    const realWrite = ports.sink.write.bind(ports.sink);
    ports.sink.write = async (rows) => {
      await sleep(1_000);
      return realWrite(rows);
    };
    const summary = await runDrain(ports, { ...options, leaseTtlMs: 300 }, context);

    expect(summary.partitions[0]!.skipped).toBeUndefined();
    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(4);
  });

  test('at a hard stop a write that does not return is abandoned: the run ends, nothing is committed for it', async () => {
    const { ports, checkpoints, context, clock } = setup(logOf(1, 10));
    ports.sink.write = () => new Promise(() => {});
    const started = clock.now();
    const summary = await runDrain(ports, { ...options, budgetMs: 200, settleMs: 200 }, context);

    expect(summary.stopReason).toBe('budget');
    // Ended at the hard stop, budget plus settle time, to within one step of the clock.
    expect(clock.now() - started).toBeGreaterThanOrEqual(400);
    expect(clock.now() - started).toBeLessThanOrEqual(410);
    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(0);
    expect(checkpoints.partitions.get('t~0')!.leaseOwner).toBeNull();
  });

  test('a batch that fails is not skipped over by the batches fetched after it (no offset is lost)', async () => {
    const log = logOf(1, 10);
    const { ports, checkpoints, context, sleep } = setup(log);
    ports.source = createMemorySource(log, { fetchSize: 5, sleep }); // two fetches: [0, 5) and [5, 10)
    const realWrite = ports.sink.write.bind(ports.sink);
    let calls = 0;
    ports.sink.write = async (rows) => {
      if (calls++ === 0) {
        await sleep(50); // the next fetch is queued meanwhile
        throw new DrainError('BigQuery refused the batch', { retriable: false });
      }
      return realWrite(rows);
    };
    const summary = await runDrain(ports, options, context);

    expect(summary.stopReason).toBe('error');
    // [5, 10) must not be written and committed over the failed [0, 5).
    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(0);
    expect(ports.sink.rows).toEqual([]);
  });

  test('fetches that arrive while a partition writes are drained as one: batches as large as the limits, not a fetch', async () => {
    const log = logOf(1, 20);
    const { ports, checkpoints, context, sleep } = setup(log);
    ports.source = createMemorySource(log, { fetchSize: 2, sleep });
    const realWrite = ports.sink.write.bind(ports.sink);
    ports.sink.write = async (rows) => {
      await sleep(50); // the next fetches arrive meanwhile
      return realWrite(rows);
    };
    const summary = await runDrain(ports, { ...options, batchMaxRecords: 8 }, context);

    expect(summary.stopReason).toBe('caught_up');
    expect(ports.sink.rows.map((r) => r.record.offset)).toEqual([...Array(20).keys()]);
    // Fetches of 2 records: every batch is at the limit but the last, which ends at the end seen at start.
    expect(recordsPerCommit(checkpoints)).toEqual([8, 8, 4]);
    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(20);
  });

  test("a batch waits for its partition's next fetch while records before the end are to come, never past the limits", async () => {
    const log = logOf(2, 20);
    const { ports, checkpoints, context, sleep } = setup(log);
    // Fetches of 3 records do not divide batches of 8: what does not fit begins the next batch.
    ports.source = createMemorySource(log, { fetchSize: 3, sleep });
    const summary = await runDrain(ports, { ...options, batchMaxRecords: 8 }, context);

    expect(summary.stopReason).toBe('caught_up');
    for (const partition of [0, 1]) {
      const commits = checkpoints.commits.filter((c) => c.lease.partition === partition && c.records > 0);
      expect(commits.map((c) => c.records)).toEqual([8, 8, 4]);
      expect(commits.map((c) => [c.fromOffset, c.nextOffset])).toEqual([
        [0, 8],
        [8, 16],
        [16, 20],
      ]);
    }
    const written = ports.sink.rows.map((r) => `${r.record.partition}:${r.record.offset}`);
    expect(new Set(written).size).toBe(40);
  });

  test('a batch waiting for a next fetch that does not come is written after a moment', async () => {
    const log = logOf(1, 6);
    const { ports, checkpoints, context, clock, sleep } = setup(log);
    const source = createMemorySource(log, { fetchSize: 2, sleep });
    const open = source.open.bind(source);
    source.open = async (positions) => {
      const reader = await open(positions);
      const next = reader.next.bind(reader);
      let fetches = 0;
      // The broker is slow after the first fetch: the next one comes a second later.
      reader.next = async (signal) => {
        if (fetches++ === 1) await clock.timers.sleep(1_000, signal);
        return signal.aborted ? undefined : next(signal);
      };
      return reader;
    };
    ports.source = source;
    const started = clock.now();
    const committedAt: number[] = [];
    const commit = ports.checkpoints.commit.bind(ports.checkpoints);
    ports.checkpoints.commit = async (...args) => {
      committedAt.push(clock.now() - started);
      return commit(...args);
    };
    const summary = await runDrain(ports, { ...options, batchMaxRecords: 8 }, context);

    expect(summary.stopReason).toBe('caught_up');
    expect(ports.sink.rows.map((r) => r.record.offset)).toEqual([...Array(6).keys()]);
    // The first fetch's batch did not wait the second for its partition's next fetch.
    expect(recordsPerCommit(checkpoints)[0]).toBe(2);
    expect(committedAt[0]).toBeLessThan(1_000);
    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(6);
  });

  test('batches waiting to fill count towards the bytes in flight: past the bound they are written', async () => {
    const log = logOf(3, 12);
    const { ports, checkpoints, context, sleep } = setup(log);
    ports.source = createMemorySource(log, { fetchSize: 2, sleep });
    const summary = await runDrain(ports, { ...options, batchMaxRecords: 8, inFlightMaxBytes: 1 }, context);

    expect(summary.stopReason).toBe('caught_up');
    for (const partition of [0, 1, 2]) expect(checkpoints.checkpoint({ topic: 't', partition })).toBe(12);
    expect(ports.sink.rows).toHaveLength(36);
  });

  test('a lease that cannot be renewed is left before it can expire: the write in flight is abandoned, nothing committed', async () => {
    const { ports, checkpoints, context, clock } = setup(logOf(1, 4));
    const ttl = 600;
    let writeStartedAt = 0;
    let writeAbandonedAt = 0;
    ports.sink.write = (_rows, signal) => {
      writeStartedAt = clock.now();
      // A write that takes longer than the lease (it would still land, e.g. a slow MERGE).
      return new Promise((_resolve, reject) => {
        signal?.addEventListener('abort', () => {
          writeAbandonedAt = clock.now();
          reject(new Error('aborted'));
        });
      });
    };
    // Firestore stops answering: renewals never return.
    ports.checkpoints.renew = () => new Promise(() => {});
    let expiresAt = 0;
    const acquire = ports.checkpoints.acquire.bind(ports.checkpoints);
    ports.checkpoints.acquire = async (...args) => {
      const lease = await acquire(...args);
      expiresAt = lease?.expiresAt ?? 0;
      return lease;
    };
    const started = clock.now();
    const summary = await runDrain(ports, { ...options, leaseTtlMs: ttl, budgetMs: 10_000 }, context);

    expect(summary.partitions[0]!.skipped).toBe('error');
    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(0);
    expect(writeStartedAt).toBeGreaterThan(0);
    // Given up a sixth of the TTL before the lease's expiry, not after it; the run does not wait for the budget.
    expect(writeAbandonedAt).toBeGreaterThan(0);
    expect(writeAbandonedAt).toBe(expiresAt - ttl / 6);
    expect(clock.now() - started).toBeLessThan(5_000);
    expect(context.logger.lines).toContainEqual(
      expect.objectContaining({
        message: 'the lease could not be renewed in time; the partition is left before its lease can expire',
      }),
    );
  });

  test.each([
    [{ kind: 'earliest' } as const, [2, 2]],
    [{ kind: 'latest' } as const, [12, 12]],
    [{ kind: 'timestamp', timestamp: 1_700_000_000_000 + 7 } as const, [7, 7]],
    [{ kind: 'offsets', offsets: new Map([['t:1', 10]]) } as const, [2, 10]],
  ])('START_POSITION %o decides where a partition without a checkpoint starts', async (startPosition, expected) => {
    const log = new Map(
      [0, 1].map((p) => [`t~${p}`, Array.from({ length: 10 }, (_, i) => record('t', p, i + 2, { n: i }))]),
    );
    const { ports, context } = setup(log);
    const summary = await runDrain(ports, { ...options, startPosition }, context);
    expect(summary.partitions.map((p) => p.from)).toEqual(expected);
    for (const p of [0, 1]) {
      const first = ports.sink.rows.find((r) => r.record.partition === p)?.record.offset ?? 12;
      expect(first).toBe(expected[p]);
    }
  });

  test('START_POSITION never overrides an existing checkpoint, and latest is kept once resolved', async () => {
    const log = new Map([['t~0', Array.from({ length: 5 }, (_, i) => record('t', 0, i, { n: i }))]]);
    const { ports, checkpoints, context } = setup(log);
    await runDrain(ports, { ...options, startPosition: { kind: 'latest' } }, context);
    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(5);
    log.get('t~0')!.push(record('t', 0, 5, { n: 5 }));
    await runDrain(ports, { ...options, runId: 'run-2', startPosition: { kind: 'latest' } }, context);
    // The record produced between the runs is read: the second run starts at the checkpoint, not at latest.
    expect(ports.sink.rows.map((r) => r.record.offset)).toEqual([5]);
    await runDrain(ports, { ...options, runId: 'run-3', startPosition: { kind: 'earliest' } }, context);
    expect(ports.sink.rows.map((r) => r.record.offset)).toEqual([5]);
  });

  test('alerts are published once per episode across runs, and one that fails to publish goes out with the next run', async () => {
    const log = logOf(1, 3);
    const { ports: base, context, clock } = setup(log, 1_800_000_000_000);
    const alerts = createMemoryAlerts();
    const ports = { ...base, alerts };
    const thresholds = { ...options.alertThresholds, idleSeconds: 60 };
    const run = (runId: string) =>
      runDrain(ports, { ...options, runId, alertThresholds: thresholds }, context);

    await run('r1');
    await clock.advance(61_000);
    alerts.failWith(new Error('pubsub down'));
    const second = await run('r2');
    expect(second.alerts).toBe(1);
    expect(alerts.sent).toEqual([]);
    expect(context.logger.lines.find((l) => l.event === 'alert')).toMatchObject({
      severity: 'WARNING',
      kind: 'idle',
      state: 'open',
    });

    alerts.failWith(undefined);
    await clock.advance(10_000);
    const third = await run('r3');
    expect(third.alerts).toBe(0);
    expect(alerts.sent.map((a) => [a.kind, a.state])).toEqual([['idle', 'open']]);

    log.get('t~0')!.push(record('t', 0, 3, { n: 3 }));
    await clock.advance(10_000);
    await run('r4');
    expect(alerts.sent.map((a) => [a.kind, a.state])).toEqual([
      ['idle', 'open'],
      ['idle', 'resolved'],
    ]);
  });
});

describe('freshness and latency in the run summary', () => {
  /** A log whose records were produced `ageMs` before the run starts, one millisecond apart. */
  function agedLog(partitions: number, perPartition: number, ageMs: number, start: number) {
    const log = logOf(partitions, perPartition);
    for (const records of log.values()) {
      for (const r of records) (r as { timestamp: number }).timestamp = start - ageMs + r.offset;
    }
    return log;
  }
  const start = 1_700_000_000_000;

  test('drained to the end: freshness 0 everywhere; latency is commit time minus record time', async () => {
    const { ports, context } = setup(agedLog(2, 10, 3_600_000, start), start);
    const summary = await runDrain(ports, options, context);

    expect(summary.freshnessSeconds).toBe(0);
    expect(summary.partitions.map((p) => p.freshnessSeconds)).toEqual([0, 0]);
    expect(summary.latencyMs.count).toBe(20);
    // Records an hour old, committed on a fake clock that barely moves: about 3,600,000 ms each.
    expect(summary.latencyMs.p50! / 3_600_000).toBeCloseTo(1, 2);
    expect(summary.latencyMs.max).toBeGreaterThanOrEqual(3_600_000 - 20);
    expect(summary.partitions[0]!.latencyMs!.count).toBe(10);
  });

  test('a budget that leaves records waiting: the age of the record at the checkpoint, per partition and for the run', async () => {
    const { ports, context, clock, sleep } = setup(agedLog(1, 10_000, 3_600_000, start), start);
    const realWrite = ports.sink.write.bind(ports.sink);
    ports.sink.write = async (rows) => {
      await sleep(10);
      return realWrite(rows);
    };
    const summary = await runDrain(ports, { ...options, budgetMs: 300 }, context);

    expect(summary.stopReason).toBe('budget');
    const line = summary.partitions[0]!;
    expect(line.lag).toBeGreaterThan(0);
    // The record at the checkpoint was produced 3,600 s before the start (plus its offset in ms); the run
    // lasted about 0.3 s.
    const waiting = start - 3_600_000 + line.to!;
    expect(line.freshnessSeconds).toBe(Math.floor((clock.now() - waiting) / 1000));
    expect(summary.freshnessSeconds).toBe(line.freshnessSeconds);
    expect(summary.latencyMs.count).toBe(line.read);
  });

  test("a backward seek's replay is no outage: freshness counts from the record waiting behind the replay", async () => {
    // 10,000 records an hour old, drained; 10 new ones two minutes old arrive; an operator seeks back to 0.
    const log = agedLog(1, 10_000, 3_600_000, start);
    const { ports, checkpoints, context, clock, sleep } = setup(log, start);
    await runDrain(ports, options, context);
    for (let n = 10_000; n < 10_010; n++) {
      log.get('t~0')!.push(record('t', 0, n, { n }));
      (log.get('t~0')![n] as { timestamp: number }).timestamp = start - 120_000;
    }
    checkpoints.seek({ topic: 't', partition: 0 }, 0);
    const realWrite = ports.sink.write.bind(ports.sink);
    ports.sink.write = async (rows) => {
      await sleep(10);
      return realWrite(rows);
    };
    const summary = await runDrain(ports, { ...options, runId: 'run-2', budgetMs: 300 }, context);

    // The budget ends the run inside the replay: the hour-old records are not what it reports.
    const line = summary.partitions[0]!;
    expect(summary.stopReason).toBe('budget');
    expect(line.to).toBeLessThan(10_000);
    expect(line.replayUntil).toBe(10_000);
    expect(line.freshnessSeconds).toBe(Math.floor((clock.now() - (start - 120_000)) / 1000));
    expect(summary.freshnessSeconds).toBe(line.freshnessSeconds);
    // Nor do the replayed records count in latency.
    expect(summary.latencyMs.count).toBe(0);

    // A run that ends past the replay reports as any other.
    ports.sink.write = realWrite;
    const after = await runDrain(ports, { ...options, runId: 'run-3' }, context);
    expect(after.partitions[0]).toMatchObject({ lag: 0, freshnessSeconds: 0 });
    expect(after.partitions[0]!.replayUntil).toBeUndefined();
    expect(after.latencyMs.count).toBe(10);
  }, 30_000); // 10,000 records through the in-memory drain: 4 s alone, past 5 s on a loaded machine

  test('a paused partition and one held elsewhere count with the age of what waits at their checkpoints', async () => {
    const log = agedLog(3, 10, 600_000, start);
    const { ports, checkpoints, context } = setup(log, start);
    await runDrain(ports, options, context); // all three drained to 10
    for (const p of [0, 1, 2]) log.get(`t~${p}`)!.push(record('t', p, 10, { n: 10 }));
    for (const p of [0, 1, 2]) (log.get(`t~${p}`)![10] as { timestamp: number }).timestamp = start - 120_000;
    checkpoints.partitions.get('t~1')!.paused = true;
    Object.assign(checkpoints.partitions.get('t~2')!, { leaseOwner: 'other', leaseExpiresAt: start + 1e9 });

    const summary = await runDrain(ports, { ...options, runId: 'run-2' }, context);
    const byPartition = new Map(summary.partitions.map((p) => [p.partition, p]));
    expect(byPartition.get(0)).toMatchObject({ lag: 0, freshnessSeconds: 0 });
    expect(byPartition.get(1)).toMatchObject({ skipped: 'paused', to: 10, lag: 1, freshnessSeconds: 120 });
    expect(byPartition.get(2)).toMatchObject({
      skipped: 'leased_elsewhere',
      to: 10,
      lag: 1,
      freshnessSeconds: 120,
    });
    expect(summary.freshnessSeconds).toBe(120);
    expect(summary.latencyMs.count).toBe(1);
  });

  test('records that arrived during the run wait too: a caught-up partition is as fresh as its next record', async () => {
    const log = agedLog(1, 5, 1_000, start);
    const { ports, context } = setup(log, start);
    const source = ports.source;
    // A record appended after the run read its end offsets (and a minute old by its producer's clock).
    const watermarks = source.watermarks.bind(source);
    source.watermarks = async (topics) => {
      const marks = await watermarks(topics);
      log.get('t~0')!.push({ ...record('t', 0, 5, { n: 5 }), timestamp: start - 60_000 });
      return marks;
    };
    const summary = await runDrain(ports, options, context);
    expect(summary.partitions[0]).toMatchObject({ lag: 0, to: 5, freshnessSeconds: 60 });
  });

  test('records a seek made the run write again are left out of latency; a producer clock ahead counts as 0', async () => {
    const log = agedLog(1, 10, 5_000, start);
    const { ports, checkpoints, context } = setup(log, start);
    await runDrain(ports, options, context);
    checkpoints.seek({ topic: 't', partition: 0 }, 4);
    log.get('t~0')!.push({ ...record('t', 0, 10, { n: 10 }), timestamp: start + 3_600_000 });

    const summary = await runDrain(ports, { ...options, runId: 'run-2' }, context);
    expect(summary.recordsRead).toBe(7);
    expect(summary.latencyMs).toEqual({ count: 1, p50: 0, p99: 0, max: 0 });
  });

  test('a seek forward, then back: what was never drained is no replay, its latency counts (#78)', async () => {
    // 5 records drained; 15 more arrive; an operator seeks forward to 15 ([5, 15) never drained), then back
    // to 2: the replay of [2, 15) goes through records the tables never had.
    const log = agedLog(1, 5, 5_000, start);
    const { ports, checkpoints, context } = setup(log, start);
    await runDrain(ports, options, context);
    for (let n = 5; n < 20; n++)
      log.get('t~0')!.push({ ...record('t', 0, n, { n }), timestamp: start - 5_000 });
    checkpoints.seek({ topic: 't', partition: 0 }, 15);
    checkpoints.seek({ topic: 't', partition: 0 }, 2);

    const summary = await runDrain(ports, { ...options, runId: 'run-2' }, context);
    expect(summary.recordsRead).toBe(18);
    // [2, 5) is the replay; [5, 15) was never drained and [15, 20) is new: 15 records' latency.
    expect(summary.latencyMs.count).toBe(15);
  });

  test('the times of waiting records cannot be read: unknown, counted, and left out of the run figure', async () => {
    const log = agedLog(2, 10, 0, start);
    const { ports, checkpoints, context } = setup(log, start);
    await runDrain(ports, options, context);
    log.get('t~1')!.push(record('t', 1, 10, { n: 10 }));
    checkpoints.partitions.get('t~1')!.paused = true;
    ports.source.headTimestamps = async () => {
      throw new DrainError('kafka did not answer', { retriable: true });
    };
    const summary = await runDrain(ports, { ...options, runId: 'run-2' }, context);
    expect(summary.partitions.map((p) => p.freshnessSeconds)).toEqual([0, null]);
    expect(summary.freshnessSeconds).toBe(0);
    expect(summary.freshnessUnknown).toBe(1);
  });
});
