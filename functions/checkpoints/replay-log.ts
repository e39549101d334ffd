/**
 * The replay log: which dead letters an operator's replay wrote into which table, one document per
 * origin under its partition, `pipelines/{pipeline}/partitions/{topic}~{partition}/replays/{offset}`.
 * Written twice: **pending**, naming the table, before the row is written (so that a replay killed after
 * its write, run again under changed routes, finds where the row went and refuses to write it into a
 * second table); **durable** once the row is, before the letter is acknowledged (a replay killed in between
 * writes it again, idempotently, into the same table, and marks it then). `verify` holds the table to it
 * (a pending letter counts where the table holds its row); `status` counts the durable ones. Idempotent by
 * origin: a letter replayed twice is one document. Documents of older releases, without a state, are
 * durable.
 *
 * Apart from the ledger, not in it: the ledger is the drain's, written under the partition's lease and
 * rolled up; a replay holds no lease (a running drain keeps its partitions), and its few documents are
 * kept whole, whatever the roll-up does.
 */
import type { DocumentSnapshot, Firestore } from '@google-cloud/firestore';
import { chunksOf } from '../kernel/chunks.js';
import type { PartitionRef, Position } from '../kernel/records.js';
import { partitionDocRef } from './partition-doc.js';

export interface ReplayedLetter extends PartitionRef {
  readonly offset: number;
  /** Where the letter's row went (`dataset.table`). */
  readonly table: string;
  /** Recorded before its write, never marked durable: the row may or may not be in the table. */
  readonly pending?: boolean;
}

/** Records that these letters' rows are durable in their tables (one batched write per 400 letters). */
export async function recordReplays(
  db: Firestore,
  pipelineId: string,
  letters: readonly ReplayedLetter[],
  replayId: string,
): Promise<void> {
  // Firestore takes at most 500 writes in a batch.
  for (const chunk of chunksOf(letters, 400, Number.POSITIVE_INFINITY, () => 0)) {
    if (chunk.length === 0) continue;
    const batch = db.batch();
    for (const l of chunk)
      batch.set(replayDoc(db, pipelineId, l), entryOf(pipelineId, l, replayId, 'durable'));
    await batch.commit();
  }
}

function entryOf(pipelineId: string, l: ReplayedLetter, replayId: string, state: 'pending' | 'durable') {
  return {
    pipeline: pipelineId,
    topic: l.topic,
    partition: l.partition,
    offset: l.offset,
    table: l.table,
    state,
    replayId,
    replayedAt: new Date(),
  };
}

/**
 * In one transaction a chunk, what the log holds of these letters (by `topic:partition:offset`), and a
 * pending entry of this replay's for each it did not hold: two replays at once cannot both take a letter.
 */
export async function claimReplays(
  db: Firestore,
  pipelineId: string,
  letters: readonly ReplayedLetter[],
  replayId: string,
): Promise<Map<string, ReplayedLetter>> {
  const found = new Map<string, ReplayedLetter>();
  for (const chunk of chunksOf(letters, 400, Number.POSITIVE_INFINITY, () => 0)) {
    if (chunk.length === 0) continue;
    const held = await db.runTransaction(async (tx) => {
      const refs = chunk.map((l) => replayDoc(db, pipelineId, l));
      const docs = await tx.getAll(...refs);
      for (const [i, d] of docs.entries())
        if (!d.exists) tx.create(refs[i]!, entryOf(pipelineId, chunk[i]!, replayId, 'pending'));
      return docs.filter((d) => d.exists).map(replayedOf);
    });
    for (const l of held) found.set(`${l.topic}:${l.partition}:${l.offset}`, l);
  }
  return found;
}

/** This replay's pending entries of letters whose writes were refused go: their rows are in no table. */
export async function forgetReplays(
  db: Firestore,
  pipelineId: string,
  letters: readonly Position[],
  replayId: string,
): Promise<void> {
  for (const chunk of chunksOf(letters, 400, Number.POSITIVE_INFINITY, () => 0)) {
    if (chunk.length === 0) continue;
    await db.runTransaction(async (tx) => {
      const refs = chunk.map((l) => replayDoc(db, pipelineId, l));
      const docs = await tx.getAll(...refs);
      for (const [i, d] of docs.entries())
        if (d.get('state') === 'pending' && d.get('replayId') === replayId) tx.delete(refs[i]!);
    });
  }
}

/** What the log says of these letters (by `topic:partition:offset`): the table each went, or began to go, into. */
export async function replaysAt(
  db: Firestore,
  pipelineId: string,
  letters: readonly Position[],
): Promise<Map<string, ReplayedLetter>> {
  const found = new Map<string, ReplayedLetter>();
  for (const chunk of chunksOf(letters, 400, Number.POSITIVE_INFINITY, () => 0)) {
    if (chunk.length === 0) continue;
    const docs = await db.getAll(...chunk.map((l) => replayDoc(db, pipelineId, l)));
    for (const l of docs.filter((d) => d.exists).map(replayedOf))
      found.set(`${l.topic}:${l.partition}:${l.offset}`, l);
  }
  return found;
}

function replayDoc(db: Firestore, pipelineId: string, l: Position) {
  return partitionDocRef(db, pipelineId, l).collection('replays').doc(String(l.offset));
}

function replayedOf(d: DocumentSnapshot): ReplayedLetter {
  return {
    topic: d.get('topic') as string,
    partition: d.get('partition') as number,
    offset: d.get('offset') as number,
    table: d.get('table') as string,
    ...(d.get('state') === 'pending' ? { pending: true } : {}),
  };
}

/**
 * Every letter the pipeline's replays wrote, in one query across its partitions. Unfiltered on purpose: a
 * collection-group query with a field filter needs an index of its own in Firestore, and replays are few;
 * the documents are kept to this pipeline's by their path.
 */
export async function replaysOf(db: Firestore, pipelineId: string): Promise<ReplayedLetter[]> {
  const prefix = `pipelines/${pipelineId}/partitions/`;
  const docs = await db.collectionGroup('replays').get();
  return docs.docs.filter((d) => d.ref.path.startsWith(prefix)).map(replayedOf);
}
