/**
 * The partition document, `pipelines/{pipeline}/partitions/{topic}~{partition}`, and its ledger entries
 * under `.../ledger/`: their shape, in one place, for the checkpoints adapter and for those who only
 * read them (status, verify).
 */
import { type Firestore, Timestamp } from '@google-cloud/firestore';
import { FencedError } from '../kernel/errors.js';
import type { LivenessState } from '../kernel/liveness.js';
import type { CommitIntent, Lease, PartitionState } from '../kernel/ports.js';
import type { PartitionRef } from '../kernel/records.js';
import { partitionId } from '../kernel/records.js';
import type { UndrainedRange } from '../kernel/undrained.js';

export interface PartitionDoc extends Partial<LivenessState> {
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
  /** Ranges an operator's forward seek passed over (kernel/undrained.ts), kept by the seeks. */
  undrained?: UndrainedRange[];
  /** Ledger entries written since the last roll-up. */
  ledgerEntries?: number;
  /** What its commits moved, in all. */
  rowsWritten?: number;
  deadLettered?: number;
  commits?: number;
}

export function partitionsOf(db: Firestore, pipelineId: string) {
  return db.collection('pipelines').doc(pipelineId).collection('partitions');
}

export function partitionDocRef(db: Firestore, pipelineId: string, partition: PartitionRef) {
  return partitionsOf(db, pipelineId).doc(partitionId(partition));
}

/** The document as stored; undefined when the partition was never seen. */
export function partitionDocOf(snapshot: FirebaseFirestore.DocumentSnapshot): PartitionDoc | undefined {
  return snapshot.data() as PartitionDoc | undefined;
}

/** Whether a lease is held now by someone (its owner set and its expiry ahead). */
export function leaseHeld(doc: PartitionDoc | undefined, now: number): boolean {
  return doc?.leaseOwner != null && (doc.leaseExpiresAt?.toMillis() ?? 0) > now;
}

/** The state a task reads without taking the lease (sharing work). */
export function partitionStateOf(snapshot: FirebaseFirestore.DocumentSnapshot): PartitionState | undefined {
  const data = partitionDocOf(snapshot);
  if (data === undefined) return undefined;
  return {
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
        : snapshot.updateTime.seconds * 1_000_000 + Math.floor(snapshot.updateTime.nanoseconds / 1000),
  };
}

/** The lease as granted from the document as read. */
export function leaseOf(
  data: PartitionDoc | undefined,
  grant: PartitionRef & { owner: string; epoch: number; expiresAt: number },
): Lease {
  return {
    topic: grant.topic,
    partition: grant.partition,
    owner: grant.owner,
    epoch: grant.epoch,
    nextOffset: data?.nextOffset ?? null,
    expiresAt: grant.expiresAt,
    paused: data?.paused === true,
    lastProgressAt: data?.lastProgressAt?.toMillis() ?? null,
    intent: data?.intent ?? null,
    replayUntil: data?.replayUntil ?? null,
    ...(data?.undrained?.length ? { undrained: data.undrained } : {}),
    liveness: livenessOf(data),
  };
}

/** The alert episodes' state the last run left in the document. */
export function livenessOf(data: PartitionDoc | undefined): LivenessState {
  return {
    openAlerts: data?.openAlerts ?? {},
    highWatermark: data?.highWatermark ?? null,
    logStart: data?.logStart ?? null,
    highWatermarkChangedAt: data?.highWatermarkChangedAt ?? null,
    lagHistory: data?.lagHistory ?? [],
    pendingAlerts: data?.pendingAlerts ?? [],
  };
}

/** Throws a FencedError unless the lease is the one the document holds, unexpired. */
export function assertHeld(data: PartitionDoc | undefined, lease: Lease, now: number): void {
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

/** One ledger entry: a commit's range and counts, or (reset) where an operator restarted history. */
export function ledgerEntryDoc(
  lease: Lease,
  entry: {
    from: number;
    to: number;
    records: number;
    rows: number;
    deadLetters: number;
    tombstones?: number;
    filtered?: number;
    lost?: boolean;
    reset?: true;
    streams?: readonly string[];
  },
  now: number,
): FirebaseFirestore.DocumentData {
  return {
    from: entry.from,
    to: entry.to,
    records: entry.records,
    rows: entry.rows,
    deadLetters: entry.deadLetters,
    ...(entry.reset
      ? { reset: true }
      : {
          tombstones: entry.tombstones ?? 0,
          ...(entry.filtered ? { filtered: entry.filtered } : {}),
          // Offsets in the range with no record: compaction or transaction markers, or (lost) retention.
          skipped: entry.to - entry.from - entry.records,
          lost: entry.lost === true,
        }),
    ...(entry.streams === undefined ? {} : { streams: [...entry.streams] }),
    owner: lease.owner,
    epoch: lease.epoch,
    committedAt: Timestamp.fromMillis(now),
  };
}

/** A commit's ledger id: sorted by range, unique per epoch. */
export function ledgerId(from: number, to: number, epoch: number): string {
  return `${String(from).padStart(20, '0')}-${String(to).padStart(20, '0')}-${epoch}`;
}
