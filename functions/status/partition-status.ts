import type { Firestore } from '@google-cloud/firestore';
import { leaseHeld, partitionDocOf, partitionsOf } from '../checkpoints/partition-doc.js';
import { replaysOf } from '../checkpoints/replay-log.js';
import { type RoutedTopics, tableName } from '../config/routes.js';
import type { Source } from '../kernel/ports.js';
import { partitionId } from '../kernel/records.js';

export interface PartitionStatus {
  topic: string;
  /** The table its route writes (`dataset.table`). */
  table: string;
  partition: number;
  checkpoint: number | null;
  highWatermark: number;
  logStart: number;
  lag: number | null;
  paused: boolean;
  leaseOwner: string | null;
  leaseExpiresAt: string | null;
  lastProgressAt: string | null;
  openAlerts: string[];
  /** Dead letters of the partition that replays wrote into its table (`replay-dead-letters`). */
  replayed: number;
}

/**
 * Where every partition stands: the checkpoint and lease from Firestore against Kafka's watermarks.
 * Backs the `status` function (and later the CLI's `status`).
 */
export async function partitionStatus(
  deps: { firestore: Firestore; source: Source },
  target: { pipelineId: string; routed: readonly RoutedTopics[] },
): Promise<PartitionStatus[]> {
  const tableOf = new Map(
    target.routed.flatMap((r) => r.topics.map((t) => [t, tableName(r.route)] as const)),
  );
  const [marks, docs, replays] = await Promise.all([
    deps.source.watermarks([...tableOf.keys()].sort()),
    partitionsOf(deps.firestore, target.pipelineId).get(),
    replaysOf(deps.firestore, target.pipelineId),
  ]);
  const replayed = new Map<string, number>();
  for (const r of replays) replayed.set(partitionId(r), (replayed.get(partitionId(r)) ?? 0) + 1);
  const byId = new Map(docs.docs.map((d) => [d.id, d]));
  return marks.map((mark) => {
    const snapshot = byId.get(partitionId(mark));
    const doc = snapshot === undefined ? undefined : partitionDocOf(snapshot);
    const checkpoint = doc?.nextOffset ?? null;
    const held = leaseHeld(doc, Date.now());
    return {
      topic: mark.topic,
      table: tableOf.get(mark.topic)!,
      partition: mark.partition,
      checkpoint,
      highWatermark: mark.end,
      logStart: mark.logStart,
      // A partition never drained starts at its log start, so that is its lag.
      lag: mark.end - (checkpoint ?? mark.logStart),
      paused: doc?.paused === true,
      leaseOwner: held ? doc!.leaseOwner : null,
      leaseExpiresAt: held ? doc!.leaseExpiresAt!.toDate().toISOString() : null,
      lastProgressAt: doc?.lastProgressAt ? doc.lastProgressAt.toDate().toISOString() : null,
      openAlerts: Object.keys(doc?.openAlerts ?? {}).sort(),
      replayed: replayed.get(partitionId(mark)) ?? 0,
    };
  });
}
