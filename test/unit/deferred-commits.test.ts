/**
 * Batches a writer takes without making them durable yet (`WrittenBatch.deferred`, the drain's side of
 * issue #67's loads that span a run), on a fake clock with in-memory ports: a partition reads on past its
 * checkpoint while its batches wait; nothing is committed until the writer settles; then one commit a
 * partition, under the lease the writer names, with every count and latency; a partition the writer does
 * not call durable, or a settle that fails, commits nothing and the next run reads it again: each record
 * once in the end.
 */
import { Timestamp } from '@google-cloud/firestore';
import { describe, expect, test } from 'vitest';
import { runRateOf } from '../../functions/dispatch/observe.js';
import { createMemoryLogger } from '../../functions/kernel/logger.js';
import type { Lease, Writer } from '../../functions/kernel/ports.js';
import { type KafkaRecord, partitionId } from '../../functions/kernel/records.js';
import { testDrainOptions } from '../support/drain-options.js';
import { createFakeClock } from '../support/fake-clock.js';
import {
  createMemoryCheckpoints,
  createMemoryDeadLetters,
  createMemorySource,
  record,
} from '../support/memory-ports.js';
import { runDrain } from '../support/run-drain.js';

const options = { ...testDrainOptions, batchMaxRecords: 100 };

function logOf(partitions: number, perPartition: number): Map<string, KafkaRecord[]> {
  return new Map(
    Array.from({ length: partitions }, (_, p) => [
      `t~${p}`,
      Array.from({ length: perPartition }, (_, o) => record('t', p, o, { n: o })),
    ]),
  );
}

/** A writer that takes batches and makes them durable only when settled (a table of offsets per partition). */
function deferringWriter(
  settleAs: (leases: Map<string, Lease>) => Map<string, Lease> | Error = (l) => l,
  settling?: () => Promise<void>,
) {
  const table = new Map<number, number[]>();
  const taken: { lease: Lease; offsets: number[] }[] = [];
  const writes: number[] = [];
  const writer: Writer = {
    recover: async (lease) => ({ startAt: lease.nextOffset ?? 0 }),
    begin: async () => {},
    async write(batch) {
      writes.push(batch.records.length);
      taken.push({ lease: batch.lease, offsets: batch.records.map((r) => r.offset) });
      return { rows: batch.records.length, deadLetters: 0, tombstones: 0, deferred: true };
    },
    async settle() {
      await settling?.();
      const leases = new Map(taken.map((t) => [partitionId(t.lease), t.lease]));
      const durable = settleAs(leases);
      if (durable instanceof Error) throw durable;
      for (const t of taken)
        if (durable.has(partitionId(t.lease)))
          table.set(t.lease.partition, [...(table.get(t.lease.partition) ?? []), ...t.offsets]);
      taken.length = 0;
      return durable;
    },
  };
  return { writer, table, writes };
}

function setup(log: Map<string, KafkaRecord[]>, clock = createFakeClock(1_700_000_000_000)) {
  const checkpoints = createMemoryCheckpoints(clock.now);
  const ports = {
    source: createMemorySource(log, { sleep: (ms: number) => clock.timers.sleep(ms) }),
    checkpoints,
    deadLetters: createMemoryDeadLetters(),
  };
  const context = {
    logger: createMemoryLogger(),
    now: clock.now,
    timers: clock.timers,
    signal: new AbortController().signal,
  };
  const run = (writer: Writer, runId = 'run-1', more: Partial<typeof options> = {}) =>
    clock.run(runDrain({ ...ports, writer: () => writer }, { ...options, runId, ...more }, context));
  return { run, checkpoints, context, clock };
}

describe('batches a writer defers', () => {
  test('read on past the checkpoint, committed once settled: one commit a partition, every count', async () => {
    const { run, checkpoints } = setup(logOf(3, 1_000));
    const { writer, table, writes } = deferringWriter();
    const summary = await run(writer);
    // Ten batches a partition were taken before anything was committed.
    expect(writes).toHaveLength(30);
    expect(
      checkpoints.commits
        .filter((c) => c.records > 0)
        .map((c) => [c.lease.partition, c.fromOffset, c.nextOffset, c.records]),
    ).toEqual(
      expect.arrayContaining([
        [0, 0, 1_000, 1_000],
        [1, 0, 1_000, 1_000],
        [2, 0, 1_000, 1_000],
      ]),
    );
    expect(checkpoints.commits.filter((c) => c.records > 0)).toHaveLength(3);
    for (let p = 0; p < 3; p++) expect(table.get(p)).toEqual(Array.from({ length: 1_000 }, (_, o) => o));
    expect(summary).toMatchObject({ recordsRead: 3_000, rowsWritten: 3_000, stopReason: 'caught_up' });
    expect(summary.latencyMs.count).toBe(3_000);
  });

  test('a settle longer than the lease TTL: the leases of partitions read to their end are kept, the commits land', async () => {
    const { run, checkpoints, context, clock } = setup(logOf(2, 300));
    // A load job that runs for three TTLs after the run has read everything.
    const { writer, table } = deferringWriter(undefined, () => clock.timers.sleep(3 * options.leaseTtlMs));
    const summary = await run(writer, 'run-1', { budgetMs: 60_000 });
    expect(summary).toMatchObject({ recordsRead: 600, rowsWritten: 600, stopReason: 'caught_up' });
    const stored = await checkpoints.peek([
      { topic: 't', partition: 0 },
      { topic: 't', partition: 1 },
    ]);
    expect(stored.map((s) => s.nextOffset)).toEqual([300, 300]);
    expect(table.get(0)).toHaveLength(300);
    const logged = (context.logger as ReturnType<typeof createMemoryLogger>).lines.map((e) =>
      String(e.message),
    );
    expect(logged.filter((m) => /renewed in time|lease lost/.test(m))).toEqual([]);
  });

  test('a partition the writer does not call durable commits nothing; the next run reads it again', async () => {
    const { run, checkpoints } = setup(logOf(2, 300));
    const first = deferringWriter((leases) => new Map([...leases].filter(([id]) => id !== 't~1')));
    const summary = await run(first.writer);
    expect(summary).toMatchObject({ recordsRead: 300, rowsWritten: 300 });
    const stored = await checkpoints.peek([
      { topic: 't', partition: 0 },
      { topic: 't', partition: 1 },
    ]);
    // Partition 1 stands where the run pinned its start.
    expect(stored.map((s) => s.nextOffset)).toEqual([300, 0]);
    const second = deferringWriter();
    expect(await run(second.writer, 'run-2')).toMatchObject({ recordsRead: 300, rowsWritten: 300 });
    expect(first.table.get(0)).toHaveLength(300);
    expect(first.table.get(1)).toBeUndefined();
    expect(second.table.get(1)).toEqual(Array.from({ length: 300 }, (_, o) => o));
    expect(second.table.get(0)).toBeUndefined();
  });

  test('a settle that fails commits nothing and fails the run; the next reads all again', async () => {
    const { run, checkpoints } = setup(logOf(2, 250));
    const failing = deferringWriter(() => new Error('the load job failed'));
    const summary = await run(failing.writer);
    expect(summary).toMatchObject({ recordsRead: 0, rowsWritten: 0, stopReason: 'error' });
    expect(checkpoints.commits.filter((c) => c.records > 0)).toEqual([]);
    const again = deferringWriter();
    expect(await run(again.writer, 'run-2')).toMatchObject({ recordsRead: 500, rowsWritten: 500 });
    expect([...again.table.values()].map((o) => o.length)).toEqual([250, 250]);
  });

  test('a load that outlasted its run, committed by the next run: counted as recovered, and a rate for the dispatcher', async () => {
    const { run } = setup(logOf(2, 300));
    // Run 1 takes every batch; its job outlasts it: nothing durable, nothing committed, nothing counted.
    const first = await run(deferringWriter(() => new Map()).writer, 'run-1');
    expect(first.recordsRead).toBe(0);
    // Run 2 finds the job done: its recovery commits what run 1 read.
    const done: Writer = {
      ...deferringWriter().writer,
      recover: async (lease) =>
        (lease.nextOffset ?? 0) === 0
          ? {
              commit: {
                streams: [],
                fromOffset: 0,
                nextOffset: 300,
                records: 300,
                rows: 300,
                deadLetters: 0,
                tombstones: 0,
                lastRecordTimestamp: null,
              },
            }
          : { startAt: lease.nextOffset ?? 0 },
    };
    const second = await run(done, 'run-2');
    expect(second).toMatchObject({ recordsRead: 0, recordsRecovered: 600, stopReason: 'caught_up' });
    // What the dispatcher reads of the run's document: the records it drained, read or recovered.
    const rate = runRateOf({ ...second, recordedAt: Timestamp.fromMillis(1_700_000_100_000) });
    expect(rate).toMatchObject({ recordsRead: 600, stopReason: 'caught_up' });
    expect(
      runRateOf({ recordsRead: 5, durationMs: 1_000, stopReason: 'budget', recordedAt: Timestamp.now() }),
    ).toMatchObject({ recordsRead: 5 });
  });
});
