import type { Firestore } from '@google-cloud/firestore';
import { type RoutedTopics, tableName } from '../drain/routes.js';
import type { Source } from '../drain/types.js';

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
  const [marks, docs] = await Promise.all([
    deps.source.watermarks([...tableOf.keys()].sort()),
    deps.firestore.collection(`pipelines/${target.pipelineId}/partitions`).get(),
  ]);
  const byId = new Map(docs.docs.map((d) => [d.id, d]));
  return marks.map((mark) => {
    const doc = byId.get(`${mark.topic}~${mark.partition}`);
    const checkpoint = (doc?.get('nextOffset') as number | null | undefined) ?? null;
    const expires = doc?.get('leaseExpiresAt') as { toDate(): Date } | undefined;
    const owner = (doc?.get('leaseOwner') as string | null | undefined) ?? null;
    const progress = doc?.get('lastProgressAt') as { toDate(): Date } | undefined;
    const alerts = (doc?.get('openAlerts') as Record<string, unknown> | undefined) ?? {};
    const held = owner !== null && expires !== undefined && expires.toDate().getTime() > Date.now();
    return {
      topic: mark.topic,
      table: tableOf.get(mark.topic)!,
      partition: mark.partition,
      checkpoint,
      highWatermark: mark.end,
      logStart: mark.logStart,
      // A partition never drained starts at its log start, so that is its lag.
      lag: mark.end - (checkpoint ?? mark.logStart),
      paused: doc?.get('paused') === true,
      leaseOwner: held ? owner : null,
      leaseExpiresAt: held ? expires!.toDate().toISOString() : null,
      lastProgressAt: progress ? progress.toDate().toISOString() : null,
      openAlerts: Object.keys(alerts).sort(),
    };
  });
}
