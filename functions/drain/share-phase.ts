import type { Watermarks } from '../kernel/records.js';
import { partitionId } from '../kernel/records.js';
import { drainPartitions } from './read-phase.js';
import type { DrainRun } from './run-state.js';
import { planSharing, type Watched } from './share.js';

/**
 * After its own share, while its budget lasts: other tasks' partitions whose records wait and whose
 * lease is free or has expired (see share.ts), so that a task that died or started late does not leave
 * its share for the next execution; not before `shareGraceMs` from the run's start, so that a task that
 * is merely slow to start keeps its share.
 */
export async function shareWork(run: DrainRun, others: readonly Watermarks[]): Promise<void> {
  const watched = new Map<string, Watched>();
  let candidates = others.filter((m) => m.end > m.logStart);
  // Other tasks of the execution may still be starting: their share is theirs for a while.
  const graceLeft = run.startedAt + run.options.shareGraceMs - run.now();
  if (candidates.length > 0 && graceLeft > 0) await run.timers.sleep(graceLeft, run.stop.signal);
  while (candidates.length > 0 && !run.stop.signal.aborted) {
    const states = await run.ports.checkpoints.peek(candidates);
    const plan = planSharing(candidates, new Map(states.map((s) => [partitionId(s), s])), run.now(), watched);
    if (plan.take.length > 0) {
      run.logger.info("taking other tasks' partitions whose records wait", { partitions: plan.take.length });
      await drainPartitions(run, plan.take, true);
      const taken = new Set(plan.take.map(partitionId));
      candidates = plan.remaining.filter((m) => !taken.has(partitionId(m)));
      continue;
    }
    candidates = plan.remaining;
    if (plan.waitUntil === undefined) return;
    // Partitions held by runs that may be dead: look again in a moment (a live one will have written).
    await run.timers.sleep(Math.max(0, plan.waitUntil - run.now()) + 50, run.stop.signal);
  }
}
