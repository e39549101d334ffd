import { crashPoint } from '../../kernel/crash-points.js';
import { DrainError, FencedError, PartitionWaitsError } from '../../kernel/errors.js';
import { createFlushQueue, type Waiting } from '../../kernel/flush-queue.js';
import type { Logger } from '../../kernel/logger.js';
import type { Checkpoints, CommitIntent, DeadLetters, Lease, Writer } from '../../kernel/ports.js';
import { type DeadLetter, type PartitionRef, partitionId } from '../../kernel/records.js';
import { defaultRetryPolicy, type RetryPolicy, withRetry } from '../../kernel/retry.js';
import type { RecordPolicy } from '../../records/classify.js';
import type { ErrorTable, HeldOffsets } from '../../sinks/contracts.js';
import { publishDeadLetters } from '../dead-letters.js';
import { classifyRows, rowTexts } from '../sink-writer.js';
import { createReplays, splitReplayed } from '../storage-write/replay.js';
import { fencedMembers, flushMaxPartitions } from '../storage-write/stream-flusher.js';
import { jobIdOf, type LoadJobState, type LoadJobs, waitForJob } from './load-jobs.js';
import { type LoadItem, lineOf, linesOf, linesOfRows, refusedRows } from './load-lines.js';
import type { LoadQuota } from './load-quota.js';
import { createLoadStream, streamedJobSuffix } from './load-stream.js';

/**
 * `load` mode's way to durability, per flush (the batches of every partition ready at once, one load job
 * into the table for all of them):
 *
 * 1. each batch's dead letters go into the error table (MERGE by origin: none twice) and to Pub/Sub;
 * 2. the table's load budget is asked for one load (load-quota.ts); none left: the partitions wait;
 * 3. the job's id (the table, the flush's ranges and lease epochs, the attempt) is recorded as the intent
 *    of every affected partition document in one fenced write: all or none;
 * 4. the job is submitted under that id by upload (a lost answer: submitted again under the same id, which
 *    BigQuery refuses with 409 and never loads twice) and waited for;
 * 5. done: (the drain) each partition's checkpoint moves, clearing its intent, its ledger entry naming the
 *    job. Failed on rows BigQuery refused (named by their byte position): those rows become `rejected`
 *    dead letters (error table, Pub/Sub) and the rest is loaded by the next attempt, under a new intent.
 *
 * Whoever takes a lease and finds an intent finishes it first (`recover`): a job done is committed; one
 * failed (a failed load loads nothing) or never submitted is read and loaded again; one running is waited
 * for. A job id is never submitted again once an intent names another: a range loads at most once.
 */
export interface LoadWriterOptions {
  readonly jobs: LoadJobs;
  readonly quota: LoadQuota;
  /** What the target and error tables hold of a replayed range (a checkpoint an operator moved back). */
  readonly heldOffsets: (partition: PartitionRef, from: number, to: number) => Promise<HeldOffsets>;
  readonly errorTable: ErrorTable;
  readonly checkpoints: Checkpoints;
  readonly deadLetters: DeadLetters;
  readonly records: RecordPolicy;
  /** The job ids' prefix: the pipeline and the table (`kbd_load_{pipeline}_{table}`). */
  readonly jobPrefix: () => Promise<string>;
  readonly leaseTtlMs: number;
  /** A flush takes the batches waiting up to about this many bytes. */
  readonly flushMaxBytes: number;
  readonly logger: Logger;
  readonly now: () => number;
  readonly retry?: RetryPolicy;
  /** How long `recover` waits for a job an earlier run left running. */
  readonly recoverWaitMs?: number;
  /** One load for what the run reads of the table (load-stream.ts), not one a flush. */
  readonly streamed?: boolean;
}

interface Loaded {
  readonly lease: Lease;
  readonly jobId: string | null;
  readonly rows: number;
  readonly rejected: number;
}

export function createLoadWriter(options: LoadWriterOptions): Writer {
  const { logger, jobs } = options;
  const retry = options.retry ?? defaultRetryPolicy;
  const rowTextOf = rowTexts();
  /** Per partition (and lease epoch), what a replayed range's tables already hold. */
  const replays = createReplays(options.heldOffsets, logger);
  type Member = Waiting<LoadItem, Loaded>;
  const stream = options.streamed ? createLoadStream(options) : undefined;
  /** Partitions whose run's load failed: read again flush by flush, which names the rows BigQuery refuses. */
  const flushByFlush = new Set<string>();

  /** The job of one attempt: waited for until it is done or failed. */
  async function loadAttempt(id: string, items: LoadItem[], signal?: AbortSignal): Promise<LoadJobState> {
    const { data } = linesOf(items);
    await withRetry(
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
    crashPoint('after-load-submitted');
    return waitForJob(jobs, id, Number.POSITIVE_INFINITY, signal);
  }

  async function flushGroup(group: Member[]): Promise<void> {
    const { signal } = group[0]!.item;
    let members = group;
    for (let attempt = 1; members.length > 0; attempt++) {
      const items = members.map((m) => m.item);
      if (items.every((i) => i.rows.length === 0)) {
        for (const m of members)
          m.resolve({ lease: m.item.lease, jobId: null, rows: 0, rejected: m.item.rejected.length });
        return;
      }
      await options.quota.take();
      const id = jobIdOf(await options.jobPrefix(), items, attempt);
      let leases: Lease[];
      try {
        leases = await options.checkpoints.recordIntents(
          items.map((item) => ({ lease: item.lease, intent: intentOf(item, id) })),
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
      const outcome = await loadAttempt(id, items, signal);
      if (outcome.state === 'done') {
        crashPoint('after-load-done');
        logger.debug('flush loaded', {
          job: id,
          rows: items.reduce((n, i) => n + i.rows.length, 0),
          loadMs: options.now() - began,
        });
        for (const [i, m] of members.entries())
          m.resolve({
            lease: leases[i]!,
            jobId: id,
            rows: m.item.rows.length,
            rejected: m.item.rejected.length,
          });
        return;
      }
      if (outcome.state !== 'failed')
        throw new DrainError(`load job ${id} ended ${outcome.state}`, { retriable: true });
      const refused = refusedRows(items, outcome.badRows);
      if (refused.length === 0 || refused.length < outcome.badRows.size) {
        throw new DrainError(`bigquery load job ${id} failed: ${outcome.message}`, {
          retriable: false,
          code: 'load_failed',
        });
      }
      // Rows BigQuery refused: dead letters now; the rest loaded by the next attempt.
      await moveRefused(refused);
      logger.warn('the load refused rows: they are dead letters, the rest is loaded again', {
        job: id,
        refused: refused.length,
      });
      // Back to the intent (a new job id, the new counts), fenced on the lease as this one left it.
      for (const [i, m] of members.entries()) m.item.lease = leases[i]!;
    }
  }

  /** Rows BigQuery refused become `rejected` dead letters (error table, Pub/Sub), out of their items. */
  async function moveRefused(refused: { item: LoadItem; index: number; reason: string }[]): Promise<void> {
    const letters: DeadLetter[] = refused.map(({ item, index, reason }) => ({
      record: item.rows[index]!.row.record,
      kind: 'rejected',
      message: reason,
    }));
    await options.errorTable.write(letters, new Date(options.now()));
    await publishDeadLetters([...letters], options.deadLetters);
    for (const [n, { item }] of refused.entries()) item.rejected.push(letters[n]!);
    for (const item of new Set(refused.map((r) => r.item))) {
      const gone = new Set(refused.filter((r) => r.item === item).map((r) => r.index));
      item.rows = item.rows.filter((_, i) => !gone.has(i));
    }
  }

  const queue = createFlushQueue<LoadItem, Loaded>(flushGroup, {
    weigh: (item) => item.bytes,
    maxWeight: options.flushMaxBytes,
    maxItems: flushMaxPartitions,
  });

  return {
    async recover(lease, signal) {
      const intent = lease.intent;
      if (!intent) return {};
      const id = intent.streams[0];
      const log = logger.child({ topic: lease.topic, partition: lease.partition, job: id });
      if (id === undefined || !id.startsWith('kbd_load_')) {
        throw new DrainError(
          `${lease.topic}:${lease.partition} holds an intent another write mode recorded (${intent.streams.join(', ')}): ` +
            'run that mode once to finish it before switching to load',
          { retriable: false, code: 'intent_other_mode' },
        );
      }
      // Waited for at most recoverWaitMs, and never past the run's stop: a job BigQuery keeps queued
      // must not hold the run beyond its budget.
      const outcome = await waitForJob(jobs, id, options.recoverWaitMs ?? 60_000, signal);
      if (outcome.state === 'done') {
        log.notice('a load recorded by an earlier run was done', {
          from: intent.fromOffset,
          to: intent.nextOffset,
          rows: intent.rows,
        });
        return { commit: intent };
      }
      if (outcome.state === 'running')
        throw new PartitionWaitsError(`load job ${id}, recorded by an earlier run, is still running`);
      if (outcome.state === 'failed' && id.endsWith(streamedJobSuffix)) flushByFlush.add(partitionId(lease));
      log.warn('a load recorded by an earlier run never loaded: the range is read again', {
        from: intent.fromOffset,
        to: intent.nextOffset,
        state: outcome.state,
      });
      return { startAt: intent.fromOffset };
    },

    begin: replays.begin,

    settle: async (hard, budget) => stream?.settle(hard, budget) ?? new Map(),

    async write(batch, signal) {
      const ingestedAt = new Date(options.now());
      const { records } = batch;
      const { fresh, heldRows, heldLetters } = splitReplayed(records, replays.of(batch.lease));
      const { rows, letters, tombstones, filtered } = await classifyRows(
        fresh,
        options.records,
        ingestedAt,
        rowTextOf(options.records),
      );
      if (letters.length > 0) {
        await options.errorTable.write(letters, ingestedAt, signal);
        crashPoint('after-error-table');
        await publishDeadLetters(letters, options.deadLetters);
      }
      if (stream !== undefined && !flushByFlush.has(partitionId(batch.lease))) {
        const counts = {
          records: records.length,
          rows: rows.length + heldRows,
          deadLetters: letters.length + heldLetters,
          tombstones,
          ...(filtered > 0 ? { filtered } : {}),
          lastRecordTimestamp: records[records.length - 1]!.timestamp,
        };
        const lease = await stream.take({ ...batch, lines: linesOfRows(rows), counts }, signal);
        return { ...counts, lease, deferred: true };
      }
      const lines = rows.map((row) => ({ row, line: lineOf(row) }));
      const loaded = await queue.add({
        lease: batch.lease,
        fromOffset: batch.fromOffset,
        nextOffset: batch.nextOffset,
        records: records.length,
        tombstones,
        filtered,
        lastRecordTimestamp: records[records.length - 1]!.timestamp,
        rows: lines,
        letters: letters.length,
        rejected: [],
        held: { rows: heldRows, deadLetters: heldLetters },
        bytes: lines.reduce((n, l) => n + l.line.length, 0),
        signal,
      });
      return {
        rows: loaded.rows + heldRows,
        deadLetters: letters.length + loaded.rejected + heldLetters,
        tombstones,
        ...(filtered > 0 ? { filtered } : {}),
        ...(loaded.jobId === null ? {} : { lease: loaded.lease, streams: [loaded.jobId] }),
      };
    },
  };
}

function intentOf(item: LoadItem, jobId: string): CommitIntent {
  return {
    streams: [jobId],
    fromOffset: item.fromOffset,
    nextOffset: item.nextOffset,
    records: item.records,
    rows: item.rows.length + item.held.rows,
    deadLetters: item.letters + item.rejected.length + item.held.deadLetters,
    tombstones: item.tombstones,
    ...(item.filtered > 0 ? { filtered: item.filtered } : {}),
    lastRecordTimestamp: item.lastRecordTimestamp,
  };
}
