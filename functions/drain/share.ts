import { partitionId } from './assignment.js';
import type { PartitionState, Watermarks } from './types.js';

/**
 * Sharing work between the tasks of an execution. A task drains the partitions that hash to it first;
 * then, while its budget lasts, it takes other tasks' partitions whose records wait (checkpoint below the
 * end seen at start) and whose lease is free: never taken (a task that starts late), released, or expired
 * (a task that died). Leases keep this safe whatever the timing: two runs never hold one partition, and
 * a run that lost its lease cannot commit.
 *
 * A lease held by a live run is renewed (its expiry moves); one held by a dead run stops moving and
 * expires. So a held lease is watched: if its expiry has moved since it was first seen, its holder is
 * alive and the partition is left to it; otherwise the task waits for it to expire (within its budget).
 */
export interface SharePlan {
  /** Free and waiting: lease these now, most records waiting first. */
  readonly take: Watermarks[];
  /** Held by a run that may be dead: look again at the earliest expiry (ms), if any. */
  readonly waitUntil?: number;
  /** What is still worth looking at next time (taken, held-and-watched); the rest is dropped for good. */
  readonly remaining: Watermarks[];
}

/**
 * Decides, from the partitions' states as just read, what to take now and what to wait for. `watched`
 * holds each held lease's expiry as first seen; it is updated here. Pure, so that every case is unit-tested.
 */
export function planSharing(
  candidates: readonly Watermarks[],
  states: ReadonlyMap<string, PartitionState>,
  now: number,
  watched: Map<string, number>,
): SharePlan {
  const take: { mark: Watermarks; waiting: number }[] = [];
  const remaining: Watermarks[] = [];
  let waitUntil: number | undefined;
  for (const mark of candidates) {
    const id = partitionId(mark);
    const state = states.get(id);
    const checkpoint = state?.nextOffset ?? null;
    // Nothing waits: the checkpoint is at the end seen at start. A never-drained partition waits if its
    // log holds anything (where it starts is the owner's START_POSITION, resolved when it is leased).
    const waiting = mark.end - (checkpoint ?? mark.logStart);
    if (waiting <= 0 || state?.paused === true) continue;
    const held = state !== undefined && state.leaseOwner !== null && state.leaseExpiresAt > now;
    if (!held) {
      take.push({ mark, waiting });
      remaining.push(mark);
      continue;
    }
    const firstSeen = watched.get(id);
    if (firstSeen === undefined) watched.set(id, state.leaseExpiresAt);
    else if (state.leaseExpiresAt !== firstSeen) continue; // renewed: its holder is alive
    remaining.push(mark);
    waitUntil = Math.min(waitUntil ?? Number.POSITIVE_INFINITY, state.leaseExpiresAt);
  }
  take.sort((a, b) => b.waiting - a.waiting);
  return {
    take: take.map((t) => t.mark),
    remaining,
    ...(waitUntil === undefined ? {} : { waitUntil }),
  };
}
