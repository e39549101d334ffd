/**
 * The storage-write protocol with in-memory ports: group commit, intents, and every way a recorded intent
 * is finished by the next holder of the lease, including a zombie that wakes after its flush was rolled
 * forward by another run.
 */

import { describe, expect, test } from 'vitest';
import { armCrashPoints } from '../../functions/kernel/crash-points.js';
import { DrainError } from '../../functions/kernel/errors.js';
import { createMemoryLogger } from '../../functions/kernel/logger.js';
import type { KafkaRecord } from '../../functions/kernel/records.js';
import { testDrainOptions } from '../support/drain-options.js';
import {
  createMemoryCheckpoints,
  createMemoryDeadLetters,
  createMemorySink,
  createMemorySource,
  createMemoryStreamSink,
  record,
} from '../support/memory-ports.js';
import { type DrainOptions, runDrain } from '../support/run-drain.js';

const options: DrainOptions = { ...testDrainOptions, partitionConcurrency: 4, tombstones: 'skip' };

function logOf(partitions: number, perPartition: number): Map<string, KafkaRecord[]> {
  const log = new Map<string, KafkaRecord[]>();
  for (let p = 0; p < partitions; p++) {
    log.set(
      `t~${p}`,
      Array.from({ length: perPartition }, (_, o) => record('t', p, o, o % 5 === 4 ? 'not json' : { n: o })),
    );
  }
  return log;
}

/** A world that outlives runs: Kafka, Firestore, BigQuery's streams and tables, Pub/Sub. */
function world(log: Map<string, KafkaRecord[]>) {
  const checkpoints = createMemoryCheckpoints(Date.now);
  const streams = createMemoryStreamSink();
  const deadLetters = createMemoryDeadLetters();
  /** One run; a crash point, when given, is armed for this run alone. */
  const run = async (runId: string, fault?: (point: string) => void, logger = createMemoryLogger()) => {
    armCrashPoints(fault);
    try {
      return await runDrain(
        { source: createMemorySource(log), checkpoints, sink: createMemorySink(), streams, deadLetters },
        { ...options, runId },
        { logger, now: Date.now, signal: new AbortController().signal },
      );
    } finally {
      armCrashPoints(undefined);
    }
  };
  /** Each offset of the log exactly once, in the table or the error table. */
  const exactlyOnce = () => {
    for (const [id, records] of log) {
      const partition = Number(id.split('~')[1]);
      const inTable = streams.table
        .filter((r) => r.record.partition === partition)
        .map((r) => r.record.offset);
      const inErrors = streams.errorTable
        .filter((l) => l.record.partition === partition)
        .map((l) => l.record.offset);
      expect([...inTable, ...inErrors].sort((a, b) => a - b)).toEqual(records.map((r) => r.offset));
    }
  };
  return { checkpoints, streams, deadLetters, run, exactlyOnce };
}

const crashAt = (point: string) => (at: string) => {
  if (at === point) throw new Error(`crash at ${point}`);
};

describe('storage-write: flushes, intents and their recovery', () => {
  test('the sink is warmed up (its client made) only in a run that has records to read, before the first flush', async () => {
    const w = world(logOf(2, 4));
    const prepare = w.streams.prepare.bind(w.streams);
    let warmedAtFirstFlush: number | undefined;
    w.streams.prepare = async (...args) => {
      warmedAtFirstFlush ??= w.streams.warmed;
      return prepare(...args);
    };
    expect((await w.run('run-1')).recordsRead).toBe(8);
    expect(warmedAtFirstFlush).toBeGreaterThan(0);
    const warmed = w.streams.warmed;
    expect((await w.run('run-2')).stopReason).toBe('caught_up');
    expect(w.streams.warmed).toBe(warmed); // an idle run: nothing to read, nothing made
  });

  test('drains every partition exactly once, rows and dead letters in one commit per flush, intents cleared', async () => {
    const w = world(logOf(3, 10));
    const summary = await w.run('run-1');
    expect(summary).toMatchObject({
      stopReason: 'caught_up',
      recordsRead: 30,
      rowsWritten: 24,
      deadLettered: 6,
    });
    w.exactlyOnce();
    for (let p = 0; p < 3; p++) expect(w.checkpoints.checkpoint({ topic: 't', partition: p })).toBe(10);
    expect([...w.checkpoints.partitions.values()].every((p) => (p.intent ?? null) === null)).toBe(true);
    // Every data commit names its streams in the ledger; partitions share flushes.
    const dataCommits = w.checkpoints.commits.filter((c) => c.nextOffset > c.fromOffset);
    expect(dataCommits.every((c) => (c.streams ?? []).length > 0)).toBe(true);
    const flushes = new Set(dataCommits.map((c) => c.streams!.join(',')));
    expect(flushes.size).toBeLessThan(dataCommits.length);
    // Pub/Sub still gets every dead letter (alerting, replay).
    expect(w.deadLetters.letters).toHaveLength(6);
  });

  test('rows BigQuery refuses become rejected dead letters; the rest of their flush lands and the checkpoints move', async () => {
    const w = world(logOf(2, 10));
    // As BigQuery refuses a row whose JSON column does not parse: offsets 3 and 8 of partition 1.
    w.streams.refuseRows((row) =>
      row.record.partition === 1 && [3, 8].includes(row.record.offset)
        ? 'Field j: JSON parsing error at line 1'
        : undefined,
    );
    const first = await w.run('run-1');
    expect(first).toMatchObject({
      stopReason: 'caught_up',
      recordsRead: 20,
      rowsWritten: 14,
      deadLettered: 6,
    });
    w.exactlyOnce();
    const rejected = w.streams.errorTable.filter((l) => l.kind === 'rejected');
    expect(rejected.map((l) => [l.record.partition, l.record.offset])).toEqual([
      [1, 3],
      [1, 8],
    ]);
    expect(rejected[0]!.message).toBe('Field j: JSON parsing error at line 1');
    // Pub/Sub carries them too, as every dead letter.
    expect(w.deadLetters.letters.filter((l) => l.kind === 'rejected')).toHaveLength(2);
    for (let p = 0; p < 2; p++) expect(w.checkpoints.checkpoint({ topic: 't', partition: p })).toBe(10);
    // The ledger counts them as dead letters, not rows: every offset of each range accounted for once.
    const ofPartition1 = w.checkpoints.commits.filter((c) => c.lease.partition === 1);
    expect(ofPartition1.reduce((n, c) => n + c.rows, 0)).toBe(6);
    expect(ofPartition1.reduce((n, c) => n + c.deadLetters, 0)).toBe(4);
    // Nothing is left waiting: the next run has nothing to do.
    const second = await w.run('run-2');
    expect(second).toMatchObject({ stopReason: 'caught_up', recordsRead: 0 });
  });

  test.each([
    'after-intent',
    'after-batch-commit',
  ])('a run that dies %s: the next run finishes the recorded flush, nothing twice', async (point) => {
    const w = world(logOf(2, 10));
    const first = await w.run('run-1', crashAt(point));
    expect(first.stopReason).toBe('error');
    const recorded = [...w.checkpoints.partitions.values()].filter((p) => p.intent);
    expect(recorded.length).toBeGreaterThan(0);
    const logger = createMemoryLogger();
    const second = await w.run('run-2', undefined, logger);
    expect(second.stopReason).toBe('caught_up');
    expect(logger.lines.some((l) => l.message === 'a flush recorded by an earlier run was finished')).toBe(
      true,
    );
    w.exactlyOnce();
    for (let p = 0; p < 2; p++) expect(w.checkpoints.checkpoint({ topic: 't', partition: p })).toBe(10);
  });

  test('a run that dies before its intent: its streams are never committed, the next run writes the range again', async () => {
    // The sink fails while preparing: no intent is recorded, so nothing ever commits those streams.
    const w2 = world(logOf(1, 8));
    w2.streams.failWith(new Error('BigQuery went away'));
    expect((await w2.run('run-1')).stopReason).toBe('error');
    w2.streams.failWith(undefined);
    expect((await w2.run('run-2')).stopReason).toBe('caught_up');
    w2.exactlyOnce();
  });

  test('an intent whose streams are gone and whose rows are absent is discarded: the range is read again, once', async () => {
    const w = world(logOf(1, 8));
    await w.run('run-1', crashAt('after-intent'));
    const intent = [...w.checkpoints.partitions.values()][0]!.intent!;
    for (const s of intent.streams) w.streams.expire(s);
    const logger = createMemoryLogger();
    expect((await w.run('run-2', undefined, logger)).stopReason).toBe('caught_up');
    expect(
      logger.lines.some((l) => String(l.message).includes('never committed and its streams are gone')),
    ).toBe(true);
    w.exactlyOnce();
  });

  test('an intent whose streams are gone but whose rows are all in the tables is committed, not written again', async () => {
    const w = world(logOf(1, 8));
    await w.run('run-1', crashAt('after-batch-commit'));
    const intent = [...w.checkpoints.partitions.values()][0]!.intent!;
    for (const s of intent.streams) w.streams.expire(s);
    expect((await w.run('run-2')).stopReason).toBe('caught_up');
    w.exactlyOnce();
    expect(w.checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(8);
  });

  test('an intent only partly in the tables is refused: that partition waits for an operator, the others drain', async () => {
    const w = world(logOf(2, 8));
    await w.run('run-1', crashAt('after-batch-commit'));
    const [, p1] = [...w.checkpoints.partitions.entries()].find(([id]) => id === 't~0')!;
    const intent = p1.intent!;
    for (const s of intent.streams) w.streams.expire(s);
    // Take one of its rows out of the table: a state this protocol cannot produce.
    const at = w.streams.table.findIndex(
      (r) => r.record.partition === 0 && r.record.offset === intent.fromOffset,
    );
    w.streams.table.splice(at, 1);
    const logger = createMemoryLogger();
    const second = await w.run('run-2', undefined, logger);
    expect(second.partitions.find((p) => p.partition === 0)).toMatchObject({ skipped: 'error' });
    expect(w.checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(intent.fromOffset);
    expect(w.checkpoints.checkpoint({ topic: 't', partition: 1 })).toBe(8);
    expect(
      logger.lines.some((l) =>
        String((l.error as { message?: string })?.message).includes('an operator must decide'),
      ),
    ).toBe(true);
  });

  test('a recorded flush whose commit keeps failing: the run is stalled, not caught up, and the partition says why', async () => {
    const w = world(logOf(2, 8));
    await w.run('run-1', crashAt('after-intent'));
    const waitingOn = [...w.checkpoints.partitions.values()].filter((p) => p.intent).length;
    expect(waitingOn).toBeGreaterThan(0);
    // BigQuery refuses the commit at every try (as the emulator did for a stream holding broken JSON).
    w.streams.commit = async () => {
      throw new DrainError('bigquery storage write commit: 13 INTERNAL failed to add table data', {
        retriable: false,
      });
    };
    const second = await w.run('run-2');
    expect(second.stopReason).toBe('stalled');
    const waiting = second.partitions.filter((p) => p.waiting !== undefined);
    expect(waiting).toHaveLength(waitingOn);
    for (const p of waiting) {
      expect(p).toMatchObject({ skipped: 'error' });
      expect(p.waiting).toMatch(
        /^a recorded flush of \[0, \d+\) could not be finished: .*failed to add table data/,
      );
    }
  });

  test('a backward seek: the replay writes only what the tables lack, once (an operator may have deleted rows)', async () => {
    const w = world(logOf(2, 10));
    expect((await w.run('run-1')).stopReason).toBe('caught_up');
    // The operator deletes rows 5 and 6 of partition 0 to have them written again, and seeks back to 2.
    for (const offset of [5, 6]) {
      const at = w.streams.table.findIndex((r) => r.record.partition === 0 && r.record.offset === offset);
      w.streams.table.splice(at, 1);
    }
    w.checkpoints.seek({ topic: 't', partition: 0 }, 2);
    const logger = createMemoryLogger();
    const second = await w.run('run-2', undefined, logger);
    expect(second).toMatchObject({
      stopReason: 'caught_up',
      recordsRead: 8,
      rowsWritten: 2,
      deadLettered: 0,
    });
    w.exactlyOnce(); // offsets 5 and 6 written again, nothing else twice (dead letters at 4 and 9 neither)
    expect(w.checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(10);
    const notice = logger.lines.find((l) => String(l.message).startsWith('replaying offsets written before'));
    expect(notice).toMatchObject({ from: 2, to: 10, heldRows: 4, heldDeadLetters: 2 });
    // The ledger counts the range's rows as in the table: what verify reconciles.
    const replayed = w.checkpoints.commits.filter(
      (c) => c.lease.owner.startsWith('run-2') && c.lease.partition === 0,
    );
    expect(replayed.reduce((n, c) => n + c.rows, 0)).toBe(6);
    expect(replayed.reduce((n, c) => n + c.deadLetters, 0)).toBe(2);
    // Nothing is left: the next run is idle.
    const third = await w.run('run-3');
    expect(third).toMatchObject({ recordsRead: 0 });
  });

  test('a zombie that wakes after another run rolled its flush forward commits nothing twice and moves no checkpoint', async () => {
    const log = logOf(1, 12);
    const w = world(log);
    // Run A records its intent and freezes before committing its streams.
    let wake: () => void = () => {};
    const frozen = new Promise<void>((resolve) => {
      wake = resolve;
    });
    let zombieReachedIntent: () => void = () => {};
    const atIntent = new Promise<void>((resolve) => {
      zombieReachedIntent = resolve;
    });
    let paused = false;
    // Frozen means frozen: no lease renewal either, so the lease lapses.
    const checkpointsA = {
      ...w.checkpoints,
      async renew(...args: Parameters<typeof w.checkpoints.renew>) {
        if (paused) await frozen;
        return w.checkpoints.renew(...args);
      },
    };
    const zombieStreams = {
      ...w.streams,
      async commit(streams: readonly string[]) {
        if (!paused) {
          paused = true;
          zombieReachedIntent();
          await frozen;
        }
        return w.streams.commit(streams);
      },
    };
    const zombie = runDrain(
      {
        source: createMemorySource(log),
        checkpoints: checkpointsA,
        sink: createMemorySink(),
        streams: zombieStreams,
        deadLetters: w.deadLetters,
      },
      { ...options, runId: 'zombie', leaseTtlMs: 300, budgetMs: 20_000, settleMs: 10_000 },
      { logger: createMemoryLogger(), now: Date.now, signal: new AbortController().signal },
    );
    await atIntent;
    // Its lease expires while it is frozen.
    await new Promise((resolve) => setTimeout(resolve, 400));
    const taker = await w.run('taker');
    expect(taker.stopReason).toBe('caught_up');
    expect(w.checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(12);
    wake();
    const late = await zombie;
    // It could not renew its lease, so it left the partition before the lease could expire (its commit
    // call, already on the wire, lands on streams the taker committed: nothing twice).
    expect(late.partitions[0]!.skipped).toBe('error');
    expect(w.checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(12);
    w.exactlyOnce();
  });

  test('transient failures of prepare and commit are retried within the run: new streams, the same commit', async () => {
    const w = world(logOf(2, 8));
    const prepare = w.streams.prepare.bind(w.streams);
    const commit = w.streams.commit.bind(w.streams);
    let prepareFailures = 1;
    let commitFailures = 2;
    const transient = () => new DrainError('13 INTERNAL: sqlite3: database is locked', { retriable: true });
    w.streams.prepare = async (...args) => {
      if (prepareFailures-- > 0) {
        await prepare(...args); // streams made, then the flush fails: they are abandoned, never committed
        throw transient();
      }
      return prepare(...args);
    };
    w.streams.commit = async (names) => {
      if (commitFailures-- > 0) throw transient();
      return commit(names);
    };
    const logger = createMemoryLogger();
    const summary = await w.run('r1', undefined, logger);
    expect(summary).toMatchObject({ stopReason: 'caught_up', recordsRead: 16 });
    expect(logger.lines.filter((l) => l.message === 'preparing the flush failed; new streams')).toHaveLength(
      1,
    );
    expect(logger.lines.filter((l) => l.message === 'committing the flush failed; retrying')).toHaveLength(2);
    w.exactlyOnce();
  });
});
