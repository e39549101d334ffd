import { Timestamp } from '@google-cloud/firestore';
import type { RunSummary } from '../kernel/summary.js';
import { type CheckpointStore, firestoreError } from './checkpoint-store.js';

/**
 * Run summaries under `pipelines/{pipeline}/runs/{runId}`: the totals in the run's document, every
 * partition's detail in chunks of 500 under it, so that no document nears Firestore's 1 MiB at any
 * partition count.
 */
export function createRunLog(store: CheckpointStore): { recordRun(summary: RunSummary): Promise<void> } {
  const { db, pipelineId, clock } = store;
  return {
    async recordRun(summary) {
      const { partitions, ...totals } = summary;
      const run = db.collection('pipelines').doc(pipelineId).collection('runs').doc(summary.runId);
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
