import { FieldValue, Timestamp } from '@google-cloud/firestore';
import { partitionId } from '../drain/assignment.js';
import { FencedError } from '../drain/errors.js';
import type { CheckpointCommit, Lease } from '../drain/types.js';
import { ledgerEntryOf } from '../verify/ledger.js';
import { rollUpLedger } from '../verify/reconcile.js';
import { type CheckpointStore, contended, type Decision, firestoreError } from './compare-and-swap.js';
import { assertHeld, ledgerEntryDoc, ledgerId, type PartitionDoc } from './partition-doc.js';

/**
 * Commits: the checkpoint moves (fenced by the lease, continuous with where it stands, never backwards),
 * with one continuity ledger entry per commit in the same write; a partition's oldest entries are rolled
 * up into one, so that `verify` and `status` stay O(partitions + recent commits).
 */
export function createLedger(
  store: CheckpointStore,
  /** Ledger entries a partition keeps before the older ones are rolled up into one. */
  rollUpAt: number,
): { commit(commit: CheckpointCommit, ttlMs: number): Promise<Lease> } {
  const { db, clock, partitionRef, compareAndSwap } = store;

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
    const rolled = rollUpLedger(folded.map((d) => ledgerEntryOf(d)));
    const batch = db.batch();
    batch.set(ref.collection('ledger').doc('rollup'), {
      ...rolled,
      gaps: [...(rolled.gaps ?? [])],
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

  /** One commit's write, decided on the partition document as read (the same rules however it is sent). */
  function decideCommit(
    data: PartitionDoc | undefined,
    commit: CheckpointCommit,
    ttlMs: number,
    now: number,
  ): Decision<Committed> & Required<Pick<Decision<Committed>, 'write'>> {
    const { lease } = commit;
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
    const ref = partitionRef(lease);
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
          ref.collection('ledger').doc(ledgerId(commit.fromOffset, commit.nextOffset, lease.epoch)),
          ledgerEntryDoc(lease, { ...commit, from: commit.fromOffset, to: commit.nextOffset }, now),
        ],
      ],
    };
  }

  /** One partition's commit on its own: read, decide, write conditioned on the version read. */
  function commitAlone(commit: CheckpointCommit, ttlMs: number): Promise<Committed> {
    return compareAndSwap('commit checkpoint', partitionRef(commit.lease), (data, now) =>
      decideCommit(data, commit, ttlMs, now),
    );
  }

  /**
   * The commits asked for in the same turn of the event loop (a storage-write flush makes all its
   * partitions durable at once, and each then commits) go to Firestore as one read of their documents and
   * one write: each update conditioned on its document's version, with its ledger entry, so each partition
   * keeps the guarantees of a commit on its own. A partition whose lease or continuity fails is refused
   * alone; should any document change between the read and the write (the lease keeper renewing), none of
   * the write lands and each commits on its own instead.
   */
  async function commitTogether(group: readonly Waiting[]): Promise<void> {
    const refs = group.map((w) => partitionRef(w.commit.lease));
    let snapshots: FirebaseFirestore.DocumentSnapshot[];
    try {
      snapshots = await db.getAll(...refs);
    } catch (error) {
      for (const w of group) w.reject(firestoreError(error, 'commit checkpoint'));
      return;
    }
    const now = clock();
    const batch = db.batch();
    const decided: { waiting: Waiting; result: Committed }[] = [];
    for (const [i, waiting] of group.entries()) {
      const snapshot = snapshots[i]!;
      let decision: ReturnType<typeof decideCommit>;
      try {
        decision = decideCommit(
          snapshot.data() as PartitionDoc | undefined,
          waiting.commit,
          waiting.ttlMs,
          now,
        );
      } catch (error) {
        waiting.reject(error);
        continue;
      }
      batch.update(refs[i]!, decision.write, { lastUpdateTime: snapshot.updateTime! });
      for (const [doc, data] of decision.alsoCreate ?? []) batch.create(doc, data);
      decided.push({ waiting, result: decision.result });
    }
    if (decided.length === 0) return;
    try {
      await batch.commit();
    } catch (error) {
      if (!contended(error, 1)) {
        for (const { waiting } of decided) waiting.reject(firestoreError(error, 'commit checkpoint'));
        return;
      }
      for (const { waiting } of decided)
        commitAlone(waiting.commit, waiting.ttlMs).then(waiting.resolve, waiting.reject);
      return;
    }
    for (const { waiting, result } of decided) waiting.resolve(result);
  }

  let waiting: Waiting[] = [];
  function commitWaiting(): void {
    const group = waiting;
    waiting = [];
    // One batch in flight per partition, so a partition is never twice in a group; guarded all the same.
    const partitions = new Set(group.map((w) => partitionId(w.commit.lease)));
    if (group.length === 1 || partitions.size < group.length) {
      for (const w of group) commitAlone(w.commit, w.ttlMs).then(w.resolve, w.reject);
    } else {
      // Each commit is an update and a ledger entry; Firestore long took at most 500 writes a request.
      for (let at = 0; at < group.length; at += commitsPerWrite)
        void commitTogether(group.slice(at, at + commitsPerWrite));
    }
  }

  return {
    async commit(commit, ttlMs) {
      const committed = await new Promise<Committed>((resolve, reject) => {
        waiting.push({ commit, ttlMs, resolve, reject });
        if (waiting.length === 1) setImmediate(commitWaiting);
      });
      // An optimisation, never a failure of the commit; the next commit tries again.
      if (committed.entries >= rollUpAt) await rollUp(committed.lease).catch(() => {});
      return committed.lease;
    },
  };
}

/** Commits sent in one Firestore write at most (each an update with transforms and a created entry). */
const commitsPerWrite = 100;

interface Committed {
  lease: Lease;
  /** The partition's ledger entries after this commit. */
  entries: number;
}

interface Waiting {
  commit: CheckpointCommit;
  ttlMs: number;
  resolve(committed: Committed): void;
  reject(error: unknown): void;
}
