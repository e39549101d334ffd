import type { Firestore } from '@google-cloud/firestore';
import { leaseHeld, type PartitionDoc, partitionDocOf, partitionsOf } from '../checkpoints/partition-doc.js';
import { replaysOf } from '../checkpoints/replay-log.js';
import { type RoutedTopics, tableName } from '../config/routes.js';
import { ageSeconds } from '../kernel/freshness.js';
import type { Source } from '../kernel/ports.js';
import { type Position, partitionId } from '../kernel/records.js';
import { replayEnd, settleUndrained } from '../kernel/undrained.js';

export interface PartitionStatus {
  topic: string;
  /** The table its route writes (`dataset.table`). */
  table: string;
  partition: number;
  checkpoint: number | null;
  highWatermark: number;
  logStart: number;
  lag: number | null;
  /**
   * Now, the age in seconds of the first record waiting at the checkpoint (0 when none waits); null when
   * it could not be read.
   */
  freshnessSeconds: number | null;
  /**
   * The checkpoint is below it after an operator's backward seek: the records up to it are replayed, and
   * freshness counts from the first record at or after it. Null when not replaying.
   */
  replayUntil: number | null;
  paused: boolean;
  leaseOwner: string | null;
  leaseExpiresAt: string | null;
  lastProgressAt: string | null;
  openAlerts: string[];
  /** Dead letters of the partition that replays wrote into its table (`replay-dead-letters`). */
  replayed: number;
}

/** Reading the times of waiting records gives up after this long: their freshness is then unknown. */
const headReadDeadlineMs = 5_000;

/**
 * Where every partition stands: the checkpoint and lease from Firestore against Kafka's watermarks.
 * Backs the `status` function (and later the CLI's `status`).
 */
export async function partitionStatus(
  deps: { firestore: Firestore; source: Source },
  target: { pipelineId: string; routed: readonly RoutedTopics[] },
): Promise<PartitionStatus[]> {
  // A topic routes share by `when` feeds each of their tables.
  const tableOf = new Map<string, string>();
  for (const r of target.routed)
    for (const t of r.topics)
      tableOf.set(t, tableOf.has(t) ? `${tableOf.get(t)} + ${tableName(r.route)}` : tableName(r.route));
  const [marks, docs, replays] = await Promise.all([
    deps.source.watermarks([...tableOf.keys()].sort()),
    partitionsOf(deps.firestore, target.pipelineId).get(),
    replaysOf(deps.firestore, target.pipelineId),
  ]);
  const replayed = new Map<string, number>();
  for (const r of replays.filter((l) => l.pending !== true))
    replayed.set(partitionId(r), (replayed.get(partitionId(r)) ?? 0) + 1);
  const byId = new Map(docs.docs.map((d) => [d.id, d]));
  const lines = marks.map((mark) => {
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
      freshnessSeconds: null as number | null,
      replayUntil: replayingTo(doc, checkpoint),
      paused: doc?.paused === true,
      leaseOwner: held ? doc!.leaseOwner : null,
      leaseExpiresAt: held ? doc!.leaseExpiresAt!.toDate().toISOString() : null,
      lastProgressAt: doc?.lastProgressAt ? doc.lastProgressAt.toDate().toISOString() : null,
      openAlerts: Object.keys(doc?.openAlerts ?? {}).sort(),
      replayed: replayed.get(partitionId(mark)) ?? 0,
    };
  });
  // Live freshness: one bounded read per partition whose records wait (the probe batches them per leader).
  // A partition replaying an operator's seek: the record waiting behind the replay says how fresh it is.
  const waiting: Position[] = lines
    .filter((p) => (p.lag ?? 0) > 0)
    .map((p) => ({
      topic: p.topic,
      partition: p.partition,
      offset: Math.max(p.checkpoint ?? p.logStart, p.logStart, p.replayUntil ?? 0),
    }));
  const heads = await headsWithin(deps.source, waiting);
  const now = Date.now();
  for (const line of lines) {
    const head = heads.get(partitionId(line));
    line.freshnessSeconds =
      line.lag === 0 || head === null ? 0 : head === undefined ? null : ageSeconds(now, head);
  }
  return lines;
}

/** The times of the records waiting; none (unknown) for what did not answer within the deadline. */
async function headsWithin(source: Source, positions: readonly Position[]) {
  if (positions.length === 0) return new Map<string, number | null>();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Map<string, number | null>>((resolve) => {
    timer = setTimeout(() => resolve(new Map()), headReadDeadlineMs);
  });
  const read = source.headTimestamps(positions).catch(() => new Map<string, number | null>());
  return Promise.race([read, late]).finally(() => clearTimeout(timer));
}

/**
 * Where a partition's replay after an operator's seek back ends, for its freshness: `replayUntil`, or the
 * first offset the replay reaches that was never drained (a forward seek passed it over); null when none.
 */
function replayingTo(doc: PartitionDoc | undefined, checkpoint: number | null): number | null {
  if (doc?.replayUntil == null || checkpoint === null) return null;
  const end = replayEnd(doc.replayUntil, settleUndrained(doc.undrained ?? [], checkpoint), checkpoint);
  return checkpoint < end ? end : null;
}
