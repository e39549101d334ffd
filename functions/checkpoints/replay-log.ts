/**
 * The replay log: which dead letters an operator's replay wrote into which table, one document per
 * origin under its partition, `pipelines/{pipeline}/partitions/{topic}~{partition}/replays/{offset}`.
 * Written only once the replayed rows are durable and before their letters are acknowledged, so that a
 * replay killed in between writes them again (idempotently) and records them then. `verify` holds the
 * table to it; `status` counts it. Idempotent by origin: a letter replayed twice is one document.
 *
 * Apart from the ledger, not in it: the ledger is the drain's, written under the partition's lease and
 * rolled up; a replay holds no lease (a running drain keeps its partitions), and its few documents are
 * kept whole, whatever the roll-up does.
 */
import type { Firestore } from '@google-cloud/firestore';
import { chunksOf } from '../kernel/chunks.js';
import type { PartitionRef } from '../kernel/records.js';
import { partitionDocRef } from './partition-doc.js';

export interface ReplayedLetter extends PartitionRef {
  readonly offset: number;
  /** Where the letter's row went (`dataset.table`). */
  readonly table: string;
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
    const batch = db.batch();
    for (const l of chunk) {
      const doc = partitionDocRef(db, pipelineId, l).collection('replays').doc(String(l.offset));
      batch.set(doc, {
        pipeline: pipelineId,
        topic: l.topic,
        partition: l.partition,
        offset: l.offset,
        table: l.table,
        replayId,
        replayedAt: new Date(),
      });
    }
    await batch.commit();
  }
}

/**
 * Every letter the pipeline's replays wrote, in one query across its partitions. Unfiltered on purpose: a
 * collection-group query with a field filter needs an index of its own in Firestore, and replays are few;
 * the documents are kept to this pipeline's by their path.
 */
export async function replaysOf(db: Firestore, pipelineId: string): Promise<ReplayedLetter[]> {
  const prefix = `pipelines/${pipelineId}/partitions/`;
  const docs = await db.collectionGroup('replays').get();
  return docs.docs
    .filter((d) => d.ref.path.startsWith(prefix))
    .map((d) => ({
      topic: d.get('topic') as string,
      partition: d.get('partition') as number,
      offset: d.get('offset') as number,
      table: d.get('table') as string,
    }));
}
