import { crashPoint } from '../../kernel/crash-points.js';

/**
 * `storage-write` mode's way to durability, per flush (the batches of every partition ready at the same
 * time, so one pair of streams and one commit serve them all):
 *
 * 1. each batch's dead letters are published to Pub/Sub (alerting, replay) — at least once;
 * 2. the flush's rows and dead letters are appended to new PENDING streams and finalized (invisible);
 *    rows BigQuery refuses are left out of the append and become `rejected` dead letters (in the error
 *    table's stream, and published to Pub/Sub), so that one bad row never holds its partition;
 * 3. the intent (the streams, and each partition's range and counts) is recorded in every affected
 *    partition document in one fenced write: all or none;
 * 4. the streams are committed; "already committed" counts as committed;
 * 5. (the drain) each partition's checkpoint moves, clearing its intent, its ledger entry naming the streams.
 *
 * Whoever takes a lease and finds an intent finishes it first (`finishIntent`): a stream commits at most
 * once, so committing a recorded stream is always safe, and a range is never written again while its
 * stream could still commit.
 */

import { DrainError, FencedError } from '../../kernel/errors.js';
import { createFlushQueue, type Waiting } from '../../kernel/flush-queue.js';
import type { Logger } from '../../kernel/logger.js';
import type { Checkpoints, CommitIntent, DeadLetters, Lease } from '../../kernel/ports.js';
import type { DeadLetter, PartitionRef } from '../../kernel/records.js';
import { defaultRetryPolicy, type RetryPolicy, withRetry } from '../../kernel/retry.js';
import type { EncodedRow, StreamSink } from '../../sinks/contracts.js';
import { publishDeadLetters } from '../dead-letters.js';

/** One partition's batch, classified, waiting for a flush. */
export interface FlushItem {
  /** What the batch's records weigh (as read): a flush takes batches up to its byte bound. */
  readonly bytes: number;
  readonly lease: Lease;
  readonly fromOffset: number;
  readonly nextOffset: number;
  readonly records: number;
  readonly tombstones: number;
  /** Records the route's transform dropped. */
  readonly filtered?: number;
  readonly lastRecordTimestamp: number | null;
  /** Encoded as soon as classified: a batch waiting for its flush holds bytes, not row objects. */
  readonly rows: readonly EncodedRow[];
  readonly letters: readonly DeadLetter[];
  /** A replayed range's offsets the tables already hold: not in `rows`/`letters`, counted all the same. */
  readonly alreadyHeld?: { readonly rows: number; readonly deadLetters: number };
}

/** What a flush made of one item: durable (streams committed), with the lease as the intent left it. */
export interface Flushed {
  readonly lease: Lease;
  readonly streams: readonly string[];
  /** The item's rows BigQuery refused: dead letters now, in the error table and on Pub/Sub. */
  readonly rejected: readonly DeadLetter[];
}

export interface StreamFlusher {
  /** Resolves once the batch's rows and dead letters are committed in BigQuery (not yet checkpointed). */
  flush(item: FlushItem): Promise<Flushed>;
}

export function createStreamFlusher(
  ports: { sink: StreamSink; checkpoints: Checkpoints; deadLetters: DeadLetters },
  options: {
    leaseTtlMs: number;
    /** A flush takes waiting batches up to about this many bytes (at least one batch). */
    flushMaxBytes: number;
    logger: Logger;
    now: () => number;
    /** Transient failures of prepare and commit (default: defaultRetryPolicy). */
    retry?: RetryPolicy;
  },
): StreamFlusher {
  const retry = options.retry ?? defaultRetryPolicy;
  type Member = Waiting<FlushItem, Flushed>;

  async function flushGroup(group: Member[]): Promise<void> {
    let members = group;
    while (members.length > 0) {
      const items = members.map((m) => m.item);
      // A failed append or finalize abandons its streams (never committed, they expire): new ones, again.
      const { streams, rejected } = await withRetry(
        retry,
        () =>
          ports.sink.prepare(
            items.flatMap((i) => i.rows),
            items.flatMap((i) => i.letters),
            new Date(options.now()),
          ),
        (error, attempt, delayMs) =>
          options.logger.warn('preparing the flush failed; new streams', { error, attempt, delayMs }),
      );
      // Published before the intent, as the batches' other dead letters were: at least once.
      await publishDeadLetters([...rejected], ports.deadLetters);
      const rejectedOf = items.map((item) => rejected.filter((l) => belongsTo(l, item)));
      let leases: Lease[];
      try {
        leases = await ports.checkpoints.recordIntents(
          items.map((item, i) => ({
            lease: item.lease,
            intent: intentOf(item, streams, rejectedOf[i]!.length),
          })),
          options.leaseTtlMs,
        );
      } catch (error) {
        if (!(error instanceof FencedError)) throw error;
        // Some partition of the flush was taken over. Its streams are abandoned (never committed, they
        // expire); the partitions still held are flushed again on new streams.
        const fenced = await fencedMembers(members, ports.checkpoints, options.leaseTtlMs);
        for (const m of fenced) m.reject(error);
        options.logger.warn('a partition of the flush was taken over; flushing the others again', {
          fenced: fenced.length,
        });
        members = members.filter((m) => !fenced.includes(m));
        continue;
      }
      crashPoint('after-intent');
      // Committing the same streams again is safe: a stream commits at most once ("already committed"
      // counts as committed). Should the attempts run out, the intent stays for the next lease holder.
      await withRetry(
        retry,
        () => ports.sink.commit(streams),
        (error, attempt, delayMs) =>
          options.logger.warn('committing the flush failed; retrying', { error, attempt, delayMs }),
      );
      crashPoint('after-batch-commit');
      for (const [i, m] of members.entries())
        m.resolve({ lease: leases[i]!, streams, rejected: rejectedOf[i]! });
      return;
    }
  }

  const queue = createFlushQueue(flushGroup, {
    weigh: (item) => item.bytes,
    maxWeight: options.flushMaxBytes,
    // The intent is one Firestore write over the flush's partition documents, all or none; Firestore
    // long took at most 500 writes a request, so a flush spans at most this many partitions.
    maxItems: flushMaxPartitions,
  });
  return { flush: (item) => queue.add(item) };
}

/**
 * The members of a flush whose lease is gone, after the intent write was fenced: a renewal tells, one
 * partition at a time.
 */
export async function fencedMembers<M extends { readonly item: { readonly lease: Lease } }>(
  members: readonly M[],
  checkpoints: Checkpoints,
  leaseTtlMs: number,
): Promise<M[]> {
  const fenced: M[] = [];
  for (const m of members) {
    await checkpoints.renew(m.item.lease, leaseTtlMs).catch((error: unknown) => {
      if (error instanceof FencedError) fenced.push(m);
    });
  }
  // A FencedError from the intent write with every lease still held: a checkpoint moved under us.
  if (fenced.length === 0)
    throw new DrainError('recording the intent was refused for no held lease', { retriable: true });
  return fenced;
}

/** Partitions one flush spans at most (its intent is one Firestore write over their documents). */
export const flushMaxPartitions = 400;

function belongsTo(letter: DeadLetter, item: FlushItem): boolean {
  const { topic, partition, offset } = letter.record;
  return (
    topic === item.lease.topic &&
    partition === item.lease.partition &&
    offset >= item.fromOffset &&
    offset < item.nextOffset
  );
}

function intentOf(item: FlushItem, streams: readonly string[], rejected: number): CommitIntent {
  const held = item.alreadyHeld ?? { rows: 0, deadLetters: 0 };
  return {
    streams,
    fromOffset: item.fromOffset,
    nextOffset: item.nextOffset,
    records: item.records,
    rows: item.rows.length - rejected + held.rows,
    deadLetters: item.letters.length + rejected + held.deadLetters,
    ...(held.rows + held.deadLetters > 0 ? { alreadyHeld: held } : {}),
    tombstones: item.tombstones,
    ...(item.filtered ? { filtered: item.filtered } : {}),
    lastRecordTimestamp: item.lastRecordTimestamp,
  };
}

/**
 * A recorded intent, finished by whoever holds the lease now. `commit`: its streams are committed (by us
 * now, or by whoever came first) and the checkpoint may move to the intent's end. `discard`: a stream is
 * gone (expired: BigQuery keeps finalized streams about 4 h) and the tables hold nothing of the range, so
 * it never committed and never can: the range is read and written again. Anything in between (some of the
 * range present, some not) is refused: it cannot come from this protocol, and an operator must look.
 */
export async function finishIntent(
  sink: StreamSink,
  partition: PartitionRef,
  intent: CommitIntent,
): Promise<'commit' | 'discard'> {
  const states = await Promise.all(intent.streams.map((stream) => sink.streamState(stream)));
  if (!states.includes('gone')) {
    await sink.commit(intent.streams.filter((_, i) => states[i] === 'pending'));
    return 'commit';
  }
  const held = await sink.heldInRange(partition, intent.fromOffset, intent.nextOffset);
  if (held.rows === intent.rows && held.deadLetters === intent.deadLetters) return 'commit';
  // Nothing of the flush landed: the tables hold only what they held before it (a replay's earlier rows).
  const before = intent.alreadyHeld ?? { rows: 0, deadLetters: 0 };
  if (held.rows === before.rows && held.deadLetters === before.deadLetters && !states.includes('committed'))
    return 'discard';
  throw new DrainError(
    `intent for ${partition.topic}:${partition.partition} [${intent.fromOffset}, ${intent.nextOffset}) names streams that are gone, ` +
      `and the tables hold ${held.rows} of its ${intent.rows} rows and ${held.deadLetters} of its ${intent.deadLetters} dead letters: an operator must decide`,
    { retriable: false, code: 'intent_inconsistent' },
  );
}
