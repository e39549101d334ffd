import { Timestamp } from '@google-cloud/firestore';
import { FencedError } from '../kernel/errors.js';
import type { Checkpoints, Lease, PartitionState } from '../kernel/ports.js';
import { partitionId } from '../kernel/records.js';
import {
  type CheckpointStore,
  contended,
  firestoreError,
  refused,
  type Version,
} from './checkpoint-store.js';
import { assertHeld, leaseHeld, leaseOf, partitionStateOf } from './partition-doc.js';

/** Leases: read without taking (peek), taken, renewed, released; and a flush's intents, recorded under them. */
export function createLeases(
  store: CheckpointStore,
): Pick<Checkpoints, 'peek' | 'acquire' | 'renew' | 'release' | 'recordIntents'> {
  const { db, clock, partitionRef, compareAndSwap, versions, wrote, forget } = store;
  return {
    async peek(partitions) {
      const states: PartitionState[] = [];
      // One batched read (BatchGetDocuments) per 300 documents.
      for (let i = 0; i < partitions.length; i += 300) {
        const refs = partitions.slice(i, i + 300).map((p) => partitionRef(p));
        if (refs.length === 0) continue;
        let snapshots: FirebaseFirestore.DocumentSnapshot[];
        try {
          snapshots = await db.getAll(...refs);
        } catch (error) {
          throw firestoreError(error, 'read partitions');
        }
        for (const snapshot of snapshots) {
          const state = partitionStateOf(snapshot);
          if (state !== undefined) states.push(state);
        }
      }
      return states;
    },

    acquire: (partition, owner, ttlMs) =>
      compareAndSwap('acquire lease', partitionRef(partition), (data, now) => {
        if (leaseHeld(data, now) && data!.leaseOwner !== owner) return { result: undefined };
        const epoch = (data?.leaseEpoch ?? 0) + 1;
        const expiresAt = now + ttlMs;
        return {
          result: leaseOf(data, { ...partition, owner, epoch, expiresAt }),
          write: {
            topic: partition.topic,
            partition: partition.partition,
            nextOffset: data?.nextOffset ?? null,
            leaseOwner: owner,
            leaseEpoch: epoch,
            leaseExpiresAt: Timestamp.fromMillis(expiresAt),
            leaseAcquiredAt: Timestamp.fromMillis(now),
          },
        };
      }),

    renew: (lease, ttlMs) =>
      compareAndSwap('renew lease', partitionRef(lease), (data, now) => {
        assertHeld(data, lease, now);
        return {
          result: { ...lease, expiresAt: now + ttlMs },
          write: { leaseExpiresAt: Timestamp.fromMillis(now + ttlMs) },
        };
      }),

    release: (lease, liveness) =>
      compareAndSwap('release lease', partitionRef(lease), (data, now) => {
        if (data?.leaseOwner !== lease.owner || data.leaseEpoch !== lease.epoch) return { result: undefined };
        return {
          result: undefined,
          write: {
            leaseOwner: null,
            leaseExpiresAt: Timestamp.fromMillis(now),
            ...(liveness === undefined ? {} : { ...liveness }),
          },
        };
      }),

    recordIntents: async (intents, ttlMs) => {
      if (intents.length === 0) return [];
      const refs = intents.map(({ lease }) => partitionRef(lease));
      for (let attempt = 1; ; attempt++) {
        let found: Version[] | undefined;
        let sent = false;
        try {
          found = await versions(refs);
          const now = clock();
          const batch = db.batch();
          const writes: FirebaseFirestore.UpdateData<FirebaseFirestore.DocumentData>[] = [];
          const leases = intents.map(({ lease, intent }, i): Lease => {
            const { data, updateTime } = found![i]!;
            assertHeld(data, lease, now);
            if (data!.nextOffset !== intent.fromOffset) {
              throw new FencedError(
                `checkpoint of ${partitionId(lease)} is at ${data!.nextOffset}, the intent starts at ${intent.fromOffset}`,
              );
            }
            const write = {
              intent: { ...intent, streams: [...intent.streams] },
              leaseExpiresAt: Timestamp.fromMillis(now + ttlMs),
            };
            // One precondition per document: the whole write lands only if no document changed since read.
            batch.update(refs[i]!, write, { lastUpdateTime: updateTime! });
            writes.push(write);
            return { ...lease, expiresAt: now + ttlMs, intent };
          });
          sent = true;
          const results = await batch.commit();
          wrote(
            refs,
            found,
            writes,
            results.map((r) => r.writeTime),
          );
          return leases;
        } catch (error) {
          forget(refs);
          // Decided on remembered versions: a refusal, or the write refused, is decided again on a read.
          if (found?.some((v) => !v.read) && (!sent || refused(error))) continue;
          if (contended(error, attempt)) continue;
          throw firestoreError(error, 'record intents');
        }
      }
    },
  };
}
