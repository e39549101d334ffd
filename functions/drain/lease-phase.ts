import { startOffset } from '../config/start-position.js';
import { asError, PartitionWaitsError } from '../kernel/errors.js';
import type { Position, Watermarks } from '../kernel/records.js';
import type { PartitionSummary } from '../kernel/summary.js';
import { commitCheckpoint } from './commit.js';
import { PartitionLease } from './partition-lease.js';
import { planStart } from './partition-start.js';
import type { DrainRun } from './run-state.js';

/** How often a run following the log looks again at a partition the run before it still holds. */
export const handoverPollMs = 1_000;

/**
 * Leases one partition and makes it ready to read: what an earlier run left is finished first (the
 * writer's `recover`), the start is planned (the checkpoint, or START_POSITION; a retention gap is
 * reported and, by policy, committed past), and the position to read from is returned. Undefined when the
 * partition is not to be read in this run: held elsewhere, paused, idle, or waiting.
 */
export async function leasePartition(
  run: DrainRun,
  seenAtStart: Watermarks,
  shared: boolean,
): Promise<Position | undefined> {
  let mark = seenAtStart;
  const { logger } = run;
  const where = { topic: mark.topic, partition: mark.partition };
  const acquire = () => run.ports.checkpoints.acquire(mark, run.options.runId, run.options.leaseTtlMs);
  let lease = await acquire();
  // Another task's partition that someone took first is simply not this run's business.
  if (lease === undefined && shared) return undefined;
  // Following the log, runs follow one another: a partition the run before still holds is taken as it is
  // released at that run's budget (or its lease lapses, the run dead), looked at every second.
  let waited = false;
  while (lease === undefined && run.options.follow !== undefined && !run.stop.signal.aborted) {
    await run.timers.sleep(handoverPollMs, run.stop.signal);
    if (!run.stop.signal.aborted) lease = await acquire();
    waited = true;
  }
  // The end seen at the run's start is behind what the run before read meanwhile: seen again. Not only
  // after a wait: following the log, the partitions of a later lease group are taken at the first try once
  // the run before released them, their checkpoints past the end this run saw (issue #78: 24 of 40 were
  // skipped as "past the end").
  const behind = lease?.nextOffset != null && lease.nextOffset > mark.end;
  // A read that fails keeps the end seen at the start (the lease is registered below and released).
  if ((waited || behind) && lease !== undefined)
    mark =
      (await run.ports.source.watermarks([mark.topic]).catch(() => [])).find(
        (m) => m.partition === mark.partition,
      ) ?? mark;
  const summary = emptySummary(mark, shared);
  run.record.lookedAt(summary);
  if (lease === undefined) {
    summary.skipped = 'leased_elsewhere';
    await reportHeldElsewhere(run, mark, summary);
    logger.info('partition leased by another run; skipped', { ...where, lag: summary.lag });
    return undefined;
  }
  if (lease.paused) {
    // A paused partition is the stale data an operator must see: its line says where it stands.
    summary.skipped = 'paused';
    if (lease.nextOffset !== null) {
      summary.from = summary.to = lease.nextOffset;
      summary.lag = Math.max(0, mark.end - lease.nextOffset);
    }
    await run.ports.checkpoints.release(lease);
    logger.info('partition paused by an operator; skipped', where);
    return undefined;
  }
  const start = lease.nextOffset ?? (await firstOffset(run, mark));
  const entry = new PartitionLease({ lease, mark, summary, position: start, at: run.now() }, (p) =>
    run.reader?.finish(p),
  );
  run.record.leased(entry);
  const recovered = await recover(run, entry, start);
  if (recovered === undefined) return undefined;
  return planAndBegin(run, entry, recovered);
}

/** A recorded intent, finished first whatever happened to the run that left it; undefined: the partition waits. */
async function recover(run: DrainRun, entry: PartitionLease, start: number): Promise<number | undefined> {
  const intent = entry.lease.intent;
  try {
    const recovery = await run.ports.writer.recover(entry.lease, run.stop.signal);
    const heldUntil = recovery.heldUntil === undefined ? {} : { heldUntil: recovery.heldUntil };
    if (recovery.commit !== undefined) {
      await commitCheckpoint(run, entry, { ...recovery.commit, ...heldUntil });
      run.record.recovered(recovery.commit.records);
      return recovery.commit.nextOffset;
    }
    const at = recovery.startAt ?? start;
    // What the tables hold of the range kept before anything is read again (the intent cleared with it).
    if (recovery.heldUntil !== undefined)
      await commitCheckpoint(run, entry, {
        fromOffset: at,
        nextOffset: at,
        records: 0,
        rows: 0,
        deadLetters: 0,
        lastRecordTimestamp: null,
        heldUntil: recovery.heldUntil,
      });
    return at;
  } catch (error) {
    if (error instanceof PartitionWaitsError) {
      // Not a failure: what the earlier run left is not finished yet (a load job BigQuery still runs).
      run.logger.warn('a recorded flush is not finished yet; the partition waits for the next run', {
        topic: entry.mark.topic,
        partition: entry.mark.partition,
        reason: error.message,
      });
      entry.leave({ waiting: error.message });
      return undefined;
    }
    // This partition waits (its `stalled` episode runs on); the others are drained.
    run.logger.error('finishing a recorded flush failed; the partition waits for the next run', {
      topic: entry.mark.topic,
      partition: entry.mark.partition,
      error,
    });
    const range = intent ? `of [${intent.fromOffset}, ${intent.nextOffset})` : 'of the partition';
    entry.leave({
      skipped: 'error',
      waiting: `a recorded flush ${range} could not be finished: ${asError(error).message}`,
    });
    return undefined;
  }
}

async function planAndBegin(
  run: DrainRun,
  entry: PartitionLease,
  start: number,
): Promise<Position | undefined> {
  const { mark } = entry;
  const log = run.logger.child({ topic: mark.topic, partition: mark.partition });
  const policy = run.options.retentionGapPolicy;
  const plan = planStart(start, entry.startCheckpoint, mark, policy);
  const lost = plan.action !== 'past-end' ? plan.lost : undefined;
  entry.planned(plan.from, lost);
  if (lost !== undefined) {
    // Records in [lost.from, logStart) were deleted by retention before we read them. Never silent.
    log.error('retention gap: records were deleted before they were drained', {
      kind: 'retention_gap',
      lostFrom: lost.from,
      lostTo: lost.to,
      policy,
    });
  }
  if (plan.action === 'retention-gap-wait' || plan.action === 'past-end') {
    if (plan.action === 'past-end') {
      log.error('checkpoint is past the end of the partition (topic recreated?); partition skipped', {
        checkpoint: plan.from,
        end: mark.end,
      });
    }
    entry.waitsAt(plan.from);
    entry.leave({ skipped: 'error' });
    return undefined;
  }
  const empty = { records: 0, rows: 0, deadLetters: 0, lastRecordTimestamp: null };
  if (plan.lost !== undefined) {
    await commitCheckpoint(run, entry, {
      fromOffset: plan.lost.from,
      nextOffset: plan.lost.to,
      lost: true,
      ...empty,
    });
  }
  // The start position is resolved once and kept: `latest` or a time must not move on the next run.
  if (plan.pin)
    await commitCheckpoint(run, entry, { fromOffset: plan.from, nextOffset: plan.from, ...empty });
  entry.startsAt(plan.from);
  await run.ports.writer.begin(entry.lease, plan.from, entry.end);
  // Following the log, a partition with nothing yet is read all the same: its records are to come.
  if (plan.action === 'idle' && run.options.follow === undefined) {
    entry.leave(); // nothing to read: an idle partition costs one lease round trip
    return undefined;
  }
  return { topic: mark.topic, partition: mark.partition, offset: plan.from };
}

/**
 * A partition another run holds is not drained here, but its line still says where it stands: its
 * checkpoint and the records waiting behind it (a run whose partitions are all held by a run that died
 * must not read as caught up with no lag). Unknown (null) when it has no checkpoint or cannot be read.
 */
async function reportHeldElsewhere(
  run: DrainRun,
  mark: Watermarks,
  summary: PartitionSummary,
): Promise<void> {
  try {
    const [state] = await run.ports.checkpoints.peek([mark]);
    if (state?.nextOffset == null) return;
    summary.from = summary.to = state.nextOffset;
    summary.lag = Math.max(0, mark.end - state.nextOffset);
  } catch (error) {
    run.logger.debug('reading the checkpoint of a partition held elsewhere failed', {
      topic: mark.topic,
      partition: mark.partition,
      error,
    });
  }
}

/** Where a partition with no checkpoint starts (START_POSITION; a time is looked up once per topic). */
async function firstOffset(run: DrainRun, mark: Watermarks): Promise<number> {
  const position = run.options.startPosition;
  if (position.kind !== 'timestamp') return startOffset(position, mark);
  const cached =
    run.offsetsAtStart.get(mark.topic) ?? run.ports.source.offsetsAt(mark.topic, position.timestamp);
  run.offsetsAtStart.set(mark.topic, cached);
  return startOffset(position, mark, (await cached).get(mark.partition));
}

function emptySummary(mark: Watermarks, shared: boolean): PartitionSummary {
  return {
    topic: mark.topic,
    partition: mark.partition,
    from: null,
    to: null,
    lag: null,
    read: 0,
    rowsWritten: 0,
    deadLettered: 0,
    ...(shared ? { shared: true } : {}),
  };
}
