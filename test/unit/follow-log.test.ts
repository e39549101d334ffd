/**
 * A run that follows the log (DRAIN_UNTIL=budget, issue #68), on a fake clock with in-memory ports: it reads
 * records written after its start until its budget, each batch cut when full or a linger after it began;
 * SIGTERM while a batch lingers commits nothing of it and the next run reads it; in `end` mode the same log
 * stops at the end seen at start. Each record once in the end.
 */
import { describe, expect, test } from 'vitest';
import { createMemoryLogger } from '../../functions/kernel/logger.js';
import type { KafkaRecord } from '../../functions/kernel/records.js';
import { testDrainOptions } from '../support/drain-options.js';
import { createFakeClock } from '../support/fake-clock.js';
import {
  createMemoryAlerts,
  createMemoryCheckpoints,
  createMemoryDeadLetters,
  createMemorySink,
  createMemorySource,
} from '../support/memory-ports.js';
import { type DrainOptions, runDrain } from '../support/run-drain.js';

const start = 1_700_000_000_000;
const linger = 500;
const follow: DrainOptions = {
  ...testDrainOptions,
  batchMaxRecords: 50,
  budgetMs: 10_000,
  follow: { lingerMs: linger },
};

/** `partitions` (two), and a producer on the fake clock: one record a partition every 100 ms until `until`. */
function setup(until: number, partitions = 2, writeMs = 0) {
  const clock = createFakeClock(start);
  const log = new Map<string, KafkaRecord[]>(Array.from({ length: partitions }, (_, p) => [`t~${p}`, []]));
  const append = () => {
    for (const [id, records] of log) {
      const offset = records.length;
      records.push({
        topic: 't',
        partition: Number(id.split('~')[1]),
        offset,
        timestamp: clock.now(),
        key: null,
        value: Buffer.from(JSON.stringify({ n: offset })),
        headers: {},
      });
    }
  };
  append();
  const stopProducing = clock.timers.every(100, () => {
    if (clock.now() - start < until) append();
  });
  const checkpoints = createMemoryCheckpoints(clock.now);
  const sink = createMemorySink();
  // A sink slower than the producer when `writeMs` is set: each write takes that long on the fake clock.
  const write = sink.write.bind(sink);
  sink.write = async (batch) => {
    if (writeMs > 0) await clock.timers.sleep(writeMs);
    return write(batch);
  };
  const alerts = createMemoryAlerts();
  const ports = {
    source: createMemorySource(log, { sleep: (ms: number) => clock.timers.sleep(ms) }),
    checkpoints,
    sink,
    deadLetters: createMemoryDeadLetters(),
    alerts,
  };
  const context = { logger: createMemoryLogger(), now: clock.now, timers: clock.timers };
  const drain = (options: DrainOptions, runId: string, signal = new AbortController().signal) =>
    runDrain(ports, { ...options, runId }, { ...context, signal });
  const run = (options: DrainOptions, runId: string, signal = new AbortController().signal) =>
    clock.run(drain(options, runId, signal));
  return { clock, log, checkpoints, sink, alerts, run, drain, stopProducing, logger: context.logger };
}

const offsetsOf = (sink: ReturnType<typeof createMemorySink>, partition: number) =>
  sink.rows.filter((r) => r.record.partition === partition).map((r) => r.record.offset);

describe('a run that follows the log', () => {
  test('reads what is written after its start until its budget, a batch cut a linger after it began', async () => {
    const { run, log, checkpoints, sink, stopProducing } = setup(8_000);
    const summary = await run(follow, 'run-1');
    stopProducing();

    expect(summary.stopReason).toBe('budget');
    // Every record written in the first 8 s (80 a partition: at 0, 100, …, 7,900 ms) was read, committed once, in order.
    for (const p of [0, 1]) expect(offsetsOf(sink, p)).toEqual([...Array(80).keys()]);
    expect(log.get('t~0')).toHaveLength(80);
    // Batches of about a linger's records (5 at one record each 100 ms), not one batch a record nor one a run.
    const sizes = checkpoints.commits.filter((c) => c.records > 0).map((c) => c.records);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(linger / 100 + 1);
    expect(sizes.length).toBeGreaterThanOrEqual((2 * 80) / (linger / 100 + 1));
    // Each record committed within about a linger of its writing (the fake clock's writes take no time).
    expect(summary.latencyMs.count).toBe(160);
    expect(summary.latencyMs.max).toBeLessThanOrEqual(linger + 100);
  });

  test('in `end` mode the same log stops at the end seen at start', async () => {
    const { run, sink, stopProducing } = setup(8_000);
    const { follow: _, ...end } = follow;
    const summary = await run(end, 'run-1');
    stopProducing();
    expect(summary.stopReason).toBe('caught_up');
    expect(offsetsOf(sink, 0)).toEqual([0]);
  });

  test('SIGTERM while a batch lingers: nothing of it is committed, and the next run reads it', async () => {
    const { clock, run, sink, checkpoints, stopProducing } = setup(2_000);
    // 1.25 s in: the batch begun at 1.0 s lingers until 1.5 s.
    const abort = new AbortController();
    clock.timers.after(1_250, () => abort.abort());
    const first = await run(follow, 'run-1', abort.signal);
    expect(first.stopReason).toBe('signal');
    const stopped = await checkpoints.peek([{ topic: 't', partition: 0 }]);
    const committed = stopped[0]!.nextOffset!;
    expect(committed).toBeGreaterThan(0);
    expect(offsetsOf(sink, 0)).toEqual([...Array(committed).keys()]);
    // Records past the checkpoint were read (the lingering batch) but not written.
    expect(committed).toBeLessThan(12);

    const second = await run(follow, 'run-2');
    stopProducing();
    expect(second.stopReason).toBe('budget');
    for (const p of [0, 1]) expect(offsetsOf(sink, p)).toEqual([...Array(20).keys()]);
  });
  test('runs back to back: the next takes each partition as the one before releases it, every record once', async () => {
    const { clock, checkpoints, sink, drain, stopProducing } = setup(15_000);
    // The second execution starts 6 s into the first's 10 s budget: its partitions are held until then.
    const second = new Promise<Awaited<ReturnType<typeof drain>>>((resolve) =>
      clock.timers.after(6_000, () => void drain(follow, 'run-2').then(resolve)),
    );
    const [a, b] = await clock.run(Promise.all([drain(follow, 'run-1'), second]));
    stopProducing();
    expect([a.stopReason, b.stopReason], JSON.stringify(b)).toEqual(['budget', 'budget']);
    // Every record written while either ran (at 0, 100, …, 14,900 ms), in the table once, in order.
    for (const p of [0, 1]) expect(offsetsOf(sink, p)).toEqual([...Array(150).keys()]);
    // Each run's latency counted its own records: together, every record once.
    expect(a.latencyMs.count + b.latencyMs.count).toBe(2 * 150);
    // The handover: per partition, the first run's last commit, then the second's first within a
    // linger and a look (the release lands, the next look takes it, the batch lingers).
    for (const partition of [0, 1]) {
      const mine = checkpoints.commits.filter((c) => c.lease.partition === partition && c.records > 0);
      const last = mine.filter((c) => c.lease.owner === 'run-1').at(-1)!;
      const next = mine.find((c) => c.lease.owner === 'run-2')!;
      expect(mine.indexOf(next)).toBe(mine.indexOf(last) + 1);
      expect(next.fromOffset).toBe(last.nextOffset);
    }
    expect(b.latencyMs.max).toBeLessThanOrEqual(10_000 - 6_000 + 1_000 + 2 * linger);
  });

  test('more partitions than one lease group (40, groups of 16), runs back to back: none skipped, every record once', async () => {
    const { clock, sink, drain, stopProducing, logger } = setup(15_000, 40);
    const wide: DrainOptions = { ...follow, firestoreConcurrency: 16, partitionConcurrency: 40 };
    const second = new Promise<Awaited<ReturnType<typeof drain>>>((resolve) =>
      clock.timers.after(6_000, () => void drain(wide, 'run-2').then(resolve)),
    );
    const [a, b] = await clock.run(Promise.all([drain(wide, 'run-1'), second]));
    stopProducing();
    // The groups after the first were leased at the first try, the end seen at the run's start behind
    // the checkpoint the run before moved meanwhile: they were skipped as "past the end" (issue #78).
    const skipped = b.partitions
      .filter((p) => p.skipped !== undefined)
      .map((p) => `${p.partition}: ${p.skipped}`);
    expect(skipped).toEqual([]);
    expect(logger.lines.filter((l) => /past the end/.test(String(l.message)))).toEqual([]);
    expect([a.stopReason, b.stopReason]).toEqual(['budget', 'budget']);
    for (let p = 0; p < 40; p++) expect(offsetsOf(sink, p), `partition ${p}`).toEqual([...Array(150).keys()]);
    expect(a.latencyMs.count + b.latencyMs.count).toBe(40 * 150);
  });

  test('falling behind: lag and `backlog` are measured against the live end, not the end seen at the start', async () => {
    // Writes of 1 s for batches of 5 (5 records a second a partition), 10 written a second a partition.
    const { run, log, checkpoints, alerts, stopProducing } = setup(10_000, 2, 1_000);
    const summary = await run(
      {
        ...follow,
        batchMaxRecords: 5,
        alertThresholds: { ...follow.alertThresholds!, backlogRecords: 20 },
      },
      'run-1',
    );
    stopProducing();
    expect(summary.stopReason).toBe('budget');
    for (const line of summary.partitions) {
      const [state] = await checkpoints.peek([{ topic: 't', partition: line.partition }]);
      const end = log.get(`t~${line.partition}`)!.length;
      // The end seen at the start was 1: the lag against it was 0 however far behind the run fell.
      expect(line.lag).toBe(end - state!.nextOffset!);
      expect(line.lag).toBeGreaterThanOrEqual(20);
    }
    expect(
      alerts.sent.filter((a) => a.kind === 'backlog' && a.state === 'open').map((a) => a.partition),
    ).toEqual([0, 1]);
  });
});
