import { forEachLimited } from '../kernel/concurrency.js';
import { DrainError, FencedError } from '../kernel/errors.js';
import type { Lease } from '../kernel/ports.js';
import { partitionId } from '../kernel/records.js';
import { commitCheckpoint } from './commit.js';
import type { DrainRun } from './run-state.js';

/**
 * The batches a deferring writer took (`WrittenBatch.deferred`: a load that spans the run, issue #67),
 * committed once the writer says they are durable: after the run has read what it will, before it releases
 * its leases (which the lease keeper goes on renewing meanwhile). Each partition's taken batches become one
 * commit, under the lease the writer names (its intents moved it). A partition the writer does not name
 * commits nothing, and a settle that fails commits nothing and fails the run: the next run reads those
 * batches again, and the writer's `recover` finishes what it left (exactly once as any mode's intents).
 */
export async function settleTaken(run: DrainRun): Promise<void> {
  const waiting = [...run.record.partitions.values()].filter((entry) => entry.taken.length > 0);
  if (waiting.length === 0) return;
  const { writer } = run.ports;
  // A settle that fails commits nothing and fails the run (exit 1: the state is consistent, a retry reads
  // the batches again and the writer's `recover` finishes what it left).
  if (writer.settle === undefined) throw new Error('the writer deferred batches but cannot settle them');
  // A lease lost with batches taken: what the writer took must not become durable now (another run may be
  // reading the range again); nothing is settled, and the next run reads it all again.
  const lost = waiting.filter((entry) => entry.leaseLost);
  if (lost.length > 0) {
    for (const entry of waiting) entry.settled();
    throw new DrainError(
      `the lease of ${lost.map((e) => partitionId(e.lease)).join(', ')} was lost with batches taken: ` +
        'nothing of them is made durable; the next run reads them again',
      { retriable: true },
    );
  }
  let durable: ReadonlyMap<string, Lease>;
  try {
    durable = await writer.settle(run.stop.hard, run.stop.signal);
  } catch (error) {
    for (const entry of waiting) entry.settled();
    throw error;
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
        // The ledger names what made the range durable (a load job), as a flush's commit does.
        ...(lease.intent?.streams.length ? { streams: lease.intent.streams } : {}),
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
