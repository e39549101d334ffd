/**
 * The crash matrix, for one write mode: the real job, killed by its own fault hook at each named point
 * twice, frozen there once as a zombie (SIGSTOP: its leases lapse, another run takes over, then SIGCONT),
 * then stopped from outside at random moments (15, or KBD_CRASH_KILLS; SIGKILL, and every third a SIGTERM:
 * a run, a recovery among them, cut short by its stop), all while a producer writes; then run to completion. Afterwards every produced offset must be in the table or the dead-letter
 * topic (G1), no checkpoint ever went back (G6), `verify` finds no hole, and in the exactly-once modes (merge,
 * storage-write, load) no row is in the table twice (G2) and the error table, which the drain writes in those
 * modes, holds each bad record exactly once too. One file per mode (test/e2e/crash-matrix-*.test.ts), so that
 * the modes run side by side.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import type { GoogleClients } from '../../functions/google/clients.js';
import {
  checkpointsOf,
  createPipeline,
  deadLetterOffsets,
  e2eClients,
  leasesFree,
  ledgerOf,
  type Pipeline,
  runJob,
  runVerify,
  startJob,
  tableOffsets,
  waitFor,
} from './job.js';
import { startProducer } from './kafka.js';

// 15 in CI (the fault e2e tests take their share of its time); raise it for longer runs: KBD_CRASH_KILLS=200.
const randomKills = Number(process.env.KBD_CRASH_KILLS ?? 15);
const repeatsPerPoint = 2;

/** The fault points of each write mode (KBD_FAULT_POINT), in the order a run passes them. */
export const crashPoints = {
  merge: [
    'after-stage',
    'after-write',
    'after-merge-before-commit',
    'after-error-table',
    'after-dead-letter-before-commit',
    'mid-commit',
  ],
  'storage-write': ['after-append', 'after-finalize', 'after-intent', 'after-batch-commit', 'mid-commit'],
  'insert-all': ['after-write', 'after-dead-letter-before-commit', 'mid-commit'],
  // Before the intent (its dead letters written), after it, after the job is submitted, after it is done,
  // and in the commit.
  load: ['after-error-table', 'after-intent', 'after-load-submitted', 'after-load-done', 'mid-commit'],
  // Its dead letters into the error table and to Pub/Sub, then the rows appended (one stream a flush).
  cdc: ['after-error-table', 'after-dead-letter-before-commit', 'after-append', 'mid-commit'],
} as const;

/**
 * The modes whose matrix freezes a zombie at each point: those that record intents a later run finishes
 * (storage-write's streams, load's jobs, cdc's appends). merge and insert-all write idempotently by origin
 * with no intent; their zombies are restart-safety's, and on the emulator their matrix's MERGEs slow down
 * as the producer outlasts the longer phases (merge's matrix took 860 s with zombies, against some 300).
 */
export const zombieModes: readonly string[] = ['storage-write', 'load', 'cdc'];

/** What the fault phases did: per point, the runs it killed and the zombies it froze; runs not killed. */
export interface FaultPhases {
  readonly faultDeaths: Map<string, number>;
  readonly zombies: Map<string, number>;
  readonly survived: string[];
  readonly kills: number;
  readonly terms: number;
}

/**
 * The phases every mode's matrix puts the job through while its producer writes: killed at each point
 * (×repeatsPerPoint), frozen at each point once and woken after another run took its partitions over, then
 * stopped from outside at random moments (every third a SIGTERM, the rest SIGKILL).
 */
export async function faultPhases(
  clients: GoogleClients,
  pipeline: Pipeline,
  points: readonly string[],
  zombiesToo: boolean,
): Promise<FaultPhases> {
  const faultDeaths = new Map<string, number>();
  const zombies = new Map<string, number>();
  // The fault runs that were not killed, and how they ended: for the message if a point never killed one.
  const survived: string[] = [];
  const leasesLapse = () =>
    waitFor('leases of the previous run to expire', () => leasesFree(clients, pipeline), 30_000);
  for (const point of points) {
    for (let i = 0; i < repeatsPerPoint; i++) {
      await leasesLapse();
      const job = startJob({ ...pipeline.env, KBD_FAULT_POINT: point });
      const { signal, code } = await job.exited;
      if (signal === 'SIGKILL') faultDeaths.set(point, (faultDeaths.get(point) ?? 0) + 1);
      else {
        const summary = job.summary() as
          | { stopReason?: string; recordsRead?: number; error?: string }
          | undefined;
        survived.push(
          `${point}: exit ${code}, ${summary?.stopReason}, ${summary?.recordsRead} read${summary?.error ? `, ${summary.error}` : ''}`,
        );
      }
    }
  }
  for (const point of zombiesToo ? points : []) {
    await leasesLapse();
    const zombie = startJob({ ...pipeline.env, KBD_FAULT_POINT: point, KBD_FAULT_ACTION: 'stop' });
    let ended = false;
    void zombie.exited.then(() => {
      ended = true;
    });
    const frozen = await waitFor(
      `a run to freeze at ${point}`,
      async () => (ended ? 'ended' : processState(zombie.child.pid!) === 'T' ? 'frozen' : undefined),
      60_000,
    );
    if (frozen === 'frozen') {
      zombies.set(point, (zombies.get(point) ?? 0) + 1);
      // Its leases lapse (it cannot renew them); a run takes its partitions over; then it wakes.
      await leasesLapse();
      // A short takeover: what matters is that it finishes what the zombie left and moves on.
      await runJob({ ...pipeline.env, DRAIN_BUDGET_SECONDS: '5' });
      zombie.child.kill('SIGCONT');
    }
    await zombie.exited;
  }
  let kills = 0;
  let terms = 0;
  while (kills + terms < randomKills) {
    const job = startJob(pipeline.env);
    await new Promise((resolve) => setTimeout(resolve, 200 + Math.random() * 1800));
    const alive = job.child.exitCode === null && job.child.signalCode === null;
    const term = (kills + terms) % 3 === 2;
    job.child.kill(term ? 'SIGTERM' : 'SIGKILL');
    await job.exited;
    if (alive && term) terms++;
    else if (alive) kills++;
  }
  return { faultDeaths, zombies, survived, kills, terms };
}

/** Watches the pipeline's checkpoints every 150 ms until stopped: every move back it saw (G6). */
export function watchCheckpoints(clients: GoogleClients, pipeline: Pipeline) {
  const seen = new Map<number, number>();
  const regressions: string[] = [];
  let watching = true;
  // A read that fails ends the watch; stop() throws it (a test that failed first never calls stop(), and
  // its closed clients must not leave a rejection no one handles).
  const watcher = (async () => {
    while (watching) {
      const found = await checkpointsOf(clients, pipeline).catch((error: unknown) => {
        watching = false;
        return error as Error;
      });
      if (found instanceof Error) return found;
      for (const [p, offset] of found) {
        if (offset === null) continue;
        if (offset < (seen.get(p) ?? 0)) regressions.push(`partition ${p}: ${seen.get(p)} -> ${offset}`);
        seen.set(p, Math.max(offset, seen.get(p) ?? 0));
      }
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  })();
  return {
    async stop(): Promise<string[]> {
      watching = false;
      const failed = await watcher;
      if (failed !== undefined) throw failed;
      return regressions;
    },
  };
}

/** A process's state letter from /proc (T: stopped). */
export function processState(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
  } catch {
    return undefined;
  }
}

/** Every point killed a run, and froze one (where the mode's matrix freezes), at least once. */
export function expectEveryPoint(points: readonly string[], phases: FaultPhases, zombiesToo: boolean): void {
  for (const point of points) {
    expect(
      phases.faultDeaths.get(point) ?? 0,
      `fault point ${point}; runs not killed: ${phases.survived.join(' | ')}`,
    ).toBeGreaterThan(0);
    if (zombiesToo) expect(phases.zombies.get(point) ?? 0, `no run froze at ${point}`).toBeGreaterThan(0);
  }
}

/** The crash matrix of one write mode, as a test of the calling file. */
export async function crashMatrix(mode: Exclude<keyof typeof crashPoints, 'cdc'>): Promise<void> {
  const clients = await e2eClients();
  const points = crashPoints[mode];
  describe(`crash matrix, ${mode} mode`, () => {
    const exactlyOnce = mode !== 'insert-all';
    const zombies = zombieModes.includes(mode) ? ' and a zombie at each' : '';
    test(`every fault point ×${repeatsPerPoint}${zombies}, ${randomKills} random SIGKILLs and SIGTERMs: no hole${exactlyOnce ? ', no duplicate' : ''}`, async () => {
      const partitions = 3;
      // load mode: batches of 5, so that a run's one load spans several batches of a partition (issue #67);
      // the kills then fall between them, mid-upload.
      const batchMax = mode === 'load' ? 5 : 25;
      const pipeline = await createPipeline(clients, partitions, {
        BQ_WRITE_MODE: mode,
        LEASE_TTL_SECONDS: '3',
        BATCH_MAX_RECORDS: String(batchMax),
        DRAIN_BUDGET_SECONDS: '20',
        // load mode: one run a day, so that every run may take the day's loads. Paced through the day
        // (load-quota.ts), the matrix's hundreds of small loads starved before about 01:00 UTC: the clean
        // runs stalled on the quota, not on a fault. The pacing has tests of its own (load-mode.test.ts).
        LOAD_JOBS_PER_TABLE_PER_DAY: '1500',
        SCHEDULE_PERIOD_SECONDS: '86400',
      });
      const producer = startProducer(pipeline.topic, partitions, {
        batch: 1,
        pauseMs: 250,
        malformedEvery: 13,
      });

      const watcher = watchCheckpoints(clients, pipeline);

      const phases = await faultPhases(clients, pipeline, points, zombieModes.includes(mode));
      const produced = await producer.stop();

      // What the clean runs said, for the failure message if they never catch up (seen once in merge mode).
      const cleanRuns: string[] = [];
      await waitFor(
        'clean runs to catch up',
        async () => {
          const { code, summary, lines } = await runJob(pipeline.env);
          const done = summary.partitions.filter((p) => p.skipped === undefined && p.lag === 0);
          cleanRuns.push(
            JSON.stringify({
              code,
              error: summary.error,
              stopReason: summary.stopReason,
              durationMs: summary.durationMs,
              recordsRead: summary.recordsRead,
              partitions: summary.partitions.map((p) => [p.partition, p.lag, p.skipped, p.waiting]),
              // A failed run's last words before its summary (a run that hung says little in it).
              ...(code === 0 ? {} : { log: lines.slice(-8, -1).map((l) => l.message ?? l.unparsed) }),
            }),
          );
          expect(code, cleanRuns.at(-1)).toBe(0);
          return done.length === partitions && summary.stopReason === 'caught_up';
        },
        // Generous: before the emulator's MERGE was patched (googlesqlite-merge.patch) merge mode caught up
        // slowly here, its MERGE growing with the table.
        600_000,
      ).catch((error: unknown) => {
        throw new Error(`${(error as Error).message}; the clean runs: ${cleanRuns.slice(-5).join(' | ')}`);
      });
      const regressions = await watcher.stop();

      // Each fault point really killed the job and froze one at least once (it can miss only if a run had
      // nothing to do).
      expectEveryPoint(points, phases, zombieModes.includes(mode));
      expect(regressions).toEqual([]);

      const table = await tableOffsets(clients, pipeline);
      const letters = await deadLetterOffsets(clients, pipeline);
      let duplicateRows = 0;
      let duplicateLetters = 0;
      /** The most records one commit of a partition took (a streamed load's: the run's whole range). */
      let widestCommit = 0;
      for (let p = 0; p < partitions; p++) {
        const expected = produced.offsets.get(p)!;
        const inTable = table.get(p) ?? [];
        const inLetters = letters.offsets.get(p) ?? [];
        const tableSet = new Set(inTable);
        const letterSet = new Set(inLetters);
        expect(
          [...expected.keys()].filter((o) => !tableSet.has(o) && !letterSet.has(o)),
          `partition ${p} lost`,
        ).toEqual([]);
        expect(
          [...tableSet].filter((o) => letterSet.has(o)),
          `partition ${p} in both`,
        ).toEqual([]);
        expect(
          inTable.filter((o) => expected.get(o) !== false),
          `partition ${p} rows that are not valid records`,
        ).toEqual([]);
        duplicateRows += inTable.length - tableSet.size;
        duplicateLetters += inLetters.length - letterSet.size;
        const ledger = await ledgerOf(clients, pipeline, p);
        for (let i = 1; i < ledger.length; i++) expect(ledger[i]!.from).toBe(ledger[i - 1]!.to);
        for (const entry of ledger) widestCommit = Math.max(widestCommit, entry.to - entry.from);
        expect(ledger.at(-1)!.to).toBe(Math.max(...expected.keys()) + 1);
      }

      let errorTableDuplicates = 0;
      if (exactlyOnce) {
        // The error table the drain writes: each malformed record exactly once, whatever the crashes.
        const [rows] = await clients.bigquery.query({
          query: `SELECT _kafka_partition AS p, _kafka_offset AS o FROM \`${pipeline.dataset}.${pipeline.table}_dead_letters\``,
        });
        for (let p = 0; p < partitions; p++) {
          const offsets = rows
            .filter((r: { p: number }) => Number(r.p) === p)
            .map((r: { o: number }) => Number(r.o));
          const malformed = [...produced.offsets.get(p)!].filter(([, bad]) => bad).map(([o]) => o);
          errorTableDuplicates += offsets.length - new Set(offsets).size;
          expect(new Set(offsets), `partition ${p} error table`).toEqual(new Set(malformed));
        }
        expect(errorTableDuplicates).toBe(0);
      }

      // In load mode some run's one load took several batches of a partition, as the crash points above did.
      if (mode === 'load') expect(widestCommit).toBeGreaterThan(2 * batchMax);
      const verify = await runVerify(pipeline.env);
      for (const verdict of verify.verdicts) expect(verdict).toMatchObject({ missingRows: 0, gaps: [] });
      if (exactlyOnce) {
        expect(duplicateRows).toBe(0);
        expect(verify.code).toBe(0);
      } else {
        expect(verify.code).toBe(duplicateRows === 0 ? 0 : 1);
      }
      console.log(
        `${mode}: fault deaths ${JSON.stringify(Object.fromEntries(phases.faultDeaths))}, zombies ${JSON.stringify(Object.fromEntries(phases.zombies))}, ` +
          `${phases.kills} random SIGKILLs and ${phases.terms} SIGTERMs, ` +
          `${produced.total} records produced, ${duplicateRows} duplicate rows, widest commit ${widestCommit} records, ` +
          `${letters.messages.length} dead letters (${duplicateLetters} published twice: Pub/Sub publish is at least once)`,
      );
    });
  });
}
