/**
 * Each phase of a run driven on its own, with in-memory ports and the fake clock: the lease phase
 * (leasePartition), the batch phase (drainFetched) and the release phase (releaseAll).
 */
import { describe, expect, test } from 'vitest';
import { drainFetched } from '../../functions/drain/batch-phase.js';
import { leasePartition } from '../../functions/drain/lease-phase.js';
import { releaseAll } from '../../functions/drain/release-phase.js';
import { createDrainRun, type DrainRun } from '../../functions/drain/run-state.js';
import { FencedError, PartitionWaitsError } from '../../functions/kernel/errors.js';
import { createMemoryLogger } from '../../functions/kernel/logger.js';
import type { BatchToWrite, Lease, Recovery, Writer, WrittenBatch } from '../../functions/kernel/ports.js';
import type { FetchedBatch, KafkaRecord, Watermarks } from '../../functions/kernel/records.js';
import { testDrainOptions } from '../support/drain-options.js';
import { createFakeClock } from '../support/fake-clock.js';
import {
  createMemoryAlerts,
  createMemoryCheckpoints,
  createMemorySource,
  record,
} from '../support/memory-ports.js';

const mark: Watermarks = { topic: 't', partition: 0, logStart: 0, end: 10 };
const log = () => new Map([['t~0', Array.from({ length: 10 }, (_, o) => record('t', 0, o, { n: o }))]]);

/** A writer that writes nothing and says so, and records what the phases asked of it. */
function recordingWriter(write?: (batch: BatchToWrite) => Promise<WrittenBatch>) {
  const asked: string[] = [];
  const writer: Writer & { asked: string[]; recovery: Recovery } = {
    asked,
    recovery: {},
    async recover(lease) {
      asked.push(`recover@${lease.epoch}`);
      return writer.recovery;
    },
    async begin(_lease, from, end) {
      asked.push(`begin ${from}-${end}`);
    },
    async write(batch) {
      asked.push(`write ${batch.fromOffset}-${batch.nextOffset}`);
      if (write !== undefined) return write(batch);
      return { rows: batch.records.length, deadLetters: 0, tombstones: 0 };
    },
  };
  return writer;
}

/** What an earlier run left: the partition's checkpoint at `offset`, its lease given back. */
async function checkpointAt(
  checkpoints: ReturnType<typeof createMemoryCheckpoints>,
  ref: Watermarks,
  offset: number,
) {
  const lease = (await checkpoints.acquire(ref, 'an-earlier-run', 60_000))!;
  const moved = await checkpoints.commit(
    {
      lease,
      fromOffset: offset,
      nextOffset: offset,
      records: 0,
      rows: 0,
      deadLetters: 0,
      lastRecordTimestamp: null,
    },
    60_000,
  );
  await checkpoints.release(moved);
  checkpoints.commits.length = 0;
}

/** A run about to drive one phase; its partition has a checkpoint at 0 unless `checkpoint` says otherwise. */
async function phaseRun(writer: Writer = recordingWriter(), options = {}, checkpoint: number | null = 0) {
  const clock = createFakeClock(1_700_000_000_000);
  const checkpoints = createMemoryCheckpoints(clock.now);
  if (checkpoint !== null) await checkpointAt(checkpoints, mark, checkpoint);
  const alerts = createMemoryAlerts();
  const run = createDrainRun(
    {
      source: createMemorySource(log(), { sleep: (ms) => clock.timers.sleep(ms) }),
      checkpoints,
      writer,
      alerts,
    },
    { ...testDrainOptions, ...options },
    {
      logger: createMemoryLogger(),
      now: clock.now,
      timers: clock.timers,
      signal: new AbortController().signal,
    },
  );
  return { run, clock, checkpoints, alerts };
}

/** A leased partition, ready for its batches (the lease phase run first). */
async function leased(run: DrainRun) {
  const position = await leasePartition(run, mark, false);
  const entry = run.record.partitions.get('t~0')!;
  return { position, entry };
}

function fetched(
  from: number,
  records: KafkaRecord[],
  nextOffset = (records.at(-1)?.offset ?? from - 1) + 1,
) {
  return { topic: 't', partition: 0, fromOffset: from, records, nextOffset } satisfies FetchedBatch;
}

describe('the lease phase', () => {
  test('a partition leased elsewhere is not read; its line says where it stands and what waits', async () => {
    const { run, checkpoints } = await phaseRun();
    const other = (await checkpoints.acquire(mark, 'another-run', 60_000))!;
    await checkpoints.commit(
      {
        lease: other,
        fromOffset: 0,
        nextOffset: 4,
        records: 4,
        rows: 4,
        deadLetters: 0,
        lastRecordTimestamp: null,
      },
      60_000,
    );
    expect(await leasePartition(run, mark, false)).toBeUndefined();
    const summary = run.record.summary(run.options, { stopReason: 'caught_up', durationMs: 0 });
    expect(summary.partitions).toEqual([
      expect.objectContaining({ skipped: 'leased_elsewhere', from: 4, lag: 6 }),
    ]);
    expect(run.record.partitions.size).toBe(0);
  });

  test('a paused partition is released at once and not read', async () => {
    const writer = recordingWriter();
    const { run, checkpoints } = await phaseRun(writer);
    const acquire = checkpoints.acquire.bind(checkpoints);
    checkpoints.acquire = async (...args) => {
      const lease = await acquire(...args);
      return lease && { ...lease, paused: true };
    };
    expect(await leasePartition(run, mark, false)).toBeUndefined();
    expect(checkpoints.partitions.get('t~0')!.leaseOwner).toBeNull();
    expect(writer.asked).toEqual([]);
  });

  test('a partition without a checkpoint starts at the log start, pinned there: recovered, begun, read from there', async () => {
    const writer = recordingWriter();
    const { run, checkpoints } = await phaseRun(writer, {}, null);
    const { position, entry } = await leased(run);
    expect(position).toEqual({ topic: 't', partition: 0, offset: 0 });
    expect(writer.asked).toEqual(['recover@1', 'begin 0-10']);
    // The start is resolved once and kept: a later run must not start anywhere else.
    expect(checkpoints.commits.map((c) => [c.fromOffset, c.nextOffset])).toEqual([[0, 0]]);
    expect(entry.position).toBe(0);
    expect(entry.lag).toBe(10);
  });

  test('a flush an earlier run recorded is committed before anything is read', async () => {
    const writer = recordingWriter();
    writer.recovery = {
      commit: {
        streams: ['s1'],
        fromOffset: 0,
        nextOffset: 6,
        records: 6,
        rows: 6,
        deadLetters: 0,
        tombstones: 0,
        lastRecordTimestamp: null,
      },
    };
    const { run, checkpoints } = await phaseRun(writer);
    const { position, entry } = await leased(run);
    expect(writer.asked).toEqual(['recover@2', 'begin 6-10']);
    expect(checkpoints.checkpoint(mark)).toBe(6);
    expect(position?.offset).toBe(6);
    expect(entry.position).toBe(6);
    expect(run.record.totals.commits).toBe(1);
  });

  test('a recovery that fails leaves the partition waiting, saying why; nothing is read or committed', async () => {
    const writer = recordingWriter();
    writer.recover = async (lease: Lease) => {
      throw new Error(`streams of epoch ${lease.epoch} unreadable`);
    };
    const { run, checkpoints } = await phaseRun(writer);
    const { position, entry } = await leased(run);
    expect(position).toBeUndefined();
    expect(entry.done).toBe(true);
    expect(entry.summary.waiting).toMatch(/could not be finished: streams of epoch 2 unreadable/);
    expect(checkpoints.commits).toEqual([]);
  });

  test.each([
    ['skip', 5, { offset: 5 }],
    ['fail', null, undefined],
  ] as const)('a checkpoint below the log start, policy %s: the lost range committed as lost, or the partition left', async (policy, checkpoint, position) => {
    const { run, checkpoints } = await phaseRun(recordingWriter(), { retentionGapPolicy: policy }, 2);
    const gap = { ...mark, logStart: 5 };
    const found = await leasePartition(run, gap, false);
    expect(found === undefined ? undefined : { offset: found.offset }).toEqual(position);
    expect(checkpoints.checkpoint(gap)).toBe(checkpoint ?? 2);
    expect(checkpoints.commits.filter((c) => c.lost)).toHaveLength(policy === 'skip' ? 1 : 0);
    expect(run.record.partitions.get('t~0')!.lost).toEqual({ from: 2, to: 5, skipped: policy === 'skip' });
  });

  test('a partition with nothing new costs the lease and no read: it is left at once', async () => {
    const { run } = await phaseRun(recordingWriter(), {}, 10);
    const { position, entry } = await leased(run);
    expect(position).toBeUndefined();
    expect(entry.done).toBe(true);
    expect(entry.summary.skipped).toBeUndefined();
  });
});

describe('the batch phase', () => {
  test('a batch is written and then committed, and counted; the next one goes on from its checkpoint', async () => {
    const writer = recordingWriter();
    const { run, checkpoints } = await phaseRun(writer);
    const { entry } = await leased(run);
    await drainFetched(run, entry, fetched(0, log().get('t~0')!.slice(0, 4)));
    expect(writer.asked.filter((a) => a.startsWith('write'))).toEqual(['write 0-4']);
    expect(checkpoints.commits.map((c) => [c.fromOffset, c.nextOffset])).toEqual([[0, 4]]);
    await drainFetched(run, entry, fetched(4, log().get('t~0')!.slice(4)));
    expect(writer.asked.filter((a) => a.startsWith('write'))).toEqual(['write 0-4', 'write 4-10']);
    expect(checkpoints.commits.map((c) => [c.fromOffset, c.nextOffset])).toEqual([
      [0, 4],
      [4, 10],
    ]);
    expect(entry.position).toBe(10);
    expect(run.record.totals).toMatchObject({ recordsRead: 10, rowsWritten: 10, commits: 2 });
    expect(entry.summary).toMatchObject({ from: 0, to: 10, read: 10, rowsWritten: 10, lag: 0 });
  });

  test('a fetch that does not start at the checkpoint (an earlier batch failed) leaves the partition, writing nothing', async () => {
    const writer = recordingWriter();
    const { run, checkpoints } = await phaseRun(writer);
    const { entry } = await leased(run);
    await drainFetched(run, entry, fetched(4, log().get('t~0')!.slice(4)));
    expect(entry.done).toBe(true);
    expect(writer.asked.filter((a) => a.startsWith('write'))).toEqual([]);
    expect(checkpoints.commits.filter((c) => c.nextOffset > c.fromOffset)).toEqual([]);
  });

  test('offsets with no records (compaction, markers) are committed past, with no write', async () => {
    const writer = recordingWriter();
    const { run, checkpoints } = await phaseRun(writer);
    const { entry } = await leased(run);
    await drainFetched(run, entry, fetched(0, [], 7));
    expect(writer.asked.filter((a) => a.startsWith('write'))).toEqual([]);
    expect(checkpoints.checkpoint(mark)).toBe(7);
    expect(entry.position).toBe(7);
  });

  test.each([
    ['a lost lease', () => new FencedError('epoch moved on'), { skipped: 'fenced' }],
    [
      'a partition that must wait',
      () => new PartitionWaitsError('registry unreachable'),
      { waiting: 'registry unreachable' },
    ],
  ] as const)('%s: the partition is left, its checkpoint where it was, and the run goes on', async (_what, error, line) => {
    const { run, checkpoints } = await phaseRun(
      recordingWriter(async () => {
        throw error();
      }),
    );
    const { entry } = await leased(run);
    await drainFetched(run, entry, fetched(0, log().get('t~0')!));
    expect(entry.done).toBe(true);
    expect(entry.summary).toMatchObject(line);
    expect(checkpoints.checkpoint(mark)).toBe(0);
  });

  test('a write that fails otherwise fails the run: the partition is left with an error, nothing committed', async () => {
    const { run, checkpoints } = await phaseRun(
      recordingWriter(async () => {
        throw new Error('BigQuery refused the batch');
      }),
    );
    const { entry } = await leased(run);
    await expect(drainFetched(run, entry, fetched(0, log().get('t~0')!))).rejects.toThrow('refused');
    expect(entry.summary.skipped).toBe('error');
    expect(checkpoints.checkpoint(mark)).toBe(0);
  });

  test('at the hard stop a write still on the wire is abandoned, uncommitted', async () => {
    const { run, clock, checkpoints } = await phaseRun(
      recordingWriter(() => new Promise(() => {})),
      { budgetMs: 1_000, settleMs: 500 },
    );
    const { entry } = await leased(run);
    const draining = drainFetched(run, entry, fetched(0, log().get('t~0')!));
    await clock.advance(1_499);
    expect(checkpoints.commits.filter((c) => c.nextOffset > c.fromOffset)).toEqual([]);
    let ended = false;
    void draining.then(() => {
      ended = true;
    });
    await clock.advance(0);
    expect(ended).toBe(false);
    await clock.advance(1);
    expect(ended).toBe(true);
    expect(checkpoints.checkpoint(mark)).toBe(0);
    run.stop.dispose();
  });
});

describe('the release phase', () => {
  test('every lease still held is released with its alert episodes; a lost one is not touched', async () => {
    const { run, checkpoints, alerts } = await phaseRun(recordingWriter(), {
      alertThresholds: { ...testDrainOptions.alertThresholds, backlogRecords: 5 },
    });
    const second: Watermarks = { ...mark, partition: 1 };
    await leasePartition(run, mark, false);
    await leasePartition(run, second, false);
    run.record.partitions.get('t~1')!.leave({ skipped: 'fenced' });
    await releaseAll(run);
    expect(checkpoints.partitions.get('t~0')!.leaseOwner).toBeNull();
    // A fenced partition's lease is not this run's to give back (whoever took it over holds it): untouched.
    expect(checkpoints.partitions.get('t~1')!.leaseOwner).toBe(run.options.runId);
    // t~0 has 10 records waiting (nothing was read), over the threshold of 5: one backlog alert opens.
    expect(alerts.sent.map((a) => [a.partition, a.kind, a.state])).toEqual([[0, 'backlog', 'open']]);
    expect(run.record.totals.alerts).toBe(1);
    run.stop.dispose();
  });
});
