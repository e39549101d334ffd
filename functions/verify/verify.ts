import type { BigQuery } from '@google-cloud/bigquery';
import type { Firestore } from '@google-cloud/firestore';
import { tableStats } from '../sinks/table-stats.js';
import { type LedgerEntry, type PartitionVerdict, reconcile } from './reconcile.js';

/**
 * `kafka-bigquery-drain verify`: per partition, the continuity ledger (Firestore) against the target table
 * (BigQuery): one aggregate query per partition over its committed offset range, never a scan per row.
 */
export async function verifyPipeline(
  clients: { firestore: Firestore; bigquery: BigQuery },
  target: {
    pipelineId: string;
    dataset: string;
    table: string;
    topics: readonly string[];
    /** storage-write mode: the error table holds each dead letter once, and is reconciled too. */
    deadLetterTable?: string;
  },
): Promise<PartitionVerdict[]> {
  const partitions = await clients.firestore.collection(`pipelines/${target.pipelineId}/partitions`).get();
  const verdicts: PartitionVerdict[] = [];
  for (const doc of partitions.docs) {
    const topic = doc.get('topic') as string;
    if (!target.topics.includes(topic)) continue;
    const partition = doc.get('partition') as number;
    const checkpoint = (doc.get('nextOffset') as number | null) ?? null;
    const ledgerDocs = await doc.ref.collection('ledger').orderBy('committedAt').get();
    const ledger: LedgerEntry[] = ledgerDocs.docs.map((d) => ({
      from: d.get('from') as number,
      to: d.get('to') as number,
      records:
        (d.get('records') as number | undefined) ?? (d.get('to') as number) - (d.get('from') as number),
      rows: d.get('rows') as number,
      deadLetters: d.get('deadLetters') as number,
      tombstones: (d.get('tombstones') as number | undefined) ?? 0,
      lost: d.get('lost') === true,
      reset: d.get('reset') === true,
    }));
    // After an operator's reset (seek) history is reconciled from where it restarted.
    const lastReset = ledger.findLast((e) => e.reset === true);
    const from = lastReset?.to ?? ledger[0]?.from ?? checkpoint ?? 0;
    const stats = await tableStats(clients.bigquery, target, topic, partition, from, checkpoint ?? from);
    const letters =
      target.deadLetterTable === undefined
        ? undefined
        : await tableStats(
            clients.bigquery,
            { dataset: target.dataset, table: target.deadLetterTable },
            topic,
            partition,
            from,
            checkpoint ?? from,
          ).catch((error: unknown) => {
            if (/not found/i.test((error as Error).message))
              return { rows: 0, distinctOffsets: 0, minOffset: null, maxOffset: null };
            throw error;
          });
    verdicts.push(reconcile({ topic, partition, checkpoint }, ledger, stats, letters));
  }
  return verdicts.sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
}
