import type { PartitionState } from '../kernel/ports.js';
import type { Watermarks } from '../kernel/records.js';
import { partitionId } from '../kernel/records.js';

/**
 * Sharing work between the tasks of an execution. A task drains the partitions dealt to it first
 * (`preferredTask`); then, while its budget lasts, it takes other tasks' partitions whose records wait
 * (checkpoint below the end seen at start) and whose lease is free: never taken (a task that starts late),
 * released, or expired (a task that died). Leases keep this safe whatever the timing: two runs never hold
 * one partition, and a run that lost its lease cannot commit.
 *
 * A live holder writes its partition (commits, renewals), a dead one stops, and its lease expires. So a
 * held partition is watched: if its document has changed since it was first seen, its holder is alive and
 * the partition is left to it; otherwise the task looks again after a short while, and takes it once its
 * lease has expired (within its budget). A live holder busy with one long write commits nothing for a
 * while but renews its lease every third of the lease TTL: it is recognised by then at the latest.
 */
export interface SharePlan {
  /** Free and waiting: lease these now, most records waiting first. */
  readonly take: Watermarks[];
  /** Held by a run that may be dead: look again at this time (ms), if any. */
  readonly waitUntil?: number;
  /** What is still worth looking at next time (taken, held-and-watched); the rest is dropped for good. */
  readonly remaining: Watermarks[];
}

/** A held partition as first seen: its lease expiry and document version. */
export interface Watched {
  readonly expiresAt: number;
  readonly version: number;
}

/**
 * Decides, from the partitions' states as just read, what to take now and what to watch. `watched` holds
 * each held partition as first seen; it is updated here. Pure, so that every case is unit-tested.
 */
export function planSharing(
  candidates: readonly Watermarks[],
  states: ReadonlyMap<string, PartitionState>,
  now: number,
  watched: Map<string, Watched>,
  /** How soon to look again at a held partition that has not changed yet. */
  pollMs = 2_000,
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
    const seen = watched.get(id);
    if (seen === undefined) watched.set(id, { expiresAt: state.leaseExpiresAt, version: state.version });
    else if (seen.expiresAt !== state.leaseExpiresAt || seen.version !== state.version) continue; // alive
    remaining.push(mark);
    waitUntil = Math.min(waitUntil ?? Number.POSITIVE_INFINITY, state.leaseExpiresAt, now + pollMs);
  }
  take.sort((a, b) => b.waiting - a.waiting);
  return {
    take: take.map((t) => t.mark),
    remaining,
    ...(waitUntil === undefined ? {} : { waitUntil }),
  };
}
