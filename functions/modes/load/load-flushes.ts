import { crashPoint } from '../../kernel/crash-points.js';
import { DrainError, FencedError } from '../../kernel/errors.js';
import { createFlushQueue, type Waiting } from '../../kernel/flush-queue.js';
import type { Logger } from '../../kernel/logger.js';
import type { Checkpoints, CommitIntent, DeadLetters, Lease } from '../../kernel/ports.js';
import type { DeadLetter } from '../../kernel/records.js';
import { defaultRetryPolicy, type RetryPolicy, withRetry } from '../../kernel/retry.js';
import { publishDeadLetters } from '../dead-letters.js';
import { fencedMembers, flushMaxPartitions } from '../storage-write/stream-flusher.js';
import { claimExisting, jobIdOf, type LoadJobState, waitForJob } from './load-jobs.js';
import { type LoadItem, linesOf, refusedRows, rowsIn } from './load-lines.js';
import type { LoadTarget } from './load-targets.js';

/**
 * `load` mode flush by flush (a range whose run's streamed load failed is read again so, which names the
 * rows BigQuery refuses), per flush (the batches of every partition ready at once):
 *
 * 1. the day's load budget of each table the flush feeds is asked for one load; none left: the partitions wait;
 * 2. each table's job id (the table, the flush's ranges and lease epochs, the attempt) is recorded, every
 *    one, as the intent of every affected partition document in one fenced write: all or none;
 * 3. each job is submitted under its id by upload (a lost answer: submitted again under the same id, which
 *    BigQuery refuses with 409 and never loads twice) and waited for;
 * 4. all done: (the drain) each partition's checkpoint moves, clearing its intent, its ledger entry naming
 *    the jobs. A job failed on rows BigQuery refused (named by their byte position): those rows become
 *    `rejected` dead letters (error table, Pub/Sub) and the rest of its table's part is loaded by the next
 *    attempt, under a new intent that names the done tables' jobs too (load-targets.ts: not loaded again).
 */
export interface LoadFlushesOptions {
  /** One table, or a group's (routes sharing a topic by `when`), in the group's order. */
  readonly targets: readonly LoadTarget[];
  readonly checkpoints: Checkpoints;
  readonly deadLetters: DeadLetters;
  readonly leaseTtlMs: number;
  /** A flush takes the batches waiting up to about this many bytes. */
  readonly flushMaxBytes: number;
  readonly logger: Logger;
  readonly now: () => number;
  readonly retry?: RetryPolicy;
}

export interface Loaded {
  readonly lease: Lease;
  readonly jobIds: readonly string[];
  readonly rows: number;
  readonly rejected: number;
}

export function createLoadFlushes(options: LoadFlushesOptions) {
  const { logger, targets } = options;
  const retry = options.retry ?? defaultRetryPolicy;
  type Member = Waiting<LoadItem, Loaded>;

  /** The job of one attempt: waited for until it is done or failed. */
  async function loadAttempt(target: number, id: string, data: Buffer, signal?: AbortSignal) {
    const { jobs, naming } = targets[target]!;
    const created = await withRetry(
      retry,
      () => jobs.submit(id, data, signal),
      (error, attempt, delayMs) =>
        logger.warn('submitting the load job failed; submitting it again under its id', {
          error,
          attempt,
          delayMs,
          job: id,
        }),
      signal,
    );
    // A lost answer submitted again finds its own job (409); another table's job under the id stops here.
    if (!created) await claimExisting(jobs, id, (await naming()).table);
    crashPoint('after-load-submitted');
    return waitForJob(jobs, id, Number.POSITIVE_INFINITY, signal);
  }

  async function flushGroup(group: Member[]): Promise<void> {
    const { signal } = group[0]!.item;
    let members = group;
    /** Per target, the job that loaded its part of the flush. */
    const done = new Map<number, string>();
    for (let attempt = 1; members.length > 0; attempt++) {
      const items = members.map((m) => m.item);
      const pending = targets.map((_, t) => t).filter((t) => !done.has(t) && rowsIn(items, t) > 0);
      if (pending.length === 0) {
        for (const m of members)
          m.resolve({ lease: m.item.lease, jobIds: [...done.values()], ...countsOf(m.item) });
        return;
      }
      const ids = new Map<number, string>();
      for (const t of pending) {
        await targets[t]!.quota.take();
        ids.set(t, jobIdOf((await targets[t]!.naming()).prefix, items, attempt));
      }
      const named = [...done.values(), ...ids.values()];
      let leases: Lease[];
      try {
        leases = await options.checkpoints.recordIntents(
          items.map((item) => ({ lease: item.lease, intent: intentOf(item, named) })),
          options.leaseTtlMs,
        );
      } catch (error) {
        if (!(error instanceof FencedError)) throw error;
        const fenced = await fencedMembers(members, options.checkpoints, options.leaseTtlMs);
        for (const m of fenced) m.reject(error);
        logger.warn('a partition of the flush was taken over; loading the others', { fenced: fenced.length });
        members = members.filter((m) => !fenced.includes(m));
        continue;
      }
      crashPoint('after-intent');
      const began = options.now();
      const outcomes = await Promise.all(
        pending.map((t) => loadAttempt(t, ids.get(t)!, linesOf(items, t), signal)),
      );
      for (const [n, t] of pending.entries()) {
        const outcome = outcomes[n]!;
        if (outcome.state === 'done') done.set(t, ids.get(t)!);
        else await refuse(items, t, ids.get(t)!, outcome);
      }
      if (pending.every((t) => done.has(t))) {
        crashPoint('after-load-done');
        logger.debug('flush loaded', { jobs: named, loadMs: options.now() - began });
      }
      // Back to the intent (the tables left, new job ids), fenced on the lease as this one left it.
      for (const [i, m] of members.entries()) m.item.lease = leases[i]!;
    }
  }

  /** A failed job's refused rows become dead letters; a job that failed otherwise fails the flush. */
  async function refuse(items: LoadItem[], target: number, id: string, outcome: LoadJobState) {
    if (outcome.state !== 'failed')
      throw new DrainError(`load job ${id} ended ${outcome.state}`, { retriable: true });
    const refused = refusedRows(items, target, outcome.badRows);
    if (refused.length === 0 || refused.length < outcome.badRows.size) {
      throw new DrainError(`bigquery load job ${id} failed: ${outcome.message}`, {
        retriable: false,
        code: 'load_failed',
      });
    }
    // Rows BigQuery refused: dead letters now; the rest loaded by the next attempt.
    const letters: DeadLetter[] = refused.map(({ item, index, reason }) => ({
      record: item.parts[target]!.rows[index]!.row.record,
      kind: 'rejected',
      message: reason,
    }));
    await targets[target]!.errorTable.write(letters, new Date(options.now()));
    await publishDeadLetters([...letters], options.deadLetters);
    for (const [n, { item }] of refused.entries()) item.rejected.push(letters[n]!);
    for (const item of new Set(refused.map((r) => r.item))) {
      const gone = new Set(refused.filter((r) => r.item === item).map((r) => r.index));
      const part = item.parts[target]!;
      part.rows = part.rows.filter((_, i) => !gone.has(i));
    }
    logger.warn('the load refused rows: they are dead letters, the rest is loaded again', {
      job: id,
      refused: refused.length,
    });
  }

  return createFlushQueue<LoadItem, Loaded>(flushGroup, {
    weigh: (item) => item.bytes,
    maxWeight: options.flushMaxBytes,
    maxItems: flushMaxPartitions,
  });
}

function countsOf(item: LoadItem): { rows: number; rejected: number } {
  return { rows: item.parts.reduce((n, p) => n + p.rows.length, 0), rejected: item.rejected.length };
}

function intentOf(item: LoadItem, jobIds: readonly string[]): CommitIntent {
  return {
    streams: [...jobIds],
    fromOffset: item.fromOffset,
    nextOffset: item.nextOffset,
    records: item.records,
    rows: countsOf(item).rows + item.held.rows,
    deadLetters: item.letters + item.rejected.length + item.held.deadLetters,
    tombstones: item.tombstones,
    ...(item.filtered > 0 ? { filtered: item.filtered } : {}),
    lastRecordTimestamp: item.lastRecordTimestamp,
  };
}
