import { forEachLimited } from '../kernel/concurrency.js';
import { FencedError } from '../kernel/errors.js';
import type { Lease } from '../kernel/ports.js';
import { partitionId } from '../kernel/records.js';
import { commitCheckpoint } from './commit.js';
import type { DrainRun } from './run-state.js';

/**
 * The batches a deferring writer took (`WrittenBatch.deferred`: a load that spans the run, issue #67),
 * committed once the writer says they are durable: after the run has read what it will, before it releases
 * its leases (which the lease keeper goes on renewing meanwhile). Each partition's taken batches become one
 * commit, under the lease the writer names (its intents moved it). A partition the writer does not name,
 * or a settle that fails, commits nothing: the next run reads those batches again, and the writer's
 * `recover` finishes what it left (exactly once as any write mode's intents).
 */
export async function settleTaken(run: DrainRun): Promise<void> {
  const waiting = [...run.record.partitions.values()].filter((entry) => entry.taken.length > 0);
  if (waiting.length === 0) return;
  const { writer } = run.ports;
  let durable: ReadonlyMap<string, Lease> = new Map();
  try {
    if (writer.settle === undefined) throw new Error('the writer deferred batches but cannot settle them');
    durable = await writer.settle(run.stop.hard);
  } catch (error) {
    run.logger.warn('settling the batches the writer took failed; the next run reads them again', { error });
  }
  await forEachLimited(waiting, run.options.firestoreConcurrency, async (entry) => {
    const taken = entry.settled();
    const lease = durable.get(partitionId(entry.lease));
    if (lease === undefined || entry.summary.skipped === 'fenced') return;
    entry.intentRecorded(lease);
    const sum = (key: 'records' | 'rows' | 'deadLetters' | 'tombstones' | 'filtered') =>
      taken.reduce((n, t) => n + t[key], 0);
    const stamps = taken.map((t) => t.lastRecordTimestamp).filter((t) => t !== null);
    try {
      await commitCheckpoint(run, entry, {
        fromOffset: taken[0]!.fromOffset,
        nextOffset: taken[taken.length - 1]!.nextOffset,
        records: sum('records'),
        rows: sum('rows'),
        deadLetters: sum('deadLetters'),
        tombstones: sum('tombstones'),
        ...(sum('filtered') > 0 ? { filtered: sum('filtered') } : {}),
        lastRecordTimestamp: stamps.length === 0 ? null : stamps[stamps.length - 1]!,
      });
      run.record.countedTaken(entry, taken, run.now());
    } catch (error) {
      if (!(error instanceof FencedError)) throw error;
      run.logger.warn('lease lost before the batches taken were committed; the next run reads them again', {
        topic: entry.lease.topic,
        partition: entry.lease.partition,
        error,
      });
      entry.leave({ skipped: 'fenced' });
    }
  });
}
