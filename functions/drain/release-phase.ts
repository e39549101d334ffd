import { forEachLimited } from '../kernel/concurrency.js';
import { reportAlerts } from './alert-report.js';
import { emptyLiveness, type LivenessState } from './episodes.js';
import type { PartitionLease } from './partition-lease.js';
import type { DrainRun } from './run-state.js';

/**
 * The run's end: every lease it still holds is released, with the partition's alert episodes as this run
 * leaves them (evaluated here, raised on the alerts port). A lease it lost is not its to release.
 */
export async function releaseAll(run: DrainRun): Promise<void> {
  const { logger } = run;
  // Not at a signal's stop, where time is short (as freshness-phase.ts): the lag then is against the start.
  if (run.options.follow !== undefined && run.stop.reason !== 'signal') await seeLiveEnds(run);
  await forEachLimited(run.record.partitions.values(), run.options.firestoreConcurrency, async (entry) => {
    if (entry.summary.skipped === 'fenced') return;
    const liveness = await alertsFor(run, entry).catch((error: unknown) => {
      logger.warn('alert evaluation failed; the next run evaluates again', { error });
      return undefined;
    });
    await run.ports.checkpoints.release(entry.lease, liveness).catch((error: unknown) =>
      logger.warn('releasing a lease failed; it will expire', {
        error,
        topic: entry.lease.topic,
        partition: entry.lease.partition,
      }),
    );
  });
}

/** This partition's alert episodes at the end of the run (see alert-report.ts). */
async function alertsFor(run: DrainRun, entry: PartitionLease): Promise<LivenessState> {
  const { lease, mark } = entry;
  const now = run.now();
  const moved = entry.position !== entry.startCheckpoint;
  const { state, raised } = await reportAlerts(
    lease.liveness ?? emptyLiveness,
    {
      pipeline: run.options.pipelineId,
      topic: mark.topic,
      partition: mark.partition,
      now,
      logStart: mark.logStart,
      end: mark.end,
      ...(entry.latestEnd > mark.end ? { liveEnd: entry.latestEnd } : {}),
      checkpointBefore: entry.startCheckpoint,
      checkpointAfter: entry.position,
      lastProgressAt: moved ? now : (lease.lastProgressAt ?? null),
      ...(entry.lost === undefined ? {} : { lost: entry.lost }),
      ...(entry.heldBack ? { heldBack: entry.summary.waiting ?? 'held back' } : {}),
    },
    run.options.alertThresholds,
    { logger: run.logger, ...(run.ports.alerts === undefined ? {} : { alerts: run.ports.alerts }) },
  );
  run.record.alerted(raised);
  return state;
}

/** Following the log: each partition's end read again at the run's end (one read a topic), for its lag. */
async function seeLiveEnds(run: DrainRun): Promise<void> {
  const entries = [...run.record.partitions.values()];
  const topics = [...new Set(entries.map((e) => e.mark.topic))];
  try {
    const ends = new Map(
      (await run.ports.source.watermarks(topics)).map((m) => [`${m.topic}~${m.partition}`, m.end]),
    );
    for (const entry of entries) {
      const end = ends.get(`${entry.mark.topic}~${entry.mark.partition}`);
      if (end !== undefined) entry.seesEnd(end);
    }
  } catch (error) {
    // The lag stays the one against the end seen at the start: said so, never silently.
    run.logger.warn('reading the partitions’ ends at the run’s end failed; lag is against the start', {
      error,
    });
  }
}
