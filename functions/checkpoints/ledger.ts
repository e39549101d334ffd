import { FieldValue, Timestamp } from '@google-cloud/firestore';
import { FencedError } from '../kernel/errors.js';
import type { CheckpointCommit, Lease } from '../kernel/ports.js';
import { partitionId } from '../kernel/records.js';
import type { CheckpointStore, Decision } from './checkpoint-store.js';
import { ledgerEntryOf, rollUpLedger } from './ledger-entry.js';
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
    // The store's remembered version of the document is no longer current: the next commit reads it.
    store.forget([ref]);
    await batch.commit();
  }

  /** One commit's write, decided on the partition document as read (the same rules however it is sent). */
  function decideCommit(
    data: PartitionDoc | undefined,
    commit: CheckpointCommit,
    ttlMs: number,
    now: number,
  ): Decision<Committed> {
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
    const replayUntil = Math.max(data!.replayUntil ?? 0, commit.heldUntil ?? 0);
    const raised = replayUntil > (data!.replayUntil ?? 0) ? { replayUntil } : {};
    return {
      result: {
        lease: { ...lease, expiresAt: now + ttlMs, nextOffset: commit.nextOffset, ...raised },
        entries: (data!.ledgerEntries ?? 0) + 1,
      },
      write: {
        // Sums from the version read, not increments: the write lands only on that version, and so the
        // store knows the document it leaves (the next commit need not read it).
        nextOffset: commit.nextOffset,
        ledgerEntries: (data!.ledgerEntries ?? 0) + 1,
        leaseExpiresAt: Timestamp.fromMillis(now + ttlMs),
        lastProgressAt: Timestamp.fromMillis(now),
        ...(commit.lastRecordTimestamp === null
          ? {}
          : { lastRecordAt: Timestamp.fromMillis(commit.lastRecordTimestamp) }),
        // A commit finishes whatever flush the partition had recorded (storage-write mode).
        intent: FieldValue.delete(),
        ...raised,
        rowsWritten: (data!.rowsWritten ?? 0) + commit.rows,
        deadLettered: (data!.deadLettered ?? 0) + commit.deadLetters,
        commits: (data!.commits ?? 0) + 1,
      },
      alsoCreate: [
        [
          ref.collection('ledger').doc(ledgerId(commit.fromOffset, commit.nextOffset, lease.epoch)),
          ledgerEntryDoc(lease, { ...commit, from: commit.fromOffset, to: commit.nextOffset }, now),
        ],
      ],
    };
  }

  return {
    async commit(commit, ttlMs) {
      // Commits asked for together (a flush's partitions) share one read and one write (the store).
      const committed = await compareAndSwap('commit checkpoint', partitionRef(commit.lease), (data, now) =>
        decideCommit(data, commit, ttlMs, now),
      );
      // An optimisation, never a failure of the commit; the next commit tries again.
      if (committed.entries >= rollUpAt) await rollUp(committed.lease).catch(() => {});
      return committed.lease;
    },
  };
}

interface Committed {
  lease: Lease;
  /** The partition's ledger entries after this commit. */
  entries: number;
}
