import { forEachLimited } from '../kernel/concurrency.js';
import type { SourceReader } from '../kernel/ports.js';
import type { FetchedBatch, Position, Watermarks } from '../kernel/records.js';
import { partitionId } from '../kernel/records.js';
import { beginWaiting, heldBytes, joined, joinFetched, type Waiting } from './batch-fill.js';
import { drainFetched } from './batch-phase.js';
import { leasePartition } from './lease-phase.js';
import type { PartitionLease } from './partition-lease.js';
import { type DrainRun, readsTo } from './run-state.js';

/** Leases the partitions, then reads and drains those with records waiting, until done or stopped. */
export async function drainPartitions(
  run: DrainRun,
  marks: readonly Watermarks[],
  shared: boolean,
): Promise<void> {
  const positions: Position[] = [];
  await forEachLimited(marks, run.options.firestoreConcurrency, async (mark) => {
    if (run.stop.signal.aborted) return;
    const position = await leasePartition(run, mark, shared);
    if (position !== undefined) positions.push(position);
  });
  if (positions.length === 0 || run.stop.signal.aborted) return;
  run.reader = await run.ports.source.open(positions);
  await readOpenPartitions(run, run.reader);
  const done = run.reader;
  run.reader = undefined;
  await done.close().catch((error: unknown) => run.logger.warn('closing the source failed', { error }));
}

/**
 * How long a partition's batch waits for the partition's next fetch to fill it, at most: of the time the
 * run fetches (a wait on its bounds starts it again).
 */
const FILL_WAIT_MS = 200;

/**
 * Partitions are drained side by side (up to `partitionConcurrency` batches in flight, and a bound on the
 * bytes fetched and not yet committed), each one strictly in offset order: a partition's next batch
 * starts only when its previous one is committed. Its fetches make batches as large as the limits allow,
 * not one fetch's worth (Kafka's fetches hold up to 2 MiB a partition; a batch costs a flush and a commit
 * whatever it holds): those that arrive while it writes are joined, and while records before the end seen
 * at start are still to come, a batch waits for the partition's next fetch (up to `FILL_WAIT_MS`) until it
 * reaches the limits.
 */
async function readOpenPartitions(run: DrainRun, source: SourceReader): Promise<void> {
  const { options } = run;
  const limits = { maxRecords: options.batchMaxRecords, maxBytes: options.batchMaxBytes };
  const inFlight = new Map<string, Promise<void>>();
  /** Per partition, the fetches waiting to be written as one batch (behind its batch in flight, or held). */
  const waiting = new Map<string, Waiting>();
  // Bounded by bytes as well as by partitions: many partitions may wait in one flush, not unbounded data.
  // The bytes a record holds in memory, its objects counted (heldBytes); not records alone: a bound
  // smaller than one fetch starves the other partitions while that fetch's batches drain one by one
  // (batches of 10 left a partition unread for a whole run).
  let bytesInFlight = 0;
  const overBound = (): boolean => bytesInFlight >= options.inFlightMaxBytes;
  let failure: unknown;
  let wake = new AbortController();
  /** Waiting for a batch in flight to settle (the bounds), not fetching. */
  let blocked = false;
  const open = (): boolean => [...run.record.partitions.values()].some((p) => !p.done);

  const start = (id: string, entry: PartitionLease, slot: Waiting): void => {
    slot.hold?.();
    slot.hold = undefined;
    const work = (inFlight.get(id) ?? Promise.resolve())
      .then(() => {
        if (waiting.get(id) === slot) waiting.delete(id);
        return drainFetched(run, entry, joined(slot));
      })
      .then(() => {
        if (entry.readPosition >= readsTo(run, entry)) entry.leave(); // drained up to the end seen at start
        run.context.onProgress?.({ recordsRead: run.record.totals.recordsRead, lag: lagByPartition(run) });
      })
      .catch((error: unknown) => {
        failure ??= error;
      })
      .finally(() => {
        bytesInFlight -= heldBytes(slot.bytes, slot.records);
        if (inFlight.get(id) === work) inFlight.delete(id);
        wake.abort(); // a batch settled: the loop looks at the state again
      });
    inFlight.set(id, work);
  };
  /** A fetch (or what is left of one) joins its partition's batch waiting, or begins the next. */
  const take = (id: string, entry: PartitionLease, fetched: FetchedBatch): FetchedBatch | undefined => {
    const queued = waiting.get(id);
    if (queued !== undefined) {
      const { bytes, records, rest } = joinFetched(queued, fetched, limits);
      bytesInFlight += heldBytes(bytes, records);
      // Held, it is written once full or when the fetches reach the end seen at start (or do not follow on).
      if (
        queued.hold !== undefined &&
        (queued.full || queued.nextOffset >= readsTo(run, entry) || rest === fetched)
      )
        start(id, entry, queued);
      if (rest !== fetched) return rest;
    }
    const { waiting: slot, rest } = beginWaiting(fetched, limits);
    bytesInFlight += heldBytes(slot.bytes, slot.records);
    waiting.set(id, slot);
    if (inFlight.has(id) || slot.full || slot.nextOffset >= readsTo(run, entry)) start(id, entry, slot);
    else hold(id, entry, slot);
    return rest;
  };
  const hold = (id: string, entry: PartitionLease, slot: Waiting): void => {
    // Following the log, a batch waits its linger for records yet to be written; else 200 ms for a fetch.
    slot.hold = run.timers.after(options.follow?.lingerMs ?? FILL_WAIT_MS, () => {
      if (slot.hold === undefined) return;
      // While the run waits on its bounds it fetches nothing: the wait starts again.
      if (blocked) return hold(id, entry, slot);
      start(id, entry, slot);
      wake.abort();
    });
  };
  const startHeld = (): void => {
    for (const [id, slot] of waiting) {
      const entry = run.record.partitions.get(id);
      if (slot.hold !== undefined && entry !== undefined) start(id, entry, slot);
    }
  };

  while (!run.stop.signal.aborted && failure === undefined && open()) {
    // Batches held count towards the bytes: when only they hold the bound, they are written.
    if (inFlight.size === 0 && overBound()) startHeld();
    if (inFlight.size > 0 && (inFlight.size >= options.partitionConcurrency || overBound())) {
      blocked = true;
      await Promise.race(inFlight.values());
      blocked = false;
      continue;
    }
    if (wake.signal.aborted) wake = new AbortController();
    const fetched = await source.next(AbortSignal.any([run.stop.signal, wake.signal]));
    if (fetched === undefined) continue; // stopped, or a batch settled: look at the state again
    const id = partitionId(fetched);
    const entry = run.record.partitions.get(id);
    if (entry === undefined || entry.done) continue;
    let rest: FetchedBatch | undefined = fetched;
    while (rest !== undefined) rest = take(id, entry, rest);
  }
  for (const slot of waiting.values()) slot.hold?.(); // held when the run stopped: read again next run
  await Promise.all(inFlight.values());
  if (failure !== undefined) throw failure;
}

function lagByPartition(run: DrainRun): Map<string, number> {
  return new Map([...run.record.partitions].map(([id, p]) => [id, p.lag]));
}
