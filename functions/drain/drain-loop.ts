import { emptyLiveness, type Thresholds } from '../alerts/episodes.js';
import { reportAlerts } from '../alerts/report.js';
import { ownedBy, partitionId } from './assignment.js';
import { classifyRecords, planFetched, publishDeadLetters, writeBatch } from './batch.js';
import { forEachLimited } from './concurrency.js';
import { asError, FencedError } from './errors.js';
import type { Logger } from './logger.js';
import { planStart } from './partition-start.js';
import { type RowShape, recordSize } from './records.js';
import { type Replay, splitReplayed } from './replay.js';
import { sleep } from './retry.js';
import type { Rules } from './rules.js';
import { planSharing, type Watched } from './share.js';
import { type StartPosition, startOffset } from './start-position.js';
import { createStreamFlusher, finishIntent } from './stream-flush.js';
import type {
  Alerts,
  Checkpoints,
  DeadLetters,
  ErrorTable,
  FetchedBatch,
  KafkaRecord,
  Lease,
  PartitionSummary,
  Position,
  RunSummary,
  Sink,
  Source,
  SourceReader,
  StopReason,
  StreamSink,
  Watermarks,
} from './types.js';

export interface DrainPorts {
  readonly source: Source;
  readonly checkpoints: Checkpoints;
  readonly sink: Sink;
  /** storage-write mode: rows go through streams and intents (stream-flush.ts) instead of `sink`. */
  readonly streams?: StreamSink;
  readonly deadLetters: DeadLetters;
  /** merge mode: the error table the drain writes each dead letter to, once (see ErrorTable). */
  readonly errorTable?: ErrorTable;
  /** Without it (no ALERT_TOPIC), alerts are only logged. */
  readonly alerts?: Alerts;
  /** Business rules (RULES_MODULE), if any. */
  readonly rules?: Rules;
}

export interface DrainOptions {
  readonly pipelineId: string;
  readonly runId: string;
  readonly execution: string;
  readonly taskIndex: number;
  readonly taskCount: number;
  readonly topics: readonly string[];
  readonly budgetMs: number;
  readonly leaseTtlMs: number;
  readonly batchMaxRecords: number;
  readonly batchMaxBytes: number;
  readonly retentionGapPolicy: 'fail' | 'skip';
  readonly startPosition: StartPosition;
  /** After a stop is asked for, how long the batch in flight may take to settle before it is abandoned. */
  readonly settleMs: number;
  /** How many partitions may have a batch in flight at once. */
  readonly partitionConcurrency: number;
  /** How many bytes of fetched records may be in flight at once (memory; the size of flushes). */
  readonly inFlightMaxBytes: number;
  /** How many Firestore round trips (leases, releases) a run has in flight at once. */
  readonly firestoreConcurrency: number;
  readonly alertThresholds: Thresholds;
  /** Validation against the table schema; without it rows go to BigQuery as they are. */
  readonly rowShape?: RowShape;
  readonly tombstones: 'skip' | 'dead-letter';
}

export interface DrainContext {
  readonly logger: Logger;
  readonly now: () => number;
  /** Aborts on SIGTERM/SIGINT. */
  readonly signal: AbortSignal;
  /** Test-only crash points; a no-op in production. */
  readonly fault?: (point: string) => void;
  readonly onProgress?: (progress: { recordsRead: number; lag: Map<string, number> }) => void;
}

interface Owned {
  lease: Lease;
  mark: Watermarks;
  /** The checkpoint as this run found it. */
  startCheckpoint: number | null;
  /** Records deleted by retention before they were drained, seen at the start of this run. */
  lost?: { from: number; to: number; skipped: boolean };
  summary: PartitionSummary;
  /** The checkpoint as last committed. */
  position: number;
  /** The end offset seen at start: this run reads up to here and no further. */
  end: number;
  done: boolean;
  lastRenewedAt: number;
  /** A renewal is on the wire (renewals never pile up behind a service that does not answer). */
  renewing?: boolean;
  /** Aborted when the lease could not be renewed in time: the write in flight is abandoned, uncommitted. */
  abandon: AbortController;
  /** storage-write mode, after an operator moved the checkpoint back: what the tables already hold below `until`. */
  replay?: Replay;
}

/**
 * One bounded run: lease this task's partitions, drain each from its checkpoint up to the end offset seen
 * at start, and commit each batch only after its rows and dead letters are durable. Stops when caught up,
 * at the budget, or on the signal; always releases what it leased.
 */
export async function runDrain(
  ports: DrainPorts,
  options: DrainOptions,
  context: DrainContext,
): Promise<RunSummary> {
  const { logger, now } = context;
  const startedAt = now();
  const owner = options.runId;
  const owned = new Map<string, Owned>();
  const summaries: PartitionSummary[] = [];
  const offsetsAtStart = new Map<string, Promise<Map<number, number>>>();
  const totals = {
    recordsRead: 0,
    rowsWritten: 0,
    deadLettered: 0,
    tombstonesSkipped: 0,
    commits: 0,
    alerts: 0,
  };
  let stopReason: StopReason = 'caught_up';
  let failure: Error | undefined;
  const flusher =
    ports.streams === undefined
      ? undefined
      : createStreamFlusher(
          { sink: ports.streams, checkpoints: ports.checkpoints, deadLetters: ports.deadLetters },
          {
            leaseTtlMs: options.leaseTtlMs,
            flushMaxBytes: options.batchMaxBytes * 4,
            logger,
            now,
            fault: context.fault,
          },
        );

  // `stop` ends fetching (budget or signal); `hardStop` abandons the batch in flight after the grace.
  const stop = new AbortController();
  const hardStop = new AbortController();
  const requestStop = (reason: StopReason): void => {
    if (stop.signal.aborted) return;
    stopReason = reason;
    stop.abort();
    hardStopTimer = setTimeout(() => hardStop.abort(), options.settleMs);
  };
  let hardStopTimer: NodeJS.Timeout | undefined;
  const onSignal = (): void => requestStop('signal');
  if (context.signal.aborted) onSignal();
  context.signal.addEventListener('abort', onSignal, { once: true });
  const budgetTimer = setTimeout(() => requestStop('budget'), options.budgetMs);
  // Renewals every third of the TTL; a partition whose lease could not be renewed is left within the last
  // sixth of the TTL before the lease can expire: looked at every twelfth, so that one look falls in it
  // with room to spare (see renewLeases).
  const renewTimer = setInterval(renewLeases, Math.max(10, Math.floor(options.leaseTtlMs / 12)));

  /** The reader of the partitions being drained (one per round: the task's own share, then shared ones). */
  let reader: SourceReader | undefined;
  try {
    const all = await ports.source.watermarks(options.topics);
    const mine = ownedBy(all, options.taskIndex, options.taskCount);
    await drainPartitions(mine, false);
    if (options.taskCount > 1 && !stop.signal.aborted) {
      const ids = new Set(mine.map(partitionId));
      await shareWork(all.filter((m) => !ids.has(partitionId(m))));
    }
  } catch (thrown) {
    failure = asError(thrown);
    stopReason = 'error';
    logger.error('run failed', { error: failure });
  } finally {
    clearTimeout(budgetTimer);
    clearInterval(renewTimer);
    context.signal.removeEventListener('abort', onSignal);
    await reader?.close().catch((error: unknown) => logger.warn('closing the source failed', { error }));
    await releaseAll();
    clearTimeout(hardStopTimer);
  }

  // A run that got through its work but left a partition unable to move did not catch up.
  if (stopReason === 'caught_up' && summaries.some((p) => p.waiting !== undefined)) stopReason = 'stalled';
  const summary: RunSummary = {
    event: 'run_summary',
    pipeline: options.pipelineId,
    runId: options.runId,
    execution: options.execution,
    taskIndex: options.taskIndex,
    taskCount: options.taskCount,
    stopReason,
    ...totals,
    durationMs: now() - startedAt,
    lag: summaries.reduce((total, p) => total + (p.lag ?? 0), 0),
    partitionCount: summaries.length,
    partitions: summaries.sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition),
    ...(failure ? { error: failure.message } : {}),
  };
  await ports.checkpoints
    .recordRun(summary)
    .catch((error: unknown) => logger.warn('recording the run summary failed', { error }));
  return summary;

  /** Leases the partitions, then reads and drains those with records waiting, until done or stopped. */
  async function drainPartitions(marks: readonly Watermarks[], shared: boolean): Promise<void> {
    const positions: Position[] = [];
    await forEachLimited(marks, options.firestoreConcurrency, async (mark) => {
      if (stop.signal.aborted) return;
      const position = await leasePartition(mark, shared);
      if (position !== undefined) positions.push(position);
    });
    if (positions.length === 0 || stop.signal.aborted) return;
    reader = await ports.source.open(positions);
    await drainOpenPartitions(reader);
    const done = reader;
    reader = undefined;
    await done.close().catch((error: unknown) => logger.warn('closing the source failed', { error }));
  }

  /**
   * After its own share, while its budget lasts: other tasks' partitions whose records wait and whose
   * lease is free or has expired (see share.ts), so that a task that died or started late does not leave
   * its share for the next execution.
   */
  async function shareWork(others: readonly Watermarks[]): Promise<void> {
    const watched = new Map<string, Watched>();
    let candidates = others.filter((m) => m.end > m.logStart);
    while (candidates.length > 0 && !stop.signal.aborted) {
      const states = await ports.checkpoints.peek(candidates);
      const plan = planSharing(candidates, new Map(states.map((s) => [partitionId(s), s])), now(), watched);
      if (plan.take.length > 0) {
        logger.info("taking other tasks' partitions whose records wait", { partitions: plan.take.length });
        await drainPartitions(plan.take, true);
        const taken = new Set(plan.take.map(partitionId));
        candidates = plan.remaining.filter((m) => !taken.has(partitionId(m)));
        continue;
      }
      candidates = plan.remaining;
      if (plan.waitUntil === undefined) return;
      // Partitions held by runs that may be dead: look again in a moment (a live one will have written).
      await sleep(Math.max(0, plan.waitUntil - now()) + 50, stop.signal);
    }
  }

  async function leasePartition(mark: Watermarks, shared = false): Promise<Position | undefined> {
    const id = partitionId(mark);
    const summary: PartitionSummary = {
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
    const lease = await ports.checkpoints.acquire(mark, owner, options.leaseTtlMs);
    // Another task's partition that someone took first is simply not this run's business.
    if (lease === undefined && shared) return undefined;
    summaries.push(summary);
    if (lease === undefined) {
      summary.skipped = 'leased_elsewhere';
      logger.info('partition leased by another run; skipped', {
        topic: mark.topic,
        partition: mark.partition,
      });
      return undefined;
    }
    if (lease.paused) {
      summary.skipped = 'paused';
      await ports.checkpoints.release(lease);
      logger.info('partition paused by an operator; skipped', {
        topic: mark.topic,
        partition: mark.partition,
      });
      return undefined;
    }
    let start = lease.nextOffset ?? (await firstOffset(mark));
    const entry: Owned = {
      lease,
      mark,
      startCheckpoint: lease.nextOffset,
      summary,
      position: start,
      end: mark.end,
      done: false,
      lastRenewedAt: now(),
      abandon: new AbortController(),
    };
    owned.set(id, entry);
    const log = logger.child({ topic: mark.topic, partition: mark.partition });
    if (lease.intent && ports.streams !== undefined) {
      // A flush a run recorded and did not finish: finished first, whatever happened to that run.
      const finished = await finishRecordedIntent(entry, lease.intent, ports.streams);
      if (finished === undefined) return undefined;
      start = finished;
    }

    const plan = planStart(start, lease.nextOffset, mark, options.retentionGapPolicy);
    summary.from = summary.to = plan.from;
    if (plan.action !== 'past-end' && plan.lost !== undefined) {
      // Records in [lost.from, logStart) were deleted by retention before we read them. Never silent.
      log.error('retention gap: records were deleted before they were drained', {
        kind: 'retention_gap',
        lostFrom: plan.lost.from,
        lostTo: plan.lost.to,
        policy: options.retentionGapPolicy,
      });
      entry.lost = plan.lost;
    }
    if (plan.action === 'retention-gap-wait' || plan.action === 'past-end') {
      if (plan.action === 'past-end') {
        log.error('checkpoint is past the end of the partition (topic recreated?); partition skipped', {
          checkpoint: plan.from,
          end: mark.end,
        });
      }
      summary.lag = Math.max(0, mark.end - plan.from);
      summary.skipped = 'error';
      entry.done = true;
      return undefined;
    }
    const empty = { records: 0, rows: 0, deadLetters: 0, lastRecordTimestamp: null };
    if (plan.lost !== undefined) {
      entry.lease = await commit(entry, {
        fromOffset: plan.lost.from,
        nextOffset: plan.lost.to,
        lost: true,
        ...empty,
      });
    }
    // The start position is resolved once and kept: `latest` or a time must not move on the next run.
    if (plan.pin)
      entry.lease = await commit(entry, { fromOffset: plan.from, nextOffset: plan.from, ...empty });
    summary.lag = mark.end - plan.from;
    entry.position = plan.from;
    await loadReplay(entry);
    if (plan.action === 'idle') {
      entry.done = true; // nothing to read: an idle partition costs one lease round trip
      return undefined;
    }
    return { topic: mark.topic, partition: mark.partition, offset: plan.from };
  }

  /**
   * storage-write mode, a checkpoint an operator moved back: which of the offsets about to be read again
   * the tables still hold, read from the tables themselves (one query each), so that the replay writes
   * only the rest (an operator may have deleted rows precisely to have them written again).
   */
  async function loadReplay(entry: Owned): Promise<void> {
    const until = Math.min(entry.lease.replayUntil ?? 0, entry.end);
    if (ports.streams === undefined || until <= entry.position) return;
    const held = await ports.streams.heldOffsets(entry.mark, entry.position, until);
    entry.replay = { ...held, until };
    logger.notice('replaying offsets written before: those the tables still hold are not written again', {
      topic: entry.mark.topic,
      partition: entry.mark.partition,
      from: entry.position,
      to: until,
      heldRows: held.rows.size,
      heldDeadLetters: held.deadLetters.size,
    });
  }

  /** Finishes a recorded intent; the offset to go on from, or undefined when the partition must wait. */
  async function finishRecordedIntent(
    entry: Owned,
    intent: NonNullable<Lease['intent']>,
    streams: StreamSink,
  ): Promise<number | undefined> {
    const log = logger.child({ topic: entry.mark.topic, partition: entry.mark.partition });
    try {
      const outcome = await finishIntent(streams, entry.mark, intent);
      if (outcome === 'discard') {
        log.warn('a recorded flush never committed and its streams are gone: the range is read again', {
          from: intent.fromOffset,
          to: intent.nextOffset,
        });
        return intent.fromOffset;
      }
      entry.lease = await commit(entry, { ...intent, streams: intent.streams });
      log.notice('a flush recorded by an earlier run was finished', {
        from: intent.fromOffset,
        to: intent.nextOffset,
        rows: intent.rows,
        deadLetters: intent.deadLetters,
      });
      return intent.nextOffset;
    } catch (error) {
      // This partition waits (its `stalled` episode runs on); the others are drained.
      log.error('finishing a recorded flush failed; the partition waits for the next run', { error });
      entry.summary.skipped = 'error';
      entry.summary.waiting = `a recorded flush of [${intent.fromOffset}, ${intent.nextOffset}) could not be finished: ${asError(error).message}`;
      entry.done = true;
      return undefined;
    }
  }

  /**
   * Partitions are drained side by side (up to `partitionConcurrency` batches in flight), each one
   * strictly in offset order: a partition's next batch starts only when its previous one is committed.
   */
  async function firstOffset(mark: Watermarks): Promise<number> {
    if (options.startPosition.kind !== 'timestamp') return startOffset(options.startPosition, mark);
    const cached =
      offsetsAtStart.get(mark.topic) ?? ports.source.offsetsAt(mark.topic, options.startPosition.timestamp);
    offsetsAtStart.set(mark.topic, cached);
    return startOffset(options.startPosition, mark, (await cached).get(mark.partition));
  }

  async function drainOpenPartitions(source: SourceReader): Promise<void> {
    const inFlight = new Map<string, Promise<void>>();
    // Bounded by bytes as well as by partitions: many partitions may wait in one flush, not unbounded data.
    let bytesInFlight = 0;
    let failure: unknown;
    let wake = new AbortController();
    const settled = (): void => wake.abort();

    while (!stop.signal.aborted && failure === undefined && [...owned.values()].some((p) => !p.done)) {
      if (inFlight.size >= options.partitionConcurrency || bytesInFlight >= options.inFlightMaxBytes) {
        await Promise.race(inFlight.values());
        continue;
      }
      if (wake.signal.aborted) wake = new AbortController();
      const fetched = await source.next(AbortSignal.any([stop.signal, wake.signal]));
      if (fetched === undefined) continue; // stopped, or a batch settled: look at the state again
      const id = partitionId(fetched);
      const entry = owned.get(id);
      if (entry === undefined || entry.done) continue;
      const bytes = fetched.records.reduce((n, r) => n + recordSize(r), 0);
      bytesInFlight += bytes;
      const work = (inFlight.get(id) ?? Promise.resolve())
        .then(() => drainFetched(entry, fetched))
        .then(() => {
          if (entry.position >= entry.end && !entry.done) {
            entry.done = true;
            source.finish(fetched);
          }
          context.onProgress?.({ recordsRead: totals.recordsRead, lag: lagByPartition() });
        })
        .catch((error: unknown) => {
          failure ??= error;
        })
        .finally(() => {
          bytesInFlight -= bytes;
          if (inFlight.get(id) === work) inFlight.delete(id);
          settled();
        });
      inFlight.set(id, work);
    }
    await Promise.all(inFlight.values());
    if (failure !== undefined) throw failure;
  }

  async function drainFetched(entry: Owned, fetched: FetchedBatch): Promise<void> {
    if (entry.done || stop.signal.aborted) return; // settle the batch in flight, start no other
    if (fetched.fromOffset !== entry.position) {
      // The reader fetched on from where an earlier batch of this partition ended, but that batch was not
      // committed (abandoned at a stop, or its write failed): nothing after it may be written or skipped
      // to in this run. The next run reads again from the checkpoint.
      logger.warn(
        'an earlier batch of the partition was not committed; the partition waits for the next run',
        {
          topic: fetched.topic,
          partition: fetched.partition,
          checkpoint: entry.position,
          fetchedFrom: fetched.fromOffset,
        },
      );
      entry.done = true;
      reader?.finish(fetched);
      return;
    }
    // Only what lies between the checkpoint and the end seen at start belongs to this run.
    const plan = planFetched(fetched, entry.position, entry.end, {
      maxRecords: options.batchMaxRecords,
      maxBytes: options.batchMaxBytes,
    });
    if (plan.skipTo !== undefined) {
      // Offsets with no records (compaction, transaction markers): the checkpoint moves past them.
      entry.lease = await commit(entry, {
        fromOffset: entry.position,
        nextOffset: plan.skipTo,
        records: 0,
        rows: 0,
        deadLetters: 0,
        lastRecordTimestamp: null,
      });
      return;
    }
    for (const { records, nextOffset } of plan.batches) {
      if (entry.done) return; // fenced while this fetch was being written
      if (stop.signal.aborted) return; // settle the batch in flight, start no other
      const last = records[records.length - 1]!;
      const log = logger.child({
        topic: fetched.topic,
        partition: fetched.partition,
        from: entry.position,
        to: nextOffset,
      });
      const began = now();
      try {
        // At a hard stop the batch is abandoned, not awaited: a write still on the wire may land, and
        // the next run replays it (merge mode inserts nothing twice).
        const stopWriting = AbortSignal.any([hardStop.signal, entry.abandon.signal]);
        const policy = {
          ingestedAt: new Date(now()),
          signal: stopWriting,
          shape: options.rowShape,
          tombstones: options.tombstones,
        };
        const written = await untilAborted(
          flusher === undefined
            ? writeBatch(records, { ...ports, fault: context.fault }, policy)
            : flushToStreams(entry, records, nextOffset, policy),
          stopWriting,
        );
        const wroteAt = now();
        if (written === undefined || stopWriting.aborted) {
          log.warn(
            entry.abandon.signal.aborted
              ? 'batch abandoned: the lease could not be renewed; it will be read again by the next run'
              : 'batch abandoned at shutdown; it will be read again by the next run',
          );
          return;
        }
        if (written.lease !== undefined) entry.lease = written.lease;
        entry.lease = await commit(entry, {
          fromOffset: entry.position,
          nextOffset,
          records: records.length,
          rows: written.rows,
          deadLetters: written.deadLetters,
          tombstones: written.tombstones,
          lastRecordTimestamp: last.timestamp,
          ...(written.streams === undefined ? {} : { streams: written.streams }),
        });
        context.fault?.('after-commit');
        // What this run wrote: a replay's offsets the tables already held are in the ledger, not here.
        const rowsWritten = written.rows - (written.alreadyHeld?.rows ?? 0);
        const deadLettered = written.deadLetters - (written.alreadyHeld?.deadLetters ?? 0);
        totals.recordsRead += records.length;
        totals.rowsWritten += rowsWritten;
        totals.deadLettered += deadLettered;
        totals.tombstonesSkipped += written.tombstones;
        entry.summary.read += records.length;
        entry.summary.rowsWritten += rowsWritten;
        entry.summary.deadLettered += deadLettered;
        if (written.tombstones > 0)
          entry.summary.tombstonesSkipped = (entry.summary.tombstonesSkipped ?? 0) + written.tombstones;
        log.debug('batch committed', {
          records: records.length,
          ...written,
          writeMs: wroteAt - began,
          commitMs: now() - wroteAt,
          durationMs: now() - began,
        });
      } catch (error) {
        if (error instanceof FencedError) {
          log.warn('lease lost; this run no longer touches the partition', {
            error,
            durationMs: now() - began,
          });
          entry.done = true;
          entry.summary.skipped = 'fenced';
          return;
        }
        entry.summary.skipped = 'error';
        throw error;
      }
    }
  }

  /** storage-write mode: the batch through the stream flusher (dead letters published first). */
  async function flushToStreams(
    entry: Owned,
    records: readonly KafkaRecord[],
    nextOffset: number,
    policy: Parameters<typeof classifyRecords>[2],
  ) {
    // A replayed range: offsets the tables still hold are counted, not written again.
    const { fresh, heldRows, heldLetters } = splitReplayed(records, entry.replay);
    const { rows, letters, tombstones } = await classifyRecords(fresh, ports, policy);
    await publishDeadLetters(letters, ports.deadLetters);
    const flushed = await flusher!.flush({
      alreadyHeld: { rows: heldRows, deadLetters: heldLetters },
      bytes: records.reduce((n, r) => n + recordSize(r), 0),
      lease: entry.lease,
      fromOffset: entry.position,
      nextOffset,
      records: records.length,
      tombstones,
      lastRecordTimestamp: records[records.length - 1]!.timestamp,
      rows,
      letters,
    });
    // Rows BigQuery refused were left out of the streams and became dead letters.
    const rejected = flushed.rejected.length;
    return {
      rows: rows.length - rejected + heldRows,
      deadLetters: letters.length + rejected + heldLetters,
      tombstones,
      lease: flushed.lease,
      streams: flushed.streams,
      ...(heldRows + heldLetters > 0 ? { alreadyHeld: { rows: heldRows, deadLetters: heldLetters } } : {}),
    };
  }

  async function commit(
    entry: Owned,
    batch: {
      fromOffset: number;
      nextOffset: number;
      records: number;
      lost?: boolean;
      rows: number;
      deadLetters: number;
      tombstones?: number;
      lastRecordTimestamp: number | null;
      streams?: readonly string[];
    },
  ): Promise<Lease> {
    const pending = ports.checkpoints.commit({ lease: entry.lease, ...batch }, options.leaseTtlMs);
    // Crash tests: die while the commit is on the wire (it may or may not have landed).
    if (context.fault) setImmediate(() => context.fault?.('mid-commit'));
    const lease = await pending;
    totals.commits++;
    entry.position = batch.nextOffset;
    entry.lastRenewedAt = now();
    entry.summary.to = batch.nextOffset;
    entry.summary.lag = Math.max(0, entry.end - batch.nextOffset);
    return lease;
  }

  /**
   * Renews the leases of partitions still being drained, each at most one renewal on the wire. A lease that
   * could not be renewed (Firestore does not answer, or fails) is given up before it can expire: its
   * write in flight is abandoned, nothing more of it is written or committed in this run, and whoever
   * takes the lease after its expiry starts from the checkpoint, which this run can no longer move.
   */
  function renewLeases(): void {
    const at = now();
    for (const entry of owned.values()) {
      if (entry.done) continue;
      if (at >= entry.lease.expiresAt - leaseGiveUpMarginMs(options.leaseTtlMs)) {
        giveUp(entry, at);
        continue;
      }
      // Renewed even while a batch is being written: a slow write (a long MERGE, retries) must not let
      // the lease lapse. A renewal racing a commit is settled by the compare-and-swap.
      if (entry.renewing || at - entry.lastRenewedAt < options.leaseTtlMs / 3) continue;
      entry.lastRenewedAt = at;
      entry.renewing = true;
      ports.checkpoints
        .renew(entry.lease, options.leaseTtlMs)
        .then(
          (lease) => {
            if (!entry.done && lease.expiresAt > entry.lease.expiresAt) entry.lease = lease;
          },
          (error: unknown) => {
            if (error instanceof FencedError) {
              if (entry.done) return;
              logger.warn('lease lost at renewal', {
                topic: entry.lease.topic,
                partition: entry.lease.partition,
              });
              entry.done = true;
              entry.summary.skipped = 'fenced';
              entry.abandon.abort();
              reader?.finish(entry.lease);
            } else {
              logger.warn('lease renewal failed; will retry', {
                error,
                topic: entry.lease.topic,
                partition: entry.lease.partition,
                expiresInMs: entry.lease.expiresAt - now(),
              });
            }
          },
        )
        .finally(() => {
          entry.renewing = false;
        });
    }
  }

  function giveUp(entry: Owned, at: number): void {
    // Already expired: the run was not running (frozen, a zombie); someone else may hold the lease now.
    const expired = at >= entry.lease.expiresAt;
    logger.error(
      expired
        ? 'the lease expired while this run was not running; the partition is left to whoever holds it'
        : 'the lease could not be renewed in time; the partition is left before its lease can expire',
      {
        topic: entry.lease.topic,
        partition: entry.lease.partition,
        expiresInMs: entry.lease.expiresAt - at,
      },
    );
    entry.done = true;
    entry.summary.skipped = expired ? 'fenced' : 'error';
    entry.abandon.abort();
    reader?.finish(entry.lease);
  }

  async function releaseAll(): Promise<void> {
    await forEachLimited(owned.values(), options.firestoreConcurrency, async (entry) => {
      if (entry.summary.skipped === 'fenced') return;
      const liveness = await alertsFor(entry).catch((error: unknown) => {
        logger.warn('alert evaluation failed; the next run evaluates again', { error });
        return undefined;
      });
      await ports.checkpoints.release(entry.lease, liveness).catch((error: unknown) =>
        logger.warn('releasing a lease failed; it will expire', {
          error,
          topic: entry.lease.topic,
          partition: entry.lease.partition,
        }),
      );
    });
  }

  /** This partition's alert episodes at the end of the run (see alerts/report.ts). */
  async function alertsFor(entry: Owned) {
    const { lease, mark } = entry;
    const moved = entry.position !== entry.startCheckpoint;
    const { state, raised } = await reportAlerts(
      lease.liveness ?? emptyLiveness,
      {
        pipeline: options.pipelineId,
        topic: mark.topic,
        partition: mark.partition,
        now: now(),
        logStart: mark.logStart,
        end: mark.end,
        checkpointBefore: entry.startCheckpoint,
        checkpointAfter: entry.position,
        lastProgressAt: moved ? now() : (lease.lastProgressAt ?? null),
        ...(entry.lost === undefined ? {} : { lost: entry.lost }),
      },
      options.alertThresholds,
      { logger, ...(ports.alerts === undefined ? {} : { alerts: ports.alerts }) },
    );
    totals.alerts += raised;
    return state;
  }

  function lagByPartition(): Map<string, number> {
    return new Map([...owned].map(([id, p]) => [id, Math.max(0, p.end - p.position)]));
  }
}

/**
 * How long before its lease expires a run leaves a partition whose lease it could not renew: a sixth of
 * the TTL (renewals are tried every third), so that it has stopped writing before anyone else may start.
 */
export function leaseGiveUpMarginMs(leaseTtlMs: number): number {
  return Math.floor(leaseTtlMs / 6);
}

/** Resolves with the promise's value, or with undefined as soon as the signal aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.resolve(undefined);
  }
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      promise.catch(() => {});
      resolve(undefined);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
