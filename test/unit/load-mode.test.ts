/**
 * `load` mode with in-memory ports: one load job per flush, its id recorded as the partitions' intent
 * before it is submitted, and every way a recorded intent is finished by the next holder of the lease
 * (the job done, failed, never submitted, still running); rows a load refuses mapped back by their byte
 * position; the day's load budget paced and, once spent, records held back with a backlog alert. The
 * real jobs against the emulator: test/integration/load-jobs-emulator.test.ts, test/e2e/load-mode.test.ts.
 */
import { describe, expect, test } from 'vitest';
import { parseConfig } from '../../functions/config/config.js';
import { armCrashPoints } from '../../functions/kernel/crash-points.js';
import { ConfigError, PartitionWaitsError } from '../../functions/kernel/errors.js';
import { createMemoryLogger } from '../../functions/kernel/logger.js';
import type { Lease } from '../../functions/kernel/ports.js';
import type { DeadLetter, KafkaRecord } from '../../functions/kernel/records.js';
import type { LoadJobState, LoadJobs, LoadNaming, LoadTable } from '../../functions/modes/load/load-jobs.js';
import { jobIdOf, loadNaming } from '../../functions/modes/load/load-jobs.js';
import { loadsAllowed } from '../../functions/modes/load/load-quota.js';
import { recoverIntent } from '../../functions/modes/load/load-targets.js';
import { createLoadWriter } from '../../functions/modes/load/load-writer.js';
import { createRecordRouter, type RecordRouter } from '../../functions/records/record-router.js';
import { testDrainOptions } from '../support/drain-options.js';
import {
  createMemoryAlerts,
  createMemoryCheckpoints,
  createMemoryDeadLetters,
  createMemorySource,
  record,
} from '../support/memory-ports.js';
import { type DrainOptions, runDrain } from '../support/run-drain.js';

const options: DrainOptions = {
  ...testDrainOptions,
  partitionConcurrency: 4,
  tombstones: 'skip',
  leaseTtlMs: 1_000,
};

function logOf(
  partitions: number,
  perPartition: number,
  value = (o: number) => (o % 5 === 4 ? 'not json' : { n: o }),
) {
  const log = new Map<string, KafkaRecord[]>();
  for (let p = 0; p < partitions; p++)
    log.set(
      `t~${p}`,
      Array.from({ length: perPartition }, (_, o) => record('t', p, o, value(o))),
    );
  return log;
}

/** BigQuery's job ids in memory: one namespace a project, whatever table each job loads. */
type ProjectJobs = Map<string, LoadJobState>;

/**
 * BigQuery's load jobs into one table, in memory: an id once a project (`project`, shared by the tables'
 * ports), a job atomic, rows it refuses named by byte position, each job reporting its destination.
 */
function memoryJobs(
  refuse: (line: string) => boolean = () => false,
  destination: LoadTable = { dataset: 'd', table: 'events' },
  project: ProjectJobs = new Map(),
) {
  const table: { partition: number; offset: number }[] = [];
  let submissions = 0;
  /** Jobs that stay `running` for this many reads of their state. */
  let runningFor = 0;
  const reads = new Map<string, number>();
  /** Ids another table's job takes just before this port's upload of it completes (a collision). */
  let takenAt: ((id: string) => boolean) | undefined;
  /** Uploads complete only once this has resolved (a process frozen while it completes them). */
  let frozen: Promise<void> | undefined;
  const port: LoadJobs = {
    // A streamed load in memory (the real resumable upload is proven on the emulator).
    async open(id) {
      if (project.has(id)) return undefined;
      const chunks: Buffer[] = [];
      let bytes = 0;
      return {
        get bytes() {
          return bytes;
        },
        async write(lines) {
          chunks.push(Buffer.from(lines));
          bytes += lines.length;
        },
        finish: async () => {
          await frozen;
          if (takenAt?.(id))
            project.set(id, { state: 'done', destination: { dataset: 'x', table: 'other' } });
          return port.submit(id, Buffer.concat(chunks));
        },
      };
    },
    async submit(id, lines) {
      submissions++;
      if (project.has(id)) return false;
      const bad = new Map<number, string>();
      const rows: { partition: number; offset: number }[] = [];
      let position = 0;
      for (const line of lines
        .toString()
        .split('\n')
        .filter((l) => l !== '')) {
        const row = JSON.parse(line) as { _kafka_partition: number; _kafka_offset: number } | string;
        if (refuse(line) || typeof row !== 'object')
          bad.set(position, `row starting at position ${position}: refused`);
        else rows.push({ partition: row._kafka_partition, offset: row._kafka_offset });
        position += Buffer.byteLength(line) + 1;
      }
      if (bad.size > 0)
        project.set(id, { state: 'failed', message: 'invalid: too many errors', badRows: bad, destination });
      else {
        table.push(...rows);
        project.set(id, { state: 'done', destination });
      }
      return true;
    },
    async state(id) {
      const n = (reads.get(id) ?? 0) + 1;
      reads.set(id, n);
      const job = project.get(id);
      if (job !== undefined && n <= runningFor) return { state: 'running', destination };
      return job ?? { state: 'missing' };
    },
  };
  return {
    port,
    /** This table's jobs. */
    get jobs() {
      return new Map([...project].filter(([, j]) => j.state !== 'missing' && j.destination === destination));
    },
    table,
    get submissions() {
      return submissions;
    },
    keepRunning(times: number) {
      runningFor = times;
    },
    takeIdsAt(taken: (id: string) => boolean) {
      takenAt = taken;
    },
    freezeUploadsUntil(thawed: Promise<void> | undefined) {
      frozen = thawed;
    },
  };
}

/** A target as `recoverIntent` alone needs it: its jobs and naming (the rest never called there). */
function recoveringTarget(jobs: LoadJobs, naming: LoadNaming) {
  return {
    jobs,
    quota: { take: async () => undefined },
    errorTable: memoryErrorTable([]),
    records: { tombstones: 'skip' as const },
    naming: async () => naming,
    heldOffsets: async () => ({ rows: new Map(), deadLetters: new Map() }),
  };
}

/** The error table in memory: by origin, as the MERGE into it, none twice. */
function memoryErrorTable(letters: DeadLetter[]) {
  return {
    async write(written: readonly DeadLetter[]) {
      for (const l of written)
        if (
          !letters.some(
            (e) => e.record.partition === l.record.partition && e.record.offset === l.record.offset,
          )
        )
          letters.push(l);
    },
  };
}

function world(log: Map<string, KafkaRecord[]>, refuse?: (line: string) => boolean, recoverWaitMs = 5_000) {
  const checkpoints = createMemoryCheckpoints(Date.now);
  const jobs = memoryJobs(refuse);
  const deadLetters = createMemoryDeadLetters();
  const errorTable: DeadLetter[] = [];
  const alerts = createMemoryAlerts();
  let loadsLeft = Number.POSITIVE_INFINITY;
  const run = async (
    runId: string,
    fault?: (point: string) => void,
    override: Partial<DrainOptions> = {},
  ) => {
    armCrashPoints(fault);
    try {
      return await runDrain(
        {
          source: createMemorySource(log),
          checkpoints,
          deadLetters,
          alerts,
          writer: (o) =>
            createLoadWriter({
              ...o,
              targets: [
                {
                  records: o.records,
                  jobs: jobs.port,
                  errorTable: memoryErrorTable(errorTable),
                  quota: {
                    async take() {
                      if (loadsLeft <= 0)
                        throw new PartitionWaitsError('the day is spent', undefined, { heldBack: true });
                      loadsLeft--;
                    },
                  },
                  naming: async () => loadNaming('p', 'd', 'events'),
                  async heldOffsets(partition, from, to) {
                    const inRange = (p: number, o: number) =>
                      p === partition.partition && o >= from && o < to;
                    const log_ = log.get(`t~${partition.partition}`)!;
                    return {
                      rows: new Map(
                        jobs.table
                          .filter((r) => inRange(r.partition, r.offset))
                          .map((r) => [r.offset, log_[r.offset]!.timestamp]),
                      ),
                      deadLetters: new Map(
                        errorTable
                          .filter((l) => inRange(l.record.partition, l.record.offset))
                          .map((l) => [l.record.offset, l.record.timestamp]),
                      ),
                    };
                  },
                },
              ],
              recoverWaitMs,
            }),
        },
        { ...options, runId, ...override },
        { logger: createMemoryLogger(), now: Date.now, signal: new AbortController().signal },
      );
    } finally {
      armCrashPoints(undefined);
    }
  };
  const exactlyOnce = () => {
    for (const [id, records] of log) {
      const partition = Number(id.split('~')[1]);
      const inTable = jobs.table.filter((r) => r.partition === partition).map((r) => r.offset);
      const inErrors = errorTable.filter((l) => l.record.partition === partition).map((l) => l.record.offset);
      expect([...inTable, ...inErrors].sort((a, b) => a - b)).toEqual(records.map((r) => r.offset));
    }
  };
  return {
    checkpoints,
    jobs,
    errorTable,
    deadLetters,
    alerts,
    run,
    exactlyOnce,
    setLoadsLeft(n: number) {
      loadsLeft = n;
    },
  };
}

const crashAt = (point: string) => (at: string) => {
  if (at === point) throw new Error(`crash at ${point}`);
};

describe('load: flushes, intents and their recovery', () => {
  test('drains every partition exactly once: a job per flush spanning its partitions, intents cleared', async () => {
    const w = world(logOf(3, 10));
    const summary = await w.run('run-1');
    expect(summary).toMatchObject({
      stopReason: 'caught_up',
      recordsRead: 30,
      rowsWritten: 24,
      deadLettered: 6,
    });
    w.exactlyOnce();
    // 3 batches of 4 and one of... per partition, flushed together: fewer jobs than batches.
    expect(w.jobs.jobs.size).toBeLessThan(3 * 3);
    for (const p of [0, 1, 2])
      expect((await w.checkpoints.peek([{ topic: 't', partition: p }]))[0]!.nextOffset).toBe(10);
  });

  test.each([
    'after-error-table',
    'after-intent',
    'after-load-submitted',
    'after-load-done',
  ])('a run dying %s: the next run finishes or redoes the flush, nothing lost, nothing twice', async (point) => {
    const w = world(logOf(2, 9));
    await w.run('run-1', crashAt(point)).catch(() => undefined);
    // The dead run's leases expire.
    await new Promise((resolve) => setTimeout(resolve, options.leaseTtlMs + 50));
    const summary = await w.run('run-2');
    expect(summary.stopReason).toBe('caught_up');
    w.exactlyOnce();
  }, 20_000);

  test('a checkpoint moved back: what the tables still hold is not loaded again, what was deleted is', async () => {
    const w = world(logOf(1, 10));
    await w.run('run-1');
    // An operator deletes offsets 6 and 7 from the table, and moves the checkpoint back to 2.
    w.jobs.table.splice(
      0,
      w.jobs.table.length,
      ...w.jobs.table.filter((r) => r.offset !== 6 && r.offset !== 7),
    );
    w.checkpoints.seek({ topic: 't', partition: 0 }, 2);
    const summary = await w.run('run-2');
    expect(summary).toMatchObject({
      stopReason: 'caught_up',
      recordsRead: 8,
      rowsWritten: 6,
      deadLettered: 2,
    });
    w.exactlyOnce();
  });

  /** A run that died once its job was submitted, its lease expired: the job runs on for `reads` looks. */
  async function leftRunning(w: ReturnType<typeof world>, reads: number) {
    await w.run('run-1', crashAt('after-load-submitted')).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, options.leaseTtlMs + 50));
    w.jobs.keepRunning(reads);
    return w.jobs.submissions;
  }

  test('a job an earlier run left running is waited for, then committed without loading again', async () => {
    const w = world(logOf(1, 3));
    const submitted = await leftRunning(w, 2);
    const summary = await w.run('run-2');
    expect(summary.stopReason).toBe('caught_up');
    w.exactlyOnce();
    expect(w.jobs.submissions).toBe(submitted);
  }, 20_000);

  test("a job still running at the run's budget: the wait ends there, the partition waits, the next run commits it", async () => {
    // recoverWaitMs an hour, the job running for ever: only the run's stop (its budget, 1 s) ends the wait.
    const w = world(logOf(1, 3), undefined, 3_600_000);
    const submitted = await leftRunning(w, Number.POSITIVE_INFINITY);
    const held = await w.run('run-2', undefined, { budgetMs: 1_000 });
    expect(held.stopReason).not.toBe('error');
    // Waiting, not failed: the job is not done yet.
    expect(held.partitions[0]!.skipped).toBeUndefined();
    expect(held.partitions[0]!.waiting).toMatch(
      /load job kbd_load_\S+, recorded by an earlier run, is still running/,
    );
    expect((await w.checkpoints.peek([{ topic: 't', partition: 0 }]))[0]!.nextOffset).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, options.leaseTtlMs + 50));
    w.jobs.keepRunning(0);
    const summary = await w.run('run-3');
    expect(summary.stopReason).toBe('caught_up');
    w.exactlyOnce();
    expect(w.jobs.submissions).toBe(submitted);
  }, 20_000);

  test('rows the load refuses become rejected dead letters; the rest is loaded by the next attempt', async () => {
    const w = world(
      logOf(2, 6, (o) => ({ n: o })),
      (line) => /"n":3[,}]/.test(line),
    );
    const summary = await w.run('run-1');
    expect(summary).toMatchObject({ stopReason: 'caught_up', rowsWritten: 10, deadLettered: 2 });
    w.exactlyOnce();
    expect(w.errorTable.map((l) => [l.record.partition, l.record.offset, l.kind]).sort()).toEqual([
      [0, 3, 'rejected'],
      [1, 3, 'rejected'],
    ]);
    expect(w.deadLetters.letters.filter((l) => l.kind === 'rejected')).toHaveLength(2);
    expect([...w.jobs.jobs.values()].map((j) => j.state)).toContain('failed');
  });

  test('the day spent: the run holds the records back (waiting), opens backlog, and ends without error', async () => {
    const w = world(logOf(2, 5, (o) => ({ n: o })));
    w.setLoadsLeft(0);
    const held = await w.run('run-1');
    // A run whose partitions wait says `stalled` (a WARNING line, exit 0), as when a registry is down.
    expect(held).toMatchObject({ stopReason: 'stalled', rowsWritten: 0 });
    expect(held.error).toBeUndefined();
    expect(held.partitions.map((p) => p.waiting)).toEqual(['the day is spent', 'the day is spent']);
    expect(w.alerts.sent.map((a) => `${a.kind}:${a.state}:${a.partition}`).sort()).toEqual([
      'backlog:open:0',
      'backlog:open:1',
    ]);
    expect(w.alerts.sent[0]!.detail).toMatch(/5 records held back: the day is spent/);
    w.setLoadsLeft(10);
    await new Promise((resolve) => setTimeout(resolve, 10));
    const next = await w.run('run-2');
    expect(next).toMatchObject({ stopReason: 'caught_up', rowsWritten: 10 });
    w.exactlyOnce();
    expect(w.alerts.sent.filter((a) => a.state === 'resolved')).toHaveLength(2);
  });
});

/**
 * A topic routed by `when` into two tables (a group): the records whose `k` is "a" into `a`, the rest into
 * `b` (its error table takes what is not JSON). Streamed, as the mode runs: a job a table, one intent.
 */
function groupWorld(
  log: Map<string, KafkaRecord[]>,
  refuseInB?: (line: string) => boolean,
  names: readonly [LoadTable, LoadTable] = [
    { dataset: 'd', table: 'a' },
    { dataset: 'd', table: 'b' },
  ],
) {
  const checkpoints = createMemoryCheckpoints(Date.now);
  // One project: the tables' jobs share its ids, as BigQuery's do.
  const project: ProjectJobs = new Map();
  const tables = [memoryJobs(undefined, names[0], project), memoryJobs(refuseInB, names[1], project)];
  const errorTable: DeadLetter[] = [];
  const topics = [{ kind: 'name', name: 't' } as const];
  const router = createRecordRouter([
    { topics, when: { kind: 'field', path: ['k'], value: 'a' } },
    { topics, when: null },
  ]);
  const run = async (
    runId: string,
    fault?: (point: string) => void,
    how: { legacyNames?: boolean; signal?: AbortSignal; router?: RecordRouter } = {},
  ) => {
    /** How the release before this one named a table's jobs: by the table alone. */
    const named = (t: number) => {
      const naming = loadNaming('p', names[t]!.dataset, names[t]!.table);
      return how.legacyNames ? { ...naming, prefix: naming.legacyPrefix } : naming;
    };
    armCrashPoints(fault);
    try {
      return await runDrain(
        {
          source: createMemorySource(log),
          checkpoints,
          deadLetters: createMemoryDeadLetters(),
          alerts: createMemoryAlerts(),
          writer: (o) =>
            createLoadWriter({
              ...o,
              streamed: true,
              router: how.router ?? router,
              targets: tables.map((jobs, t) => ({
                records: o.records,
                jobs: jobs.port,
                errorTable: memoryErrorTable(errorTable),
                quota: { take: async () => undefined },
                naming: async () => named(t),
                heldOffsets: async (partition, from, to) => heldIn(tables[t]!.table, partition, from, to),
              })),
            }),
        },
        { ...options, runId, batchMaxRecords: 4 },
        { logger: createMemoryLogger(), now: Date.now, signal: how.signal ?? new AbortController().signal },
      );
    } finally {
      armCrashPoints(undefined);
    }
  };
  /** What a table and the error table hold of a partition's range, with the records' timestamps. */
  const heldIn = (
    table: readonly { partition: number; offset: number }[],
    partition: { partition: number },
    from: number,
    to: number,
  ) => {
    const records = log.get(`t~${partition.partition}`)!;
    const inRange = (p: number, o: number) => p === partition.partition && o >= from && o < to;
    return {
      rows: new Map(
        table
          .filter((r) => inRange(r.partition, r.offset))
          .map((r) => [r.offset, records[r.offset]!.timestamp]),
      ),
      deadLetters: new Map(
        errorTable
          .filter((l) => inRange(l.record.partition, l.record.offset))
          .map((l) => [l.record.offset, l.record.timestamp]),
      ),
    };
  };
  /** Each record once: in its table (by `k`), or in the error table. */
  const exactlyOnce = () => {
    for (const [id, records] of log) {
      const partition = Number(id.split('~')[1]);
      const [a, b] = tables.map((t) => t.table.filter((r) => r.partition === partition).map((r) => r.offset));
      const letters = errorTable.filter((l) => l.record.partition === partition).map((l) => l.record.offset);
      expect([...a!, ...b!, ...letters].sort((x, y) => x - y)).toEqual(records.map((r) => r.offset));
      const isA = (o: number) => records[o]!.value!.toString().includes('"k":"a"');
      expect(a!.every(isA)).toBe(true);
      expect(b!.some(isA)).toBe(false);
    }
  };
  return { tables, errorTable, run, exactlyOnce, checkpoints };
}

/** Two partitions: `k` "a" every third record, "b" otherwise, every fifth not JSON. */
const groupLog = () => logOf(2, 12, (o) => (o % 5 === 4 ? 'not json' : { n: o, k: o % 3 === 0 ? 'a' : 'b' }));

/** Kills the run at the first time it reaches `point` (the first table's job made, the second's not). */
const crashOnceAt = (point: string) => {
  let hits = 0;
  return (at: string) => {
    if (at === point && hits++ === 0) throw new Error(`crash at ${point}`);
  };
};

describe('load: routes sharing a topic by `when` (a job a table, one intent naming them)', () => {
  test('one run: each table its one job, each record once in its table or the error table', async () => {
    const w = groupWorld(groupLog());
    const summary = await w.run('run-1');
    expect(summary).toMatchObject({ stopReason: 'caught_up', recordsRead: 24 });
    w.exactlyOnce();
    expect(w.tables.map((t) => t.jobs.size)).toEqual([1, 1]);
    const ledger = await w.checkpoints.peek([{ topic: 't', partition: 0 }]);
    expect(ledger[0]!.nextOffset).toBe(12);
  });

  test('a run dying with one table loaded and not the other: the next loads the other only', async () => {
    const w = groupWorld(groupLog());
    await w.run('run-1', crashOnceAt('after-load-submitted')).catch(() => undefined);
    // Table a's job was made and done; b's upload never completed.
    expect(w.tables[0]!.table.length).toBeGreaterThan(0);
    expect(w.tables[1]!.table).toHaveLength(0);
    await new Promise((resolve) => setTimeout(resolve, options.leaseTtlMs + 50));
    const summary = await w.run('run-2');
    expect(summary.stopReason, JSON.stringify(summary.partitions)).toBe('caught_up');
    w.exactlyOnce();
    // Run 2 loaded b only: a's records of the range were counted as held, not loaded again.
    expect(w.tables[0]!.jobs.size).toBe(1);
    expect(summary.rowsWritten).toBe(w.tables[0]!.table.length + w.tables[1]!.table.length);
  }, 20_000);

  test.each([
    'after-intent',
    'after-load-submitted',
  ])('a half-done load read again, more records come, the run dies %s: the third run loads each record once', async (point) => {
    const log = groupLog();
    const w = groupWorld(log);
    await w.run('run-1', crashOnceAt('after-load-submitted')).catch(() => undefined);
    // More records: table a's beyond what run 1 loaded go to a job of run 2's, named with run 1's done one.
    for (const [id, records] of log) {
      const partition = Number(id.split('~')[1]);
      for (let o = records.length; o < 18; o++)
        records.push(record('t', partition, o, { n: o, k: o % 3 === 0 ? 'a' : 'b' }));
    }
    await new Promise((resolve) => setTimeout(resolve, options.leaseTtlMs + 50));
    await w.run('run-2', crashOnceAt(point)).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, options.leaseTtlMs + 50));
    const summary = await w.run('run-3');
    expect(summary.stopReason).toBe('caught_up');
    w.exactlyOnce();
  }, 20_000);

  const sameName = [
    { dataset: 'eu_x', table: 'orders' },
    { dataset: 'us_x', table: 'orders' },
  ] as const;

  test('two tables of one name in two datasets: each its own job, each record once in its table', async () => {
    const w = groupWorld(groupLog(), undefined, sameName);
    const summary = await w.run('run-1');
    expect(summary).toMatchObject({ stopReason: 'caught_up', recordsRead: 24 });
    w.exactlyOnce();
    expect(w.tables.map((t) => t.jobs.size)).toEqual([1, 1]);
  });

  test.each([
    'after-error-table',
    'after-intent',
    'after-load-submitted',
    'after-load-done',
  ])('two tables of one name, the run killed %s: the next run leaves each record once', async (point) => {
    const w = groupWorld(groupLog(), undefined, sameName);
    await w.run('run-1', crashOnceAt(point)).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, options.leaseTtlMs + 50));
    const summary = await w.run('run-2');
    expect(summary.stopReason).toBe('caught_up');
    w.exactlyOnce();
  }, 20_000);

  test("another table's job under a load's id (409): the partition stops naming both tables, nothing committed", async () => {
    const w = groupWorld(groupLog(), undefined, sameName);
    w.tables[1]!.takeIdsAt(() => true);
    const summary = await w.run('run-1');
    expect(summary.error).toMatch(/load job \S+ exists already and loads x\.other, not us_x\.orders/);
    const [p0, p1] = await w.checkpoints.peek([
      { topic: 't', partition: 0 },
      { topic: 't', partition: 1 },
    ]);
    // Table eu_x.orders was loaded, us_x.orders was not: no checkpoint moved past what a table lacks.
    expect([p0!.nextOffset ?? 0, p1!.nextOffset ?? 0]).toEqual([0, 0]);
    expect(w.tables[1]!.table).toHaveLength(0);
  });

  test("the last release's half-done intent (one id named for both tables of one name) is finished exactly once", async () => {
    const log = groupLog();
    const w = groupWorld(log, undefined, sameName);
    // Run 1 names its jobs as the last release did (the table alone): both tables' loads share an id, and
    // it dies with the first table's job done.
    await w.run('run-1', crashOnceAt('after-load-submitted'), { legacyNames: true }).catch(() => undefined);
    expect(w.tables[0]!.table.length).toBeGreaterThan(0);
    expect(w.tables[1]!.table).toHaveLength(0);
    await new Promise((resolve) => setTimeout(resolve, options.leaseTtlMs + 50));
    const summary = await w.run('run-2');
    expect(summary.stopReason).toBe('caught_up');
    w.exactlyOnce();
  }, 20_000);

  const waitOutLeases = () => new Promise((resolve) => setTimeout(resolve, options.leaseTtlMs + 50));

  test.each([
    'after-intent',
    'after-load-submitted',
  ])('a half-done load read again by a run stopped partway (SIGTERM), then killed %s on the way: the next runs load each record once', async (point) => {
    const w = groupWorld(groupLog());
    await w.run('run-1', crashOnceAt('after-load-submitted')).catch(() => undefined);
    await waitOutLeases();
    // Run 2 re-reads the half-done range and is told to stop at its first batch: it commits less than the
    // range the earlier run's done table holds.
    const stop = new AbortController();
    const second = await w.run(
      'run-2',
      (at) => {
        if (at === 'after-intent') stop.abort();
      },
      { signal: stop.signal },
    );
    expect(second.partitions.some((p) => (p.to ?? 0) < 12)).toBe(true);
    await waitOutLeases();
    await w.run('run-3', crashOnceAt(point)).catch(() => undefined);
    await waitOutLeases();
    const summary = await w.run('run-4');
    expect(summary.stopReason).toBe('caught_up');
    w.exactlyOnce();
  }, 20_000);

  test("a run frozen past its lease while it completes the second table's upload, woken after another took over: nothing twice", async () => {
    const w = groupWorld(groupLog());
    let thaw!: () => void;
    w.tables[1]!.freezeUploadsUntil(
      new Promise<void>((resolve) => {
        thaw = resolve;
      }),
    );
    // Run 1 completes table a's upload, then freezes completing b's, its leases lapsing meanwhile.
    const zombie = w.run('run-1');
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const p of w.checkpoints.partitions.values()) p.leaseExpiresAt = 0;
    w.tables[1]!.freezeUploadsUntil(undefined);
    const second = await w.run('run-2');
    expect(second.stopReason).toBe('caught_up');
    thaw();
    const first = await zombie;
    expect(first.error ?? '').not.toBe('');
    w.exactlyOnce();
    const third = await w.run('run-3');
    expect(third.recordsRead).toBe(0);
    w.exactlyOnce();
  }, 20_000);

  test('a table removed from the routes between a half-done load and its recovery: refused, naming the job and the range', async () => {
    const w = groupWorld(groupLog());
    await w.run('run-1', crashOnceAt('after-load-submitted')).catch(() => undefined);
    const [lease] = [...w.checkpoints.partitions.entries()]
      .filter(([id]) => id === 't~0')
      .map(
        ([, p]) =>
          ({
            topic: 't',
            partition: 0,
            owner: 'o',
            epoch: 9,
            nextOffset: p.nextOffset,
            expiresAt: 0,
            intent: p.intent,
          }) as Lease,
      );
    // Table a's job was done; the routes now name table b alone.
    const onlyB = recoveringTarget(w.tables[1]!.port, loadNaming('p', 'd', 'b'));
    await expect(
      recoverIntent({ targets: [onlyB], logger: createMemoryLogger() }, lease!),
    ).rejects.toMatchObject({
      code: 'intent_unknown_table',
      message: expect.stringMatching(
        /load job kbd_load_p_d_a_\S+, done, loaded a table no route of the topic writes now/,
      ),
    });
  });

  test("a batch whose lines reached the run's loads but whose intent failed: no load is completed, the next run loads each record once", async () => {
    const w = groupWorld(groupLog());
    const record = w.checkpoints.recordIntents.bind(w.checkpoints);
    let calls = 0;
    w.checkpoints.recordIntents = async (intents, ttl) => {
      if (++calls === 3) throw new Error('Firestore unavailable');
      return record(intents, ttl);
    };
    await w.run('run-1');
    w.checkpoints.recordIntents = record;
    // Nothing of run 1 loaded: the failed batch's lines were in its loads, which no commit would cover.
    expect(w.tables.map((t) => t.table.length)).toEqual([0, 0]);
    await waitOutLeases();
    const summary = await w.run('run-2');
    expect(summary.stopReason).toBe('caught_up');
    w.exactlyOnce();
  }, 20_000);

  test('the routes changed between a half-done load and its recovery (`when` swapped): each record once, where it was loaded or where it goes now', async () => {
    const w = groupWorld(groupLog());
    await w.run('run-1', crashOnceAt('after-load-submitted')).catch(() => undefined);
    expect(w.tables[0]!.table.length).toBeGreaterThan(0);
    await waitOutLeases();
    const topics = [{ kind: 'name', name: 't' } as const];
    const swapped = createRecordRouter([
      { topics, when: { kind: 'field', path: ['k'], value: 'b' } },
      { topics, when: null },
    ]);
    const summary = await w.run('run-2', undefined, { router: swapped });
    expect(summary.stopReason).toBe('caught_up');
    // Table a kept what run 1 loaded; what it had not, the new routes send (b's now: "k" "b" into a).
    const all = w.tables.flatMap((t) => t.table.map((r) => `${r.partition}:${r.offset}`));
    expect(new Set(all).size).toBe(all.length);
    const letters = w.errorTable.map((l) => `${l.record.partition}:${l.record.offset}`);
    expect([...all, ...letters].sort()).toEqual(
      [...groupLog()]
        .flatMap(([id, records]) => records.map((r) => `${id.split('~')[1]}:${r.offset}`))
        .sort(),
    );
  }, 20_000);

  test("the last release's intent naming a done job with its offset (`{job}<{offset}`) is read as a replay up to it", async () => {
    const project: ProjectJobs = new Map();
    const a = memoryJobs(undefined, { dataset: 'd', table: 'a' }, project);
    const naming = loadNaming('p', 'd', 'a');
    project.set(`${naming.legacyPrefix}_${'0'.repeat(32)}_1_s`, {
      state: 'done',
      destination: { dataset: 'd', table: 'a' },
    });
    const target = recoveringTarget(a.port, naming);
    const missing = `${naming.legacyPrefix}_${'1'.repeat(32)}_1_s`;
    const intent = {
      streams: [`${naming.legacyPrefix}_${'0'.repeat(32)}_1_s<30`, missing],
      fromOffset: 10,
      nextOffset: 20,
      records: 10,
      rows: 10,
      deadLetters: 0,
      tombstones: 0,
      lastRecordTimestamp: null,
    };
    const lease = {
      topic: 't',
      partition: 0,
      owner: 'o',
      epoch: 2,
      nextOffset: 10,
      expiresAt: 0,
      intent,
    } as Lease;
    const recovery = await recoverIntent({ targets: [target], logger: createMemoryLogger() }, lease);
    expect(recovery).toEqual({ startAt: 10, heldUntil: 30 });
    // The job never made is fenced: a run frozen with it and woken now makes a job that loads nothing.
    expect(project.get(missing)).toMatchObject({ state: 'failed' });
  });

  test("one table's load failing on a row, the other's done: the failed one is loaded flush by flush, the refused row a dead letter", async () => {
    const w = groupWorld(groupLog(), (line) => /"n":7[,}]/.test(line));
    const first = await w.run('run-1');
    expect(first.error).toMatch(/load job \S+_s failed/);
    expect(w.tables[1]!.table).toHaveLength(0);
    await new Promise((resolve) => setTimeout(resolve, options.leaseTtlMs + 50));
    const summary = await w.run('run-2');
    expect(summary.stopReason).toBe('caught_up');
    w.exactlyOnce();
    expect(
      w.errorTable.filter((l) => l.kind === 'rejected').map((l) => [l.record.partition, l.record.offset]),
    ).toEqual(
      expect.arrayContaining([
        [0, 7],
        [1, 7],
      ]),
    );
    expect(w.tables[0]!.jobs.size).toBe(1);
  }, 20_000);
});

describe('load: job ids and the day budget', () => {
  const lease = (partition: number, epoch: number) =>
    ({ topic: 't', partition, owner: 'o', epoch, nextOffset: 0, expiresAt: 0 }) as Lease;
  test('a job id: the table, the ranges and lease epochs, the attempt; the same flush the same id', () => {
    const items = [
      { lease: lease(0, 1), fromOffset: 0, nextOffset: 10 },
      { lease: lease(1, 1), fromOffset: 5, nextOffset: 9 },
    ];
    const { prefix, legacyPrefix } = loadNaming('my-pipe', 'shop', 'db.orders$1');
    expect(prefix).toMatch(/^kbd_load_my-pipe_shop_db_orders_1_t[0-9a-f]{16}$/);
    expect(legacyPrefix).toBe('kbd_load_my-pipe_db_orders_1');
    const id = jobIdOf(prefix, items, 1);
    expect(id).toMatch(/^kbd_load_my-pipe_shop_db_orders_1_t[0-9a-f]{16}_[0-9a-f]{32}_1$/);
    expect(jobIdOf(prefix, items, 1)).toBe(id);
    expect(jobIdOf(prefix, items, 2)).not.toBe(id);
    expect(jobIdOf(prefix, [items[0]!, { ...items[1]!, lease: lease(1, 2) }], 1)).not.toBe(id);
    expect(jobIdOf(prefix, [items[0]!, { ...items[1]!, nextOffset: 10 }], 1)).not.toBe(id);
  });

  test('no two targets share a prefix: one name in two datasets, names that read alike once joined or cut', () => {
    const long = 'x'.repeat(1_000);
    const named = [
      loadNaming('p', 'eu_x', 'orders'),
      loadNaming('p', 'us_x', 'orders'),
      loadNaming('p', 'a_b', 'c'),
      loadNaming('p', 'a', 'b_c'),
      loadNaming('p_a', 'b', 'c'),
      loadNaming('p', 'a.b', 'c'),
      loadNaming('p', 'd', `${long}1`),
      loadNaming('p', 'd', `${long}2`),
    ];
    expect(new Set(named.map((n) => n.prefix)).size).toBe(named.length);
    // The last release's prefixes collide in exactly those cases.
    expect(named[0]!.legacyPrefix).toBe(named[1]!.legacyPrefix);
    for (const n of named) expect(jobIdOf(n.prefix, [], 99).length).toBeLessThanOrEqual(1_024);
  });

  test('paced through the day: its share of the time gone plus a run’s burst, never more than the day', () => {
    const midnight = Date.UTC(2026, 11, 4);
    expect(loadsAllowed(midnight, 1000, 3)).toBe(3);
    expect(loadsAllowed(midnight + 12 * 3_600_000, 1000, 3)).toBe(503);
    expect(loadsAllowed(midnight + 86_399_999, 1000, 3)).toBe(1000);
  });

  const env = {
    PIPELINE_ID: 'p',
    GOOGLE_CLOUD_PROJECT: 'proj',
    KAFKA_BROKERS: '127.0.0.1:9092',
    KAFKA_TOPICS: 'orders',
    BQ_DATASET: 'd',
    BQ_TABLE: 't',
    DEAD_LETTER_TOPIC: 'dead-letters',
    BQ_SCHEMA_FILE: 'schema/target.schema.json',
    BQ_WRITE_MODE: 'load',
  };
  test('the loads a run may submit: the day’s budget over the day’s runs of every task', () => {
    expect(parseConfig(env).bigquery.load).toEqual({
      jobsPerTablePerDay: 1000,
      schedulePeriodSeconds: 300,
      loadsPerRun: 3,
    });
    expect(
      parseConfig({ ...env, CLOUD_RUN_TASK_COUNT: '2', SCHEDULE_PERIOD_SECONDS: '600' }).bigquery.load
        ?.loadsPerRun,
    ).toBe(3);
  });

  test('a schedule that leaves a run no load is refused at start, naming the variables', () => {
    let thrown: unknown;
    try {
      parseConfig({ ...env, SCHEDULE_PERIOD_SECONDS: '60', CLOUD_RUN_TASK_COUNT: '2' });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).variable).toBe('LOAD_JOBS_PER_TABLE_PER_DAY');
    expect((thrown as Error).message).toMatch(
      /1440 runs \(SCHEDULE_PERIOD_SECONDS=60\) of 2 tasks \(CLOUD_RUN_TASK_COUNT\)/,
    );
    expect(() => parseConfig({ ...env, LOAD_JOBS_PER_TABLE_PER_DAY: '1501' })).toThrow(
      /LOAD_JOBS_PER_TABLE_PER_DAY/,
    );
  });
});
