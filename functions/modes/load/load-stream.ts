import { crashPoint } from '../../kernel/crash-points.js';
import { DrainError } from '../../kernel/errors.js';
import type { Logger } from '../../kernel/logger.js';
import type { Checkpoints, CommitIntent, Lease } from '../../kernel/ports.js';
import { partitionId } from '../../kernel/records.js';
import { claimExisting, jobIdOf, type LoadUpload, waitForJob } from './load-jobs.js';
import { type LoadTarget, streamedJobSuffix } from './load-targets.js';

/**
 * One load job a table for what a task's run reads of it (issue #67): a resumable upload opened at the
 * table's first batch with rows (the day's load budget asked once), each batch's lines written to it as
 * the batch is taken (one chunk held in memory, whatever the load's size), then the partition's intent
 * recorded, fenced: every open load's job id (a group's tables: one a table) and the range from the
 * partition's checkpoint to the batch's end, with the counts so far. The uploads are completed only at
 * `settle`, after the run has read what it will, one table after another: BigQuery makes each job then;
 * once all are done, the drain commits every partition to its intent's end. A run that stops before makes
 * no job (or some tables' only: load-targets.ts), and the next reads the range again. A job that fails
 * loads nothing: the partitions are read again, by the flush-by-flush way that names refused rows.
 */
export interface LoadStreamOptions {
  readonly targets: readonly Pick<LoadTarget, 'jobs' | 'quota' | 'naming'>[];
  readonly checkpoints: Checkpoints;
  readonly leaseTtlMs: number;
  readonly logger: Logger;
}

/** What one batch adds to its partition's load. */
export interface StreamedBatch {
  readonly lease: Lease;
  readonly fromOffset: number;
  readonly nextOffset: number;
  /** The batch's lines for each target's table (empty: none). */
  readonly lines: readonly Buffer[];
  /** The counts the partition's commit takes (CommitIntent's), for this batch alone. */
  readonly counts: Omit<CommitIntent, 'streams' | 'fromOffset' | 'nextOffset'>;
}

interface OpenLoad {
  readonly target: number;
  readonly id: string;
  readonly upload: LoadUpload;
}

export function createLoadStream(options: LoadStreamOptions) {
  const { targets, logger } = options;
  /** Per target, its load of the run once opened. */
  const openings = new Map<number, Promise<OpenLoad>>();
  /** Per partition, the lease as its last intent left it and its range and counts so far. */
  const partitions = new Map<string, { lease: Lease; intent: CommitIntent }>();
  /**
   * Batches whose lines may have reached the loads while their intent is not recorded (in flight, or
   * failed, or abandoned at the hard stop): completing the loads then would load records that no commit
   * covers, and the next run would read them again. `settle` completes nothing while any is left.
   */
  let unrecorded = 0;

  const open = (target: number, first: StreamedBatch, signal: AbortSignal): Promise<OpenLoad> => {
    const { jobs, quota, naming } = targets[target]!;
    let opening = openings.get(target);
    if (opening === undefined) {
      opening = (async () => {
        await quota.take();
        const { prefix, table } = await naming();
        const id = `${jobIdOf(prefix, [first], 1)}${streamedJobSuffix}`;
        const upload = await jobs.open(id, signal);
        if (upload === undefined) {
          await claimExisting(jobs, id, table); // another table's job under the id: not retriable
          throw new DrainError(`load job ${id} exists already`, { retriable: true });
        }
        return { target, id, upload };
      })();
      openings.set(target, opening);
    }
    return opening.catch((error: unknown) => {
      openings.delete(target);
      throw error;
    });
  };

  /** The run's loads, in the targets' order. */
  const opened = () => Promise.all([...openings].sort(([a], [b]) => a - b).map(([, load]) => load));

  return {
    /** The batch's lines into its tables' loads, then its partition's intent; the lease the intent left. */
    async take(batch: StreamedBatch, signal: AbortSignal): Promise<Lease> {
      const id = partitionId(batch.lease);
      const before = partitions.get(id);
      const sum = (key: 'records' | 'rows' | 'deadLetters' | 'tombstones') =>
        (before?.intent[key] ?? 0) + (batch.counts[key] ?? 0);
      const filtered = (before?.intent.filtered ?? 0) + (batch.counts.filtered ?? 0);
      // Counted from its first write on: a batch that fails before any (its table's load refused to open)
      // has nothing in the uploads.
      let wrote = false;
      for (const [target, lines] of batch.lines.entries()) {
        if (lines.length === 0) continue;
        const load = await open(target, batch, signal);
        if (!wrote) unrecorded++;
        wrote = true;
        await load.upload.write(lines, signal);
      }
      const loads = await opened();
      const intent: CommitIntent = {
        streams: loads.map((l) => l.id),
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
      if (intent.streams.length > 0) {
        [lease] = (await options.checkpoints.recordIntents([{ lease, intent }], options.leaseTtlMs)) as [
          Lease,
        ];
        if (wrote) unrecorded--;
        crashPoint('after-intent');
      } else if (wrote) unrecorded--;
      partitions.set(id, { lease, intent });
      return lease;
    },

    /**
     * Completes the loads and waits for their jobs, table by table: the partitions durable now, each with
     * the lease to commit under. A job that did not load throws: nothing is committed, and the next run
     * reads it all again (but what the tables whose job was done hold).
     */
    async settle(signal: AbortSignal, budget: AbortSignal = signal): Promise<ReadonlyMap<string, Lease>> {
      const taken = new Map(partitions);
      partitions.clear();
      const loads = await opened();
      openings.clear();
      if (unrecorded > 0) {
        logger.warn(
          "a batch's lines reached the run's loads without its intent: none is completed, the next run reads it all again",
          {
            batches: unrecorded,
          },
        );
        unrecorded = 0;
        return new Map();
      }
      const durable = new Map([...taken].map(([id, t]) => [id, t.lease]));
      const rows = [...taken.values()].reduce((n, t) => n + t.intent.rows, 0);
      for (const load of loads) {
        if (!(await completed(load, signal))) return new Map();
        crashPoint('after-load-submitted');
        // Waited for within the budget only: past it, the commits need what is left before the hard stop.
        const outcome = await waitForJob(
          targets[load.target]!.jobs,
          load.id,
          Number.POSITIVE_INFINITY,
          budget,
        );
        if (outcome.state === 'running') {
          // The run's stop came first: the job runs on, and the next run commits it (recover).
          logger.notice("the run's load job is still running at the run's end: the next run commits it", {
            job: load.id,
            rows,
          });
          return new Map();
        }
        if (outcome.state !== 'done') {
          // Nothing was loaded: the run fails (a retry is safe) and the partitions are read again, flush
          // by flush, which names the rows BigQuery refuses and loads the others (load-targets.ts).
          const why =
            outcome.state === 'failed'
              ? `failed (${outcome.message}; ${outcome.badRows.size} row(s) refused)`
              : `ended ${outcome.state}`;
          throw new DrainError(
            `the run's load job ${load.id} ${why}: the next run finishes it (a failed load is read again, flush by flush)`,
            { retriable: true, code: 'load_failed' },
          );
        }
        logger.debug('run loaded', { job: load.id, bytes: load.upload.bytes, rows });
      }
      if (loads.length > 0) crashPoint('after-load-done');
      return durable;
    },
  };

  /**
   * Completes a load's upload; false when the run's stop came while its last chunk was on the wire. An id
   * BigQuery knows already (409) is this load's only when its job loads this table (`claimExisting`).
   */
  async function completed(load: OpenLoad, signal: AbortSignal): Promise<boolean> {
    try {
      if (!(await load.upload.finish(signal))) {
        const { jobs, naming } = targets[load.target]!;
        await claimExisting(jobs, load.id, (await naming()).table);
      }
      return true;
    } catch (error) {
      // The job may be made or not; the next run finds out (recover: done → committed, missing → read again).
      if (!signal.aborted) throw error;
      logger.notice('the run ended while its load was being completed: the next run finishes it', {
        job: load.id,
      });
      return false;
    }
  }
}
