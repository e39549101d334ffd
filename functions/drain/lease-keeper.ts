import { FencedError } from '../kernel/errors.js';
import type { Logger } from '../kernel/logger.js';
import type { Checkpoints } from '../kernel/ports.js';
import type { Timers } from '../kernel/timers.js';
import type { PartitionLease } from './partition-lease.js';

/**
 * How long before its lease expires a run leaves a partition whose lease it could not renew: a sixth of
 * the TTL (renewals are tried every third), so that it has stopped writing before anyone else may start.
 */
export function leaseGiveUpMarginMs(leaseTtlMs: number): number {
  return Math.floor(leaseTtlMs / 6);
}

/**
 * Keeps the leases of the partitions still being drained: renewed every third of the TTL, each with at
 * most one renewal on the wire, even while a batch is being written (a slow write, a long MERGE, must not
 * let the lease lapse; a renewal racing a commit is settled by the compare-and-swap). A lease that could
 * not be renewed (Firestore does not answer, or fails) is given up before it can expire: the partition is
 * left (its write in flight abandoned, nothing more of it written or committed in this run), and whoever
 * takes the lease after its expiry starts from the checkpoint, which this run can no longer move.
 *
 * Looked at every twelfth of the TTL, so that one look falls in the last sixth with room to spare.
 * Returns the function that stops it.
 */
export function startLeaseKeeper(
  partitions: () => Iterable<PartitionLease>,
  ports: { readonly checkpoints: Checkpoints },
  options: { readonly leaseTtlMs: number; readonly logger: Logger; readonly now: () => number },
  timers: Timers,
): () => void {
  const { leaseTtlMs, logger, now } = options;
  const look = (): void => {
    const at = now();
    for (const entry of partitions()) {
      // A partition done but for batches a deferring writer took keeps its lease until they are settled.
      if (entry.done && entry.taken.length === 0) continue;
      if (at >= entry.lease.expiresAt - leaseGiveUpMarginMs(leaseTtlMs)) giveUp(entry, at);
      else if (!entry.renewing && at - entry.lastRenewedAt >= leaseTtlMs / 3) renew(entry, at);
    }
  };

  function renew(entry: PartitionLease, at: number): void {
    entry.renewalSent(at);
    const where = { topic: entry.lease.topic, partition: entry.lease.partition };
    ports.checkpoints
      .renew(entry.lease, leaseTtlMs)
      .then(
        (lease) => entry.renewed(lease),
        (error: unknown) => {
          if (!(error instanceof FencedError)) {
            logger.warn('lease renewal failed; will retry', {
              error,
              ...where,
              expiresInMs: entry.lease.expiresAt - now(),
            });
          } else {
            if (!entry.done) logger.warn('lease lost at renewal', where);
            entry.leaseGone();
            entry.leave({ skipped: 'fenced' });
          }
        },
      )
      .finally(() => entry.renewalSettled());
  }

  function giveUp(entry: PartitionLease, at: number): void {
    // Already expired: the run was not running (frozen, a zombie); someone else may hold the lease now.
    const expired = at >= entry.lease.expiresAt;
    logger.error(
      expired
        ? 'the lease expired while this run was not running; the partition is left to whoever holds it'
        : 'the lease could not be renewed in time; the partition is left before its lease can expire',
      { topic: entry.lease.topic, partition: entry.lease.partition, expiresInMs: entry.lease.expiresAt - at },
    );
    entry.leaseGone();
    entry.leave({ skipped: expired ? 'fenced' : 'error' });
  }

  return timers.every(Math.max(10, Math.floor(leaseTtlMs / 12)), look);
}
