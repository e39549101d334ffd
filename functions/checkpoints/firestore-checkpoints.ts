import { FieldValue, type Firestore, Timestamp } from '@google-cloud/firestore';
import { partitionId } from '../drain/assignment.js';
import type { LivenessState } from '../drain/episodes.js';
import { FencedError } from '../drain/errors.js';
import type {
  CheckpointCommit,
  CheckpointControls,
  Checkpoints,
  CommitIntent,
  Lease,
  PartitionRef,
  PartitionState,
  RunSummary,
} from '../drain/types.js';
import { grpcError } from '../google/grpc-errors.js';
import { ledgerEntryOf } from '../verify/ledger.js';
import { rollUpLedger } from '../verify/reconcile.js';

export function firestoreError(error: unknown, what: string): Error {
  return grpcError('firestore', error, what);
}

interface Decision<T> {
  result: T;
  /** Fields to write; none means leave the document as it is. */
  write?: FirebaseFirestore.UpdateData<FirebaseFirestore.DocumentData>;
  alsoCreate?: [FirebaseFirestore.DocumentReference, FirebaseFirestore.DocumentData][];
}

interface PartitionDoc extends Partial<LivenessState> {
  topic: string;
  partition: number;
  paused?: boolean;
  lastProgressAt?: Timestamp;
  nextOffset: number | null;
  leaseOwner: string | null;
  leaseEpoch: number;
  leaseExpiresAt: Timestamp | null;
  intent?: CommitIntent | null;
  /** Where the checkpoint stood before an operator moved it back (seek): replayed offsets end here. */
  replayUntil?: number | null;
  /** Ledger entries written since the last roll-up. */
  ledgerEntries?: number;
}

/**
 * Checkpoints and leases in Firestore: `pipelines/{pipeline}/partitions/{topic}~{partition}`, with a
 * continuity ledger entry per commit under `.../ledger/{fromOffset}` and run summaries under `runs/`.
 * Every write that matters is a conditional write (compare-and-swap on the document's version) that
 * checks the lease owner and epoch first.
 */
export function createFirestoreCheckpoints(
  db: Firestore,
  pipelineId: string,
  clock: () => number = Date.now,
  /** Ledger entries a partition keeps before the older ones are rolled up into one. */
  options: { rollUpAt?: number } = {},
): Checkpoints & CheckpointControls {
  const rollUpAt = options.rollUpAt ?? 200;
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

  /**
   * Read, decide, then write only if the document is still the version that was read (a precondition on
   * its update time), atomically with any ledger entry. Optimistic on purpose: a pessimistic transaction
   * holds a lock between its read and its commit, and a run frozen in between (GC pause, SIGSTOP, a
   * suspended VM) would block the run taking over until the lock times out.
   */
  async function compareAndSwap<T>(
    what: string,
    ref: FirebaseFirestore.DocumentReference,
    decide: (data: PartitionDoc | undefined, now: number) => Decision<T>,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        const snapshot = await ref.get();
        const decision = decide(snapshot.data() as PartitionDoc | undefined, clock());
        if (decision.write === undefined) return decision.result;
        const batch = db.batch();
        if (snapshot.exists) batch.update(ref, decision.write, { lastUpdateTime: snapshot.updateTime! });
        else batch.create(ref, decision.write);
        for (const [doc, data] of decision.alsoCreate ?? []) batch.create(doc, data);
        await batch.commit();
        return decision.result;
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        // 9 FAILED_PRECONDITION / 6 ALREADY_EXISTS: someone wrote in between; read again and re-decide.
        if ((code === 9 || code === 6) && attempt < 10) continue;
        throw firestoreError(error, what);
      }
    }
  }

  /**
   * Folds the partition's oldest ledger entries (all but the newest tenth) into its roll-up document, in
   * one write conditioned on the partition document's version and on the lease: only the lease holder
   * writes the ledger, so nothing can be added between the read and the write.
   */
  async function rollUp(lease: Lease): Promise<void> {
    const ref = partitionRef(lease);
    const snapshot = await ref.get();
    assertHeld(snapshot.data() as PartitionDoc | undefined, lease, clock());
    const docs = (await ref.collection('ledger').orderBy('committedAt').get()).docs;
    const folded = docs.slice(0, docs.length - Math.ceil(rollUpAt / 10));
    if (folded.length < 2) return;
    const entries = folded.map((d) => ledgerEntryOf(d));
    const rollupRef = ref.collection('ledger').doc('rollup');
    const batch = db.batch();
    batch.set(rollupRef, {
      ...rollUpLedger(entries),
      gaps: [...(rollUpLedger(entries).gaps ?? [])],
      owner: lease.owner,
      epoch: lease.epoch,
      // Sorted first: as old as the oldest entry it folds.
      committedAt: folded[0]!.get('committedAt'),
    });
    for (const d of folded) if (d.id !== 'rollup') batch.delete(d.ref);
    const removed = folded.filter((d) => d.id !== 'rollup').length;
    batch.update(
      ref,
      { ledgerEntries: FieldValue.increment(-removed) },
      { lastUpdateTime: snapshot.updateTime! },
    );
    await batch.commit();
  }

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
          const data = snapshot.data() as PartitionDoc | undefined;
          if (data === undefined) continue;
          states.push({
            topic: data.topic,
            partition: data.partition,
            nextOffset: data.nextOffset ?? null,
            leaseOwner: data.leaseOwner ?? null,
            leaseExpiresAt: data.leaseExpiresAt?.toMillis() ?? 0,
            paused: data.paused === true,
            // Microseconds since the epoch: every write to the document moves it.
            version:
              snapshot.updateTime === undefined
                ? 0
                : snapshot.updateTime.seconds * 1_000_000 +
                  Math.floor(snapshot.updateTime.nanoseconds / 1000),
          });
        }
      }
      return states;
    },
    acquire: (partition, owner, ttlMs) =>
      compareAndSwap('acquire lease', partitionRef(partition), (data, now) => {
        const heldByOther =
          data?.leaseOwner != null &&
          data.leaseOwner !== owner &&
          (data.leaseExpiresAt?.toMillis() ?? 0) > now;
        if (heldByOther) return { result: undefined };
        const epoch = (data?.leaseEpoch ?? 0) + 1;
        const expiresAt = now + ttlMs;
        const lease: Lease = {
          ...partition,
          owner,
          epoch,
          nextOffset: data?.nextOffset ?? null,
          expiresAt,
          paused: data?.paused === true,
          lastProgressAt: data?.lastProgressAt?.toMillis() ?? null,
          intent: data?.intent ?? null,
          replayUntil: data?.replayUntil ?? null,
          liveness: {
            openAlerts: data?.openAlerts ?? {},
            highWatermark: data?.highWatermark ?? null,
            logStart: data?.logStart ?? null,
            highWatermarkChangedAt: data?.highWatermarkChangedAt ?? null,
            lagHistory: data?.lagHistory ?? [],
            pendingAlerts: data?.pendingAlerts ?? [],
          },
        };
        return {
          result: lease,
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

    commit: async (commit: CheckpointCommit, ttlMs: number) => {
      const { lease } = commit;
      const ref = partitionRef(lease);
      const committed = await compareAndSwap('commit checkpoint', ref, (data, now) => {
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
        const ledgerId = `${String(commit.fromOffset).padStart(20, '0')}-${String(commit.nextOffset).padStart(20, '0')}-${lease.epoch}`;
        return {
          result: {
            lease: { ...lease, expiresAt: now + ttlMs, nextOffset: commit.nextOffset },
            entries: (data!.ledgerEntries ?? 0) + 1,
          },
          write: {
            nextOffset: commit.nextOffset,
            ledgerEntries: FieldValue.increment(1),
            leaseExpiresAt: Timestamp.fromMillis(now + ttlMs),
            lastProgressAt: Timestamp.fromMillis(now),
            ...(commit.lastRecordTimestamp === null
              ? {}
              : { lastRecordAt: Timestamp.fromMillis(commit.lastRecordTimestamp) }),
            // A commit finishes whatever flush the partition had recorded (storage-write mode).
            intent: FieldValue.delete(),
            rowsWritten: FieldValue.increment(commit.rows),
            deadLettered: FieldValue.increment(commit.deadLetters),
            commits: FieldValue.increment(1),
          },
          alsoCreate: [
            [
              ref.collection('ledger').doc(ledgerId),
              {
                from: commit.fromOffset,
                to: commit.nextOffset,
                records: commit.records,
                rows: commit.rows,
                deadLetters: commit.deadLetters,
                tombstones: commit.tombstones ?? 0,
                // Offsets in the range with no record: compaction or transaction markers, or (lost) retention.
                skipped: commit.nextOffset - commit.fromOffset - commit.records,
                lost: commit.lost === true,
                ...(commit.streams === undefined ? {} : { streams: [...commit.streams] }),
                owner: lease.owner,
                epoch: lease.epoch,
                committedAt: Timestamp.fromMillis(now),
              },
            ],
          ],
        };
      });
      // Keeping `verify` and `status` O(partitions + recent commits): an optimisation, never a failure of
      // the commit; the next commit tries again.
      if (committed.entries >= rollUpAt) await rollUp(committed.lease).catch(() => {});
      return committed.lease;
    },

    recordIntents: async (intents, ttlMs) => {
      if (intents.length === 0) return [];
      const refs = intents.map(({ lease }) => partitionRef(lease));
      for (let attempt = 1; ; attempt++) {
        try {
          const snapshots = await db.getAll(...refs);
          const now = clock();
          const batch = db.batch();
          const leases = intents.map(({ lease, intent }, i) => {
            const snapshot = snapshots[i]!;
            const data = snapshot.data() as PartitionDoc | undefined;
            assertHeld(data, lease, now);
            if (data!.nextOffset !== intent.fromOffset) {
              throw new FencedError(
                `checkpoint of ${partitionId(lease)} is at ${data!.nextOffset}, the intent starts at ${intent.fromOffset}`,
              );
            }
            // One precondition per document: the whole write lands only if no document changed since read.
            batch.update(
              refs[i]!,
              {
                intent: { ...intent, streams: [...intent.streams] },
                leaseExpiresAt: Timestamp.fromMillis(now + ttlMs),
              },
              { lastUpdateTime: snapshot.updateTime! },
            );
            return { ...lease, expiresAt: now + ttlMs, intent };
          });
          await batch.commit();
          return leases;
        } catch (error) {
          const code = (error as { code?: unknown }).code;
          if ((code === 9 || code === 6) && attempt < 10) continue;
          throw firestoreError(error, 'record intents');
        }
      }
    },

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

    reset: (lease, toOffset, action) => {
      const ref = partitionRef(lease);
      return compareAndSwap('reset checkpoint', ref, (data, now) => {
        assertHeld(data, lease, now);
        const from = data!.nextOffset;
        const audit = {
          action: 'seek',
          topic: lease.topic,
          partition: lease.partition,
          from,
          to: toOffset,
          actor: action.actor,
          reason: action.reason,
          forced: action.forced === true,
          at: Timestamp.fromMillis(now),
        };
        return {
          result: undefined,
          write: {
            nextOffset: toOffset,
            lastResetAt: Timestamp.fromMillis(now),
            // Back over offsets written before: storage-write mode writes again only what the tables lack.
            ...(from !== null && from !== undefined && toOffset < from
              ? { replayUntil: Math.max(data?.replayUntil ?? 0, from) }
              : {}),
          },
          alsoCreate: [
            [pipeline.collection('audit').doc(), audit],
            // The ledger says where history restarts, so that `verify` reconciles from here on.
            [
              ref
                .collection('ledger')
                .doc(`${String(from ?? toOffset).padStart(20, '0')}-${lease.epoch}-reset`),
              {
                from: from ?? toOffset,
                to: toOffset,
                reset: true,
                records: 0,
                rows: 0,
                deadLetters: 0,
                epoch: lease.epoch,
                owner: lease.owner,
                committedAt: Timestamp.fromMillis(now),
              },
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
            pipeline.collection('audit').doc(),
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

    recordRun: async (summary: RunSummary) => {
      // The totals in the run's document; every partition's detail in chunks of 500 under it, so that no
      // document nears Firestore's 1 MiB at any partition count.
      const { partitions, ...totals } = summary;
      const run = pipeline.collection('runs').doc(summary.runId);
      const chunks = Math.ceil(partitions.length / 500);
      try {
        const batch = db.batch();
        batch.set(run, { ...totals, partitionChunks: chunks, recordedAt: Timestamp.fromMillis(clock()) });
        for (let i = 0; i < chunks; i++) {
          batch.set(run.collection('partitions').doc(String(i).padStart(4, '0')), {
            partitions: partitions.slice(i * 500, (i + 1) * 500),
          });
        }
        await batch.commit();
      } catch (error) {
        throw firestoreError(error, 'record run');
      }
    },
  };
}
