import { Timestamp } from '@google-cloud/firestore';
import type { CheckpointControls } from '../kernel/ports.js';
import { seekUndrained } from '../kernel/undrained.js';
import type { CheckpointStore } from './checkpoint-store.js';
import { assertHeld, ledgerEntryDoc } from './partition-doc.js';

/** What operators do on purpose (the CLI's seek, pause, resume), each with an audit record. */
export function createCheckpointControls(store: CheckpointStore): CheckpointControls {
  const { db, pipelineId, partitionRef, compareAndSwap } = store;
  const audit = () => db.collection('pipelines').doc(pipelineId).collection('audit').doc();
  return {
    reset: (lease, toOffset, action) => {
      const ref = partitionRef(lease);
      return compareAndSwap('reset checkpoint', ref, (data, now) => {
        assertHeld(data, lease, now);
        const from = data!.nextOffset;
        // A forward seek passes a range over; a seek back puts the ranges above it in the replay's way.
        const undrained = seekUndrained(
          data?.undrained ?? [],
          from ?? null,
          toOffset,
          data?.replayUntil ?? 0,
        );
        return {
          result: undefined,
          write: {
            nextOffset: toOffset,
            lastResetAt: Timestamp.fromMillis(now),
            ...(undrained.length > 0 || (data?.undrained?.length ?? 0) > 0 ? { undrained } : {}),
            // Back over offsets written before: storage-write mode writes again only what the tables lack.
            ...(from !== null && from !== undefined && toOffset < from
              ? { replayUntil: Math.max(data?.replayUntil ?? 0, from) }
              : {}),
          },
          alsoCreate: [
            [
              audit(),
              {
                action: 'seek',
                topic: lease.topic,
                partition: lease.partition,
                from,
                to: toOffset,
                actor: action.actor,
                reason: action.reason,
                forced: action.forced === true,
                at: Timestamp.fromMillis(now),
              },
            ],
            // The ledger says where history restarts, so that `verify` reconciles from here on.
            [
              ref
                .collection('ledger')
                .doc(`${String(from ?? toOffset).padStart(20, '0')}-${lease.epoch}-reset`),
              ledgerEntryDoc(
                lease,
                { from: from ?? toOffset, to: toOffset, reset: true, records: 0, rows: 0, deadLetters: 0 },
                now,
              ),
            ],
          ],
        };
      });
    },

    setPaused: (partition, paused, action) =>
      compareAndSwap('pause partition', partitionRef(partition), (_data, now) => ({
        result: undefined,
        write: { topic: partition.topic, partition: partition.partition, paused },
        alsoCreate: [
          [
            audit(),
            {
              action: paused ? 'pause' : 'resume',
              topic: partition.topic,
              partition: partition.partition,
              actor: action.actor,
              reason: action.reason,
              at: Timestamp.fromMillis(now),
            },
          ],
        ],
      })),
  };
}
