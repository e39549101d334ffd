import { forEachLimited } from '../kernel/concurrency.js';
import type { SourceReader } from '../kernel/ports.js';
import type { FetchedBatch, KafkaRecord, Position, Watermarks } from '../kernel/records.js';
import { partitionId } from '../kernel/records.js';
import { recordSize } from '../records/records.js';
import { drainFetched } from './batch-phase.js';
import { leasePartition } from './lease-phase.js';
import type { DrainRun } from './run-state.js';

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
 * Partitions are drained side by side (up to `partitionConcurrency` batches in flight, and a bound on the
 * bytes fetched and not yet committed), each one strictly in offset order: a partition's next batch
 * starts only when its previous one is committed. Fetches of a partition that arrive while it writes wait
 * as one: joined, they make batches as large as the limits allow, not one fetch's worth (Kafka's fetches
 * hold about 1 MiB a partition; a batch costs a flush and a commit whatever it holds).
 */
async function readOpenPartitions(run: DrainRun, source: SourceReader): Promise<void> {
  const { options } = run;
  const inFlight = new Map<string, Promise<void>>();
  /** Per partition, the fetches waiting for its batch in flight: drained as one. */
  const waiting = new Map<string, Waiting>();
  // Bounded by bytes as well as by partitions: many partitions may wait in one flush, not unbounded data.
  let bytesInFlight = 0;
  let failure: unknown;
  let wake = new AbortController();
  const open = (): boolean => [...run.record.partitions.values()].some((p) => !p.done);

  while (!run.stop.signal.aborted && failure === undefined && open()) {
    if (inFlight.size >= options.partitionConcurrency || bytesInFlight >= options.inFlightMaxBytes) {
      await Promise.race(inFlight.values());
      continue;
    }
    if (wake.signal.aborted) wake = new AbortController();
    const fetched = await source.next(AbortSignal.any([run.stop.signal, wake.signal]));
    if (fetched === undefined) continue; // stopped, or a batch settled: look at the state again
    const id = partitionId(fetched);
    const entry = run.record.partitions.get(id);
    if (entry === undefined || entry.done) continue;
    const bytes = fetched.records.reduce((n, r) => n + recordSize(r), 0);
    bytesInFlight += bytes;
    const queued = waiting.get(id);
    if (queued !== undefined && queued.nextOffset === fetched.fromOffset) {
      queued.parts.push(fetched.records);
      queued.nextOffset = fetched.nextOffset;
      queued.bytes += bytes;
      continue;
    }
    const slot: Waiting = { first: fetched, parts: [fetched.records], nextOffset: fetched.nextOffset, bytes };
    waiting.set(id, slot);
    const work = (inFlight.get(id) ?? Promise.resolve())
      .then(() => {
        if (waiting.get(id) === slot) waiting.delete(id);
        return drainFetched(run, entry, joined(slot));
      })
      .then(() => {
        if (entry.position >= entry.end) entry.leave(); // drained up to the end seen at start
        run.context.onProgress?.({ recordsRead: run.record.totals.recordsRead, lag: lagByPartition(run) });
      })
      .catch((error: unknown) => {
        failure ??= error;
      })
      .finally(() => {
        bytesInFlight -= slot.bytes;
        if (inFlight.get(id) === work) inFlight.delete(id);
        wake.abort(); // a batch settled: the loop looks at the state again
      });
    inFlight.set(id, work);
  }
  await Promise.all(inFlight.values());
  if (failure !== undefined) throw failure;
}

/** Consecutive fetches of a partition, waiting to be drained as one. */
interface Waiting {
  readonly first: FetchedBatch;
  readonly parts: (readonly KafkaRecord[])[];
  nextOffset: number;
  bytes: number;
}

function joined(waiting: Waiting): FetchedBatch {
  if (waiting.parts.length === 1) return waiting.first;
  return { ...waiting.first, records: waiting.parts.flat(), nextOffset: waiting.nextOffset };
}

function lagByPartition(run: DrainRun): Map<string, number> {
  return new Map([...run.record.partitions].map(([id, p]) => [id, p.lag]));
}
