import type { Firestore } from '@google-cloud/firestore';
import type { CheckpointControls, Checkpoints } from '../kernel/ports.js';
import { createCheckpointStore } from './compare-and-swap.js';
import { createCheckpointControls } from './controls.js';
import { createLeases } from './leases.js';
import { createLedger } from './ledger.js';
import { partitionDocRef } from './partition-doc.js';
import { createRunLog } from './run-log.js';

/**
 * Checkpoints and leases in Firestore: `pipelines/{pipeline}/partitions/{topic}~{partition}` (see
 * partition-doc.ts), with a continuity ledger entry per commit under `.../ledger/{fromOffset}` and run
 * summaries under `runs/`. Every write that matters is a conditional write (compare-and-swap on the
 * document's version) that checks the lease owner and epoch first.
 */
export function createFirestoreCheckpoints(
  db: Firestore,
  pipelineId: string,
  clock: () => number = Date.now,
  /** Ledger entries a partition keeps before the older ones are rolled up into one. */
  options: { rollUpAt?: number } = {},
): Checkpoints & CheckpointControls {
  const store = createCheckpointStore(db, pipelineId, clock, (p) => partitionDocRef(db, pipelineId, p));
  return {
    ...createLeases(store),
    ...createLedger(store, options.rollUpAt ?? 200),
    ...createRunLog(store),
    ...createCheckpointControls(store),
  };
}
