import { crashPoint } from '../../kernel/crash-points.js';
import { DrainError } from '../../kernel/errors.js';
import type { Logger } from '../../kernel/logger.js';
import type { Checkpoints, CommitIntent, Lease } from '../../kernel/ports.js';
import { partitionId } from '../../kernel/records.js';
import { jobIdOf, type LoadJobs, type LoadUpload, waitForJob } from './load-jobs.js';
import type { LoadQuota } from './load-quota.js';

/**
 * One load job for what a task's run reads of a table (issue #67): a resumable upload opened at the first
 * batch with rows (the day's load budget asked once), each batch's lines written to it as the batch is
 * taken (one chunk held in memory, whatever the load's size), then the partition's intent recorded, fenced:
 * the job's id and the range from the partition's checkpoint to the batch's end, with the counts so far.
 * The upload is completed only at `settle`, after the run has read what it will: BigQuery makes the job
 * then; once it is done, the drain commits every partition to its intent's end. A run that stops before
 * makes no job, and the next reads the range again (`recover`: the job missing). A job that fails loads
 * nothing: the partitions are read again, by the flush-by-flush way that names refused rows (load-writer.ts).
 */
export interface LoadStreamOptions {
  readonly jobs: LoadJobs;
  readonly quota: LoadQuota;
  readonly checkpoints: Checkpoints;
  readonly jobPrefix: () => Promise<string>;
  readonly leaseTtlMs: number;
  readonly logger: Logger;
}

/** What one batch adds to its partition's load. */
export interface StreamedBatch {
  readonly lease: Lease;
  readonly fromOffset: number;
  readonly nextOffset: number;
  readonly lines: Buffer;
  /** The counts the partition's commit takes (CommitIntent's), for this batch alone. */
  readonly counts: Omit<CommitIntent, 'streams' | 'fromOffset' | 'nextOffset'>;
}

/** Streamed jobs end so: `recover` tells them from a flush's. */
export const streamedJobSuffix = '_s';

export function createLoadStream(options: LoadStreamOptions) {
  const { jobs, logger } = options;
  let opening: Promise<{ id: string; upload: LoadUpload }> | undefined;
  /** Per partition, the lease as its last intent left it and its range and counts so far. */
  const partitions = new Map<string, { lease: Lease; intent: CommitIntent }>();

  const open = (first: StreamedBatch, signal: AbortSignal): Promise<{ id: string; upload: LoadUpload }> => {
    opening ??= (async () => {
      await options.quota.take();
      const id = `${jobIdOf(await options.jobPrefix(), [first], 1)}${streamedJobSuffix}`;
      const upload = await jobs.open(id, signal);
      if (upload === undefined) throw new DrainError(`load job ${id} exists already`, { retriable: true });
      return { id, upload };
    })();
    return opening.catch((error: unknown) => {
      opening = undefined;
      throw error;
    });
  };

  return {
    /** The batch's lines into the load, then its partition's intent; the lease the intent left. */
    async take(batch: StreamedBatch, signal: AbortSignal): Promise<Lease> {
      const id = partitionId(batch.lease);
      const before = partitions.get(id);
      const sum = (key: 'records' | 'rows' | 'deadLetters' | 'tombstones') =>
        (before?.intent[key] ?? 0) + (batch.counts[key] ?? 0);
      const filtered = (before?.intent.filtered ?? 0) + (batch.counts.filtered ?? 0);
      const load = batch.lines.length > 0 || opening !== undefined ? await open(batch, signal) : undefined;
      if (batch.lines.length > 0) await load!.upload.write(batch.lines, signal);
      const intent: CommitIntent = {
        streams: load === undefined ? [] : [load.id],
        fromOffset: before?.intent.fromOffset ?? batch.fromOffset,
        nextOffset: batch.nextOffset,
        records: sum('records'),
        rows: sum('rows'),
        deadLetters: sum('deadLetters'),
        tombstones: sum('tombstones'),
        ...(filtered > 0 ? { filtered } : {}),
        lastRecordTimestamp: batch.counts.lastRecordTimestamp ?? before?.intent.lastRecordTimestamp ?? null,
      };
      // Nothing to load yet: the batch waits for the run's end with no job to name.
      let lease = batch.lease;
      if (load !== undefined) {
        [lease] = (await options.checkpoints.recordIntents([{ lease, intent }], options.leaseTtlMs)) as [
          Lease,
        ];
        crashPoint('after-intent');
      }
      partitions.set(id, { lease, intent });
      return lease;
    },

    /**
     * Completes the load and waits for its job: the partitions durable now, each with the lease to commit
     * under. A job that did not load throws: nothing is committed, and the next run reads it all again.
     */
    async settle(signal: AbortSignal, budget: AbortSignal = signal): Promise<ReadonlyMap<string, Lease>> {
      const taken = new Map(partitions);
      partitions.clear();
      const load = opening === undefined ? undefined : await opening;
      opening = undefined;
      const durable = new Map([...taken].map(([id, t]) => [id, t.lease]));
      if (load === undefined) return durable;
      try {
        await load.upload.finish(signal);
      } catch (error) {
        // The run's stop while its last chunk was on the wire: the job may be made or not; the next run
        // finds out (recover: done → committed, missing → read again).
        if (!signal.aborted) throw error;
        logger.notice('the run ended while its load was being completed: the next run finishes it', {
          job: load.id,
        });
        return new Map();
      }
      crashPoint('after-load-submitted');
      // Waited for within the budget only: past it, the commits need what is left before the hard stop.
      const outcome = await waitForJob(jobs, load.id, Number.POSITIVE_INFINITY, budget);
      const rows = [...taken.values()].reduce((n, t) => n + t.intent.rows, 0);
      if (outcome.state === 'done') {
        crashPoint('after-load-done');
        logger.debug('run loaded', { job: load.id, bytes: load.upload.bytes, rows });
        return durable;
      }
      if (outcome.state === 'running') {
        // The run's stop came first: the job runs on, and the next run commits it (recover).
        logger.notice("the run's load job is still running at the run's end: the next run commits it", {
          job: load.id,
          rows,
        });
        return new Map();
      }
      // Nothing was loaded: the run fails (a retry is safe) and the partitions are read again, flush by
      // flush, which names the rows BigQuery refuses and loads the others (recover in load-writer.ts).
      const why =
        outcome.state === 'failed'
          ? `failed (${outcome.message}; ${outcome.badRows.size} row(s) refused)`
          : `ended ${outcome.state}`;
      throw new DrainError(
        `the run's load job ${load.id} ${why}: the next run finishes it (a failed load is read again, flush by flush)`,
        { retriable: true, code: 'load_failed' },
      );
    },
  };
}
