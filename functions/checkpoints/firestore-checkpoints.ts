import { FieldValue, type Firestore, Timestamp } from '@google-cloud/firestore';
import { partitionId } from '../drain/assignment.js';
import { DrainError, FencedError } from '../drain/errors.js';
import type { CheckpointCommit, Checkpoints, Lease, PartitionRef, RunSummary } from '../drain/types.js';

/** gRPC status codes from Firestore that are worth another try; every other code is fatal. */
const retriableGrpcCodes = new Map<number, string>([
  [1, 'CANCELLED'],
  [4, 'DEADLINE_EXCEEDED'],
  [8, 'RESOURCE_EXHAUSTED'],
  [10, 'ABORTED'],
  [13, 'INTERNAL'],
  [14, 'UNAVAILABLE'],
]);

export function firestoreError(error: unknown, what: string): Error {
  if (error instanceof DrainError || error instanceof TypeError || error instanceof RangeError) return error;
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  const retriable = typeof code === 'number' && retriableGrpcCodes.has(code);
  return new DrainError(`firestore ${what}: ${message}`, { retriable, code: String(code), cause: error });
}

interface PartitionDoc {
  topic: string;
  partition: number;
  nextOffset: number | null;
  leaseOwner: string | null;
  leaseEpoch: number;
  leaseExpiresAt: Timestamp | null;
}

/**
 * Checkpoints and leases in Firestore: `pipelines/{pipeline}/partitions/{topic}~{partition}`, with a
 * continuity ledger entry per commit under `.../ledger/{fromOffset}` and run summaries under `runs/`.
 * Every write that matters is a transaction that checks the lease owner and epoch first.
 */
export function createFirestoreCheckpoints(
  db: Firestore,
  pipelineId: string,
  clock: () => number = Date.now,
): Checkpoints {
  const pipeline = db.collection('pipelines').doc(pipelineId);
  const partitionRef = (p: PartitionRef) => pipeline.collection('partitions').doc(partitionId(p));

  function assertHeld(data: PartitionDoc | undefined, lease: Lease, now: number): void {
    if (data === undefined) throw new FencedError(`partition ${partitionId(lease)} has no lease document`);
    if (data.leaseOwner !== lease.owner || data.leaseEpoch !== lease.epoch) {
      throw new FencedError(
        `lease on ${partitionId(lease)} is held by ${data.leaseOwner ?? 'nobody'} at epoch ${data.leaseEpoch}, not ${lease.owner} at epoch ${lease.epoch}`,
      );
    }
    if ((data.leaseExpiresAt?.toMillis() ?? 0) <= now) {
      throw new FencedError(`lease on ${partitionId(lease)} at epoch ${lease.epoch} expired`);
    }
  }

  async function transact<T>(
    what: string,
    body: (tx: FirebaseFirestore.Transaction) => Promise<T>,
  ): Promise<T> {
    try {
      return await db.runTransaction(body);
    } catch (error) {
      throw firestoreError(error, what);
    }
  }

  return {
    acquire: (partition, owner, ttlMs) =>
      transact('acquire lease', async (tx) => {
        const ref = partitionRef(partition);
        const data = (await tx.get(ref)).data() as PartitionDoc | undefined;
        const now = clock();
        const heldByOther =
          data?.leaseOwner != null &&
          data.leaseOwner !== owner &&
          (data.leaseExpiresAt?.toMillis() ?? 0) > now;
        if (heldByOther) return undefined;
        const epoch = (data?.leaseEpoch ?? 0) + 1;
        const expiresAt = now + ttlMs;
        tx.set(
          ref,
          {
            topic: partition.topic,
            partition: partition.partition,
            nextOffset: data?.nextOffset ?? null,
            leaseOwner: owner,
            leaseEpoch: epoch,
            leaseExpiresAt: Timestamp.fromMillis(expiresAt),
            leaseAcquiredAt: Timestamp.fromMillis(now),
          },
          { merge: true },
        );
        const lease: Lease = { ...partition, owner, epoch, nextOffset: data?.nextOffset ?? null, expiresAt };
        return lease;
      }),

    renew: (lease, ttlMs) =>
      transact('renew lease', async (tx) => {
        const ref = partitionRef(lease);
        const now = clock();
        assertHeld((await tx.get(ref)).data() as PartitionDoc | undefined, lease, now);
        tx.update(ref, { leaseExpiresAt: Timestamp.fromMillis(now + ttlMs) });
        return { ...lease, expiresAt: now + ttlMs };
      }),

    commit: (commit: CheckpointCommit, ttlMs: number) =>
      transact('commit checkpoint', async (tx) => {
        const { lease } = commit;
        const ref = partitionRef(lease);
        const now = clock();
        const data = (await tx.get(ref)).data() as PartitionDoc | undefined;
        assertHeld(data, lease, now);
        const current = data!.nextOffset;
        // Continuity: a commit must start exactly where the checkpoint stands, and only move forward.
        if (current !== null && current !== commit.fromOffset) {
          throw new FencedError(
            `checkpoint of ${partitionId(lease)} is at ${current}, this commit starts at ${commit.fromOffset}`,
          );
        }
        if (commit.nextOffset < commit.fromOffset) {
          throw new RangeError(
            `a checkpoint never moves backwards (${commit.fromOffset} → ${commit.nextOffset})`,
          );
        }
        tx.update(ref, {
          nextOffset: commit.nextOffset,
          leaseExpiresAt: Timestamp.fromMillis(now + ttlMs),
          lastProgressAt: Timestamp.fromMillis(now),
          ...(commit.lastRecordTimestamp === null
            ? {}
            : { lastRecordAt: Timestamp.fromMillis(commit.lastRecordTimestamp) }),
          rowsWritten: FieldValue.increment(commit.rows),
          deadLettered: FieldValue.increment(commit.deadLetters),
          commits: FieldValue.increment(1),
        });
        tx.create(ref.collection('ledger').doc(String(commit.fromOffset).padStart(20, '0')), {
          from: commit.fromOffset,
          to: commit.nextOffset,
          rows: commit.rows,
          deadLetters: commit.deadLetters,
          owner: lease.owner,
          epoch: lease.epoch,
          committedAt: Timestamp.fromMillis(now),
        });
        return { ...lease, expiresAt: now + ttlMs, nextOffset: commit.nextOffset };
      }),

    release: (lease) =>
      transact('release lease', async (tx) => {
        const ref = partitionRef(lease);
        const data = (await tx.get(ref)).data() as PartitionDoc | undefined;
        if (data?.leaseOwner !== lease.owner || data.leaseEpoch !== lease.epoch) return;
        tx.update(ref, { leaseOwner: null, leaseExpiresAt: Timestamp.fromMillis(clock()) });
      }),

    recordRun: async (summary: RunSummary) => {
      try {
        await pipeline
          .collection('runs')
          .doc(summary.runId)
          .set({ ...summary, recordedAt: Timestamp.fromMillis(clock()) });
      } catch (error) {
        throw firestoreError(error, 'record run');
      }
    },
  };
}
