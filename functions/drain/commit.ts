import { crashPoint, crashPointsArmed } from '../kernel/crash-points.js';
import type { CheckpointCommit } from '../kernel/ports.js';
import type { PartitionLease } from './partition-lease.js';
import type { DrainRun } from './run-state.js';

/**
 * Moves the partition's checkpoint (and extends its lease); throws a FencedError when the lease was lost.
 * The lease phase commits what an earlier run left (an intent, a retention gap, a pinned start), the batch
 * phase what it wrote.
 */
export async function commitCheckpoint(
  run: DrainRun,
  entry: PartitionLease,
  batch: Omit<CheckpointCommit, 'lease'>,
): Promise<void> {
  const pending = run.ports.checkpoints.commit({ lease: entry.lease, ...batch }, run.options.leaseTtlMs);
  // Crash tests: die while the commit is on the wire (it may or may not have landed).
  if (crashPointsArmed()) setImmediate(() => crashPoint('mid-commit'));
  const lease = await pending;
  run.record.committed();
  entry.advance(lease, batch.nextOffset, run.now());
}
