import { crashPoint } from '../kernel/crash-points.js';
import { FencedError, PartitionWaitsError } from '../kernel/errors.js';
import type { WrittenBatch } from '../kernel/ports.js';
import type { FetchedBatch, KafkaRecord } from '../kernel/records.js';
import { planFetched } from './batch.js';
import { commitCheckpoint } from './commit.js';
import type { PartitionLease } from './partition-lease.js';
import { type DrainRun, readsTo } from './run-state.js';

/**
 * One batch of a partition (its fetches joined up to the batch limits: batch-fill.ts): checked for
 * continuity with the checkpoint, written (writer port) and then committed; a partition's batches go
 * strictly in offset order (read-phase.ts). A stop starts no batch; at the hard stop (or when the lease is
 * given up) the batch in flight is abandoned, uncommitted, and the next run reads it again.
 */
export async function drainFetched(
  run: DrainRun,
  entry: PartitionLease,
  fetched: FetchedBatch,
): Promise<void> {
  if (entry.done || run.stop.signal.aborted) return;
  if (fetched.fromOffset !== entry.readPosition) {
    // The reader fetched on from where an earlier batch of this partition ended, but that batch was not
    // committed (abandoned at a stop, or its write failed): nothing after it may be written or skipped
    // to in this run. The next run reads again from the checkpoint.
    run.logger.warn(
      'an earlier batch of the partition was not committed; the partition waits for the next run',
      {
        topic: fetched.topic,
        partition: fetched.partition,
        checkpoint: entry.readPosition,
        fetchedFrom: fetched.fromOffset,
      },
    );
    entry.leave();
    return;
  }
  // Only what lies between the checkpoint and the end seen at start belongs to this run.
  const plan = planFetched(fetched, entry.readPosition, readsTo(run, entry));
  if (plan.skipTo !== undefined) {
    // Offsets with no records (compaction, transaction markers): the checkpoint moves past them, behind
    // the batches a deferring writer took if there are any.
    const skip = {
      fromOffset: entry.readPosition,
      nextOffset: plan.skipTo,
      records: 0,
      rows: 0,
      deadLetters: 0,
    };
    if (entry.taken.length > 0)
      entry.took({ ...skip, timestamps: [], lastRecordTimestamp: null, tombstones: 0, filtered: 0 });
    else await commitCheckpoint(run, entry, { ...skip, lastRecordTimestamp: null });
    return;
  }
  if (plan.batch !== undefined) await writeAndCommit(run, entry, plan.batch.records, plan.batch.nextOffset);
}

/** One batch: written, then committed; or abandoned, or its partition left. */
async function writeAndCommit(
  run: DrainRun,
  entry: PartitionLease,
  records: KafkaRecord[],
  nextOffset: number,
): Promise<void> {
  const log = run.logger.child({
    topic: entry.mark.topic,
    partition: entry.mark.partition,
    from: entry.readPosition,
    to: nextOffset,
  });
  const began = run.now();
  // What waits at the checkpoint, should this batch not be committed in this run (its freshness).
  if (records[0] !== undefined && entry.taken.length === 0) entry.fetchedAt(entry.position, records[0]);
  try {
    // At a hard stop the batch is abandoned, not awaited: a write still on the wire may land, and the next
    // run replays it (the exactly-once modes write nothing twice).
    const stopWriting = AbortSignal.any([run.stop.hard, entry.abandoned]);
    const batch = { lease: entry.lease, fromOffset: entry.readPosition, nextOffset, records };
    const written = await untilAborted(run.ports.writer.write(batch, stopWriting), stopWriting);
    const wroteAt = run.now();
    if (written === undefined || stopWriting.aborted) {
      log.warn(
        entry.abandoned.aborted
          ? 'batch abandoned: the lease could not be renewed; it will be read again by the next run'
          : 'batch abandoned at shutdown; it will be read again by the next run',
      );
      return;
    }
    await commitWritten(run, entry, records, nextOffset, written);
    log.debug('batch committed', {
      records: records.length,
      ...written,
      writeMs: wroteAt - began,
      commitMs: run.now() - wroteAt,
      durationMs: run.now() - began,
    });
  } catch (error) {
    if (error instanceof PartitionWaitsError) {
      // Not the records' fault and not the run's: the partition waits, its checkpoint where it was.
      log.warn('the partition waits for the next run', { reason: error.message });
      entry.leave({ waiting: error.message, ...(error.heldBack ? { heldBack: true } : {}) });
      return;
    }
    if (!(error instanceof FencedError)) {
      entry.leave({ skipped: 'error' });
      throw error;
    }
    log.warn('lease lost; this run no longer touches the partition', {
      error,
      durationMs: run.now() - began,
    });
    entry.leave({ skipped: 'fenced' });
  }
}

async function commitWritten(
  run: DrainRun,
  entry: PartitionLease,
  records: KafkaRecord[],
  nextOffset: number,
  written: WrittenBatch,
): Promise<void> {
  // storage-write: the lease as the recorded intent left it.
  if (written.lease !== undefined) entry.intentRecorded(written.lease);
  if (written.deferred) {
    // Taken, not yet durable: committed when the writer settles (settle-phase.ts), or read again.
    entry.took({
      fromOffset: entry.readPosition,
      nextOffset,
      records: records.length,
      timestamps: entry.latencyTimestamps(records),
      lastRecordTimestamp: records[records.length - 1]!.timestamp,
      rows: written.rows,
      deadLetters: written.deadLetters,
      tombstones: written.tombstones,
      filtered: written.filtered ?? 0,
    });
    return;
  }
  await commitCheckpoint(run, entry, {
    fromOffset: entry.position,
    nextOffset,
    records: records.length,
    rows: written.rows,
    deadLetters: written.deadLetters,
    tombstones: written.tombstones,
    ...(written.filtered ? { filtered: written.filtered } : {}),
    lastRecordTimestamp: records[records.length - 1]!.timestamp,
    ...(written.streams === undefined ? {} : { streams: written.streams }),
  });
  crashPoint('after-commit');
  run.record.counted(entry, { records, committedAt: run.now() }, written);
}

/** Resolves with the promise's value, or with undefined as soon as the signal aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.resolve(undefined);
  }
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      promise.catch(() => {});
      resolve(undefined);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
