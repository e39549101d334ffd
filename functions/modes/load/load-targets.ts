import { DrainError, PartitionWaitsError } from '../../kernel/errors.js';
import type { Logger } from '../../kernel/logger.js';
import type { Lease, Recovery } from '../../kernel/ports.js';
import type { PartitionRef } from '../../kernel/records.js';
import type { RecordPolicy } from '../../records/classify.js';
import type { ErrorTable, HeldOffsets } from '../../sinks/contracts.js';
import { type LoadJobState, type LoadJobs, type LoadNaming, sameTable, waitForJob } from './load-jobs.js';
import type { LoadQuota } from './load-quota.js';

/**
 * The tables a `load` writer loads (one, or a group's: routes sharing a topic by `when`), and what an
 * intent an earlier run left comes to across them. An intent names every table's job of its range; each
 * job is atomic, but the jobs of one range are not one: a run may die with one table's job done and
 * another's never made. The range is then read again as a replay (`Recovery.heldUntil`, kept in the
 * partition's `replayUntil`): what the tables hold of it, asked of the tables themselves, is counted and
 * not loaded again, whatever the routes now say and however often that recovery is cut short.
 */
export interface LoadTarget {
  readonly jobs: LoadJobs;
  readonly quota: LoadQuota;
  readonly errorTable: ErrorTable;
  readonly records: RecordPolicy;
  /** How its jobs are named, and its table (load-jobs.ts `loadNaming`). */
  readonly naming: () => Promise<LoadNaming>;
  /** What the table and its error table hold of a replayed range (a checkpoint an operator moved back). */
  readonly heldOffsets: (partition: PartitionRef, from: number, to: number) => Promise<HeldOffsets>;
}

/** Streamed jobs (one a run and table, load-stream.ts) end so: `recover` tells them from a flush's. */
export const streamedJobSuffix = '_s';

/** A job id's prefix (its table's), as jobIdOf and the streamed suffix spell it. */
export function prefixOfJob(jobId: string): string {
  return jobId.replace(/_[0-9a-f]{32}_\d+(_s)?$/, '');
}

/** What every target's table holds of a replayed range, together (a group's offsets are each in one). */
export async function heldInTargets(
  targets: readonly LoadTarget[],
  partition: PartitionRef,
  from: number,
  to: number,
): Promise<HeldOffsets> {
  const held = await Promise.all(targets.map((t) => t.heldOffsets(partition, from, to)));
  return {
    rows: new Map(held.flatMap((h) => [...h.rows])),
    deadLetters: new Map(held.flatMap((h) => [...h.deadLetters])),
  };
}

/**
 * An entry of an intent: a job id, or (the last release's intents only) `{job id}<{offset}`, a job an
 * earlier run left done whose table holds the range's records below that offset.
 */
function entryOf(entry: string): { readonly id: string; readonly until?: number } {
  const at = entry.lastIndexOf('<');
  return at < 0 ? { id: entry } : { id: entry.slice(0, at), until: Number(entry.slice(at + 1)) };
}

/**
 * The data of a job that fences an id (`fenceJob`): a line BigQuery refuses (not a JSON object), so the
 * job fails and loads nothing.
 */
const fencingLine = Buffer.from('"kafka-bigquery-drain: this load job id was fenced by a later lease"\n');

export interface RecoverOptions {
  readonly targets: readonly LoadTarget[];
  readonly logger: Logger;
  /** How long `recover` waits for a job an earlier run left running. */
  readonly recoverWaitMs?: number;
}

/** What recovering an intent leaves the run besides the drain's `Recovery`. */
export interface HalfDone {
  /** A run's streamed load failed: the range is loaded flush by flush, which names refused rows. */
  readonly streamedFailed?: boolean;
}

/**
 * What an intent an earlier run left comes to: every job done, committed; one still running, the
 * partition waits; else every job never made is fenced (`fenceJob`: a run frozen past its lease cannot
 * make it later) and the range is read again (`startAt`), as a replay up to where the tables whose jobs
 * were done hold it (`heldUntil`).
 */
export async function recoverIntent(
  options: RecoverOptions,
  lease: Lease,
  signal?: AbortSignal,
): Promise<Recovery & HalfDone> {
  const intent = lease.intent;
  if (!intent) return {};
  const entries = intent.streams.map(entryOf);
  const log = options.logger.child({ topic: lease.topic, partition: lease.partition, jobs: intent.streams });
  if (entries.length === 0 || entries.some((e) => !e.id.startsWith('kbd_load_'))) {
    throw new DrainError(
      `${lease.topic}:${lease.partition} holds an intent another write mode recorded (${intent.streams.join(', ')}): ` +
        'run that mode once to finish it before switching to load',
      { retriable: false, code: 'intent_other_mode' },
    );
  }
  const namings = await Promise.all(options.targets.map((t) => t.naming()));
  // Waited for at most recoverWaitMs, and never past the run's stop: a job BigQuery keeps queued must not
  // hold the run beyond its budget. A job's state does not depend on its table: any target's port asks.
  const jobs = options.targets[0]!.jobs;
  const outcomes: LoadJobState[] = await Promise.all(
    entries.map(({ id }) => waitForJob(jobs, id, options.recoverWaitMs ?? 60_000, signal)),
  );
  // The last release named two tables of one name in two datasets by one job id: its intent names that id
  // once a table, and the one job loaded one of them. The id's other naming is a job never made.
  for (const [i, e] of entries.entries())
    if (entries.findIndex((f) => f.id === e.id) < i) outcomes[i] = { state: 'missing' };
  const states = outcomes.map((o) => o.state);
  const range = { from: intent.fromOffset, to: intent.nextOffset, rows: intent.rows };
  const targetsOf: number[][] = [];
  for (const [i, e] of entries.entries()) {
    const before = new Set(targetsOf.filter((_, j) => entries[j]!.id === e.id).flat());
    targetsOf.push(tablesOfJob(namings, e.id, outcomes[i]!).filter((t) => !before.has(t)));
  }
  const loaded = loadedUntil(entries, states, targetsOf, intent.nextOffset);
  const heldUntil = Math.max(0, ...loaded.values());
  if (states.every((s) => s === 'done')) {
    log.notice('a load recorded by an earlier run was done', range);
    // The last release's carried jobs may hold records past the range: read as a replay from its end.
    return { commit: intent, ...(heldUntil > intent.nextOffset ? { heldUntil } : {}) };
  }
  const running = entries.find((_, i) => states[i] === 'running');
  if (running !== undefined)
    throw new PartitionWaitsError(`load job ${running.id}, recorded by an earlier run, is still running`);
  const unknown = entries.find((_, i) => states[i] === 'done' && targetsOf[i]!.length === 0);
  if (unknown !== undefined) {
    throw new DrainError(
      `${lease.topic}:${lease.partition}: load job ${unknown.id}, done, loaded a table no route of the topic writes now ` +
        `(the routes changed with a load half done): reading [${intent.fromOffset}, ${intent.nextOffset}) again would load its other tables' part twice; ` +
        'restore the route until the partition has passed the range, or move its checkpoint (seek) past it',
      { retriable: false, code: 'intent_unknown_table' },
    );
  }
  await Promise.all(
    entries.map((e, i) =>
      // (An id the last release named twice is fenced by its job, if made, or by its first naming.)
      states[i] === 'missing' && entries.findIndex((f) => f.id === e.id) === i
        ? fenceJob(options.targets[targetsOf[i]![0] ?? 0]!.jobs, e.id)
        : undefined,
    ),
  );
  const streamedFailed = entries.some((e, i) => states[i] === 'failed' && e.id.endsWith(streamedJobSuffix));
  log.warn('a load recorded by an earlier run never loaded: the range is read again', {
    ...range,
    states,
    ...(loaded.size > 0 ? { loadedTables: loaded.size, heldUntil } : {}),
  });
  return {
    startAt: intent.fromOffset,
    ...(loaded.size > 0 ? { heldUntil } : {}),
    ...(streamedFailed ? { streamedFailed } : {}),
  };
}

/**
 * Takes a job id an intent names and BigQuery never made, by a job that fails and loads nothing: a run
 * frozen past its lease that wakes and completes its upload under that id is then answered 409, finds a
 * failed job, and loads nothing. Without it, that upload would load the range a second time after the
 * next holder of the lease read it again. The id taken meanwhile: by a failed job (another partition of
 * the same load fenced it first) all the same; by a job that may load, the partition waits for the next
 * run, which finds it.
 */
async function fenceJob(jobs: LoadJobs, id: string): Promise<void> {
  if (await jobs.submit(id, fencingLine)) return;
  const state = await waitForJob(jobs, id, 0);
  if (state.state === 'failed') return;
  throw new PartitionWaitsError(
    `load job ${id}, recorded by an earlier run, was made while this run recovered it`,
  );
}

/**
 * Per target, up to where its table holds the range: to the range's end when every job the intent names
 * plainly for it is done (and it has one); else to the furthest of its carried jobs (an earlier run's).
 */
function loadedUntil(
  entries: readonly { readonly id: string; readonly until?: number }[],
  states: readonly string[],
  targetsOf: readonly (readonly number[])[],
  end: number,
): Map<number, number> {
  const loaded = new Map<number, number>();
  for (const t of new Set(targetsOf.flat())) {
    const mine = entries
      .map((e, i) => ({ ...e, done: states[i] === 'done' }))
      .filter((_, i) => targetsOf[i]!.includes(t));
    const plain = mine.filter((e) => e.until === undefined);
    const until =
      plain.length > 0 && plain.every((e) => e.done)
        ? end
        : Math.max(...mine.filter((e) => e.done && e.until !== undefined).map((e) => e.until!));
    if (Number.isFinite(until)) loaded.set(t, until);
  }
  return loaded;
}

/**
 * The targets a job of an intent loads: the one whose table is the job's destination where BigQuery knows
 * the job; else (never made) those whose prefix its id has, this release's or the last's (whose prefix
 * named the table alone: two tables of one name in two datasets both answer).
 */
function tablesOfJob(namings: readonly LoadNaming[], id: string, outcome: LoadJobState): number[] {
  const to = outcome.state === 'missing' ? undefined : outcome.destination;
  const prefix = prefixOfJob(id);
  return namings.flatMap((n, t) =>
    (to !== undefined ? sameTable(n.table, to) : n.prefix === prefix || n.legacyPrefix === prefix) ? [t] : [],
  );
}
