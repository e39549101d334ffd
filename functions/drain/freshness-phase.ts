import { ageSeconds } from '../kernel/freshness.js';
import { type Position, partitionId } from '../kernel/records.js';
import type { PartitionSummary } from '../kernel/summary.js';
import type { DrainRun } from './run-state.js';

/**
 * The run's end, after its leases are released: every partition it looked at gets its freshness, the age
 * of the first record at or after its checkpoint, now (of a partition replaying an operator's backward
 * seek, at or after the replay's end: a replay is no outage, but new records held up behind it are late). The record is the one this run fetched there if it
 * did (a batch it did not commit), else one bounded read (records that arrived during the run count: they
 * wait too). Not at a signal's stop, where time is short: then only what the run saw, and lag, say it.
 */
export async function measureFreshness(run: DrainRun): Promise<void> {
  const lines = run.record.lookedAtPartitions;
  const heads = new Map<string, number | null>();
  for (const entry of run.record.partitions.values()) {
    const timestamp = entry.headTimestamp;
    if (timestamp !== undefined) heads.set(partitionId(entry.mark), timestamp);
  }
  // A partition replaying an operator's seek: the record waiting behind the replay says its freshness.
  for (const line of lines) {
    if (line.replayUntil !== undefined && (line.to === null || line.to >= line.replayUntil))
      delete line.replayUntil;
  }
  const unread: Position[] = lines
    .filter((p) => p.to !== null && !heads.has(partitionId(p)))
    .map((p) => ({ topic: p.topic, partition: p.partition, offset: Math.max(p.to!, p.replayUntil ?? 0) }));
  if (unread.length > 0 && run.stop.reason !== 'signal') {
    try {
      for (const [id, timestamp] of await run.ports.source.headTimestamps(unread)) heads.set(id, timestamp);
    } catch (error) {
      run.logger.warn('reading the times of the records waiting failed; their freshness is unknown', {
        error,
      });
    }
  }
  const now = run.now();
  for (const line of lines) line.freshnessSeconds = freshnessOf(line, heads.get(partitionId(line)), now);
}

/** A partition's freshness from the record waiting at its checkpoint: null (none), a time, or unknown. */
function freshnessOf(line: PartitionSummary, head: number | null | undefined, now: number): number | null {
  if (head === null) return 0;
  if (head !== undefined) return ageSeconds(now, head);
  return line.lag === 0 ? 0 : null;
}
