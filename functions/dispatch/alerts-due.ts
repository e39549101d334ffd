/**
 * G5 when the dispatcher launches nothing: a quiet pipeline still owes its alerts (an `idle` opening after
 * IDLE_ALERT_SECONDS without a record; an alert a run could not publish). The dispatcher does not raise
 * them itself: it evaluates each partition as a run that read nothing would (drain/episodes.ts, on the
 * state a run left), and when any alert would be raised or is still pending it launches one task, whose run
 * raises, publishes and records them under its leases, exactly as a scheduled run always did. Pure.
 */
import { emptyLiveness, evaluateEpisodes, type Thresholds } from '../drain/episodes.js';
import type { LivenessState } from '../kernel/liveness.js';

/** A partition as the dispatcher reads it: Kafka's watermarks and what the last run left in Firestore. */
export interface QuietPartition {
  readonly topic: string;
  readonly partition: number;
  readonly logStart: number;
  readonly end: number;
  /** Undefined when no run has seen the partition yet. */
  readonly state?: {
    readonly nextOffset: number | null;
    readonly lastProgressAt: number | null;
    readonly liveness: LivenessState;
  };
}

/**
 * Why a run is owed though no record waits (the first that applies), or null: a partition no run has seen
 * (a run must record its high watermark for `idle` to be measured), an alert a run left unpublished, or an
 * alert episode that would open or resolve now.
 */
export function alertOwed(
  partitions: readonly QuietPartition[],
  pipeline: string,
  thresholds: Thresholds,
  now: number,
): string | null {
  for (const p of partitions) {
    const where = `${p.topic}/${p.partition}`;
    if (p.state === undefined) return `${where} was never seen by a run`;
    const liveness = p.state.liveness ?? emptyLiveness;
    if (liveness.pendingAlerts.length > 0)
      return `${liveness.pendingAlerts.length} alert(s) of ${where} wait to be published`;
    const checkpoint = p.state.nextOffset;
    const { alerts } = evaluateEpisodes(
      liveness,
      {
        pipeline,
        topic: p.topic,
        partition: p.partition,
        now,
        logStart: p.logStart,
        end: p.end,
        checkpointBefore: checkpoint,
        checkpointAfter: checkpoint,
        lastProgressAt: p.state.lastProgressAt,
      },
      thresholds,
    );
    const first = alerts[0];
    if (first !== undefined)
      return `${first.kind} ${first.state === 'open' ? 'opens' : 'resolves'} on ${where}`;
  }
  return null;
}
