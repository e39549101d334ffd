import type { Logger } from '../../kernel/logger.js';
import type { Checkpoints, DeadLetters, Writer } from '../../kernel/ports.js';
import type { DeadLetter, KafkaRecord } from '../../kernel/records.js';
import { defaultRetryPolicy, withRetry } from '../../kernel/retry.js';
import { classifyEach, directFormat, directShape, type RecordPolicy } from '../../records/classify.js';
import type { RecordRouter } from '../../records/record-router.js';
import { recordSize } from '../../records/records.js';
import type { EncodedRow, StreamSink } from '../../sinks/contracts.js';
import { publishDeadLetters } from '../dead-letters.js';
import { fanOutStreams } from './fan-out-streams.js';
import { createReplays, splitReplayed } from './replay.js';
import { createStreamFlusher, finishIntent } from './stream-flusher.js';

/** A table the writer writes: its sink, and how records become its rows. */
export interface StreamTarget {
  readonly streams: StreamSink;
  readonly records: RecordPolicy;
}

export interface StorageWriteWriterOptions {
  /** One table, or a group's (routes sharing a topic by `when`), in the group's order. */
  readonly targets: readonly StreamTarget[];
  /** Which target takes each record (a group's); without it the one target takes all. */
  readonly router?: RecordRouter;
  readonly checkpoints: Checkpoints;
  readonly deadLetters: DeadLetters;
  readonly leaseTtlMs: number;
  /** A flush takes the batches waiting up to about this many bytes. */
  readonly flushMaxBytes: number;
  readonly logger: Logger;
  readonly now: () => number;
}

/**
 * `storage-write` mode (exactly once, the default): each batch's dead letters are published, then its rows
 * and letters go with those of every partition ready at once into one flush of PENDING streams, whose
 * intent is recorded before they commit (see stream-flusher.ts); the drain then commits the checkpoints.
 * A partition leased with an intent an earlier run left has it finished first (`recover`); a range an
 * operator sent the checkpoint back over is written only where the tables no longer hold it (`begin`).
 * A group's batch is split by route, and its flush's streams and intent span every table it feeds.
 */
export function createStorageWriteWriter(options: StorageWriteWriterOptions): Writer {
  const { logger, targets, router } = options;
  /** A group's records by target: which table's streams their rows and letters go to. */
  const targetOf = new WeakMap<KafkaRecord, number>();
  const streams = router === undefined ? targets[0]!.streams : fanOutStreams(targets, targetOf);
  const flusher = createStreamFlusher({ ...options, sink: streams }, options);
  /** Per partition (and lease epoch), what a replayed range's tables already hold. */
  const replays = createReplays((partition, from, to) => streams.heldOffsets(partition, from, to), logger);

  /** One target's records classified, each row encoded as soon as it is made. */
  async function encode(target: StreamTarget, records: readonly KafkaRecord[], ingestedAt: Date) {
    // JSON records without business rules can go straight from their text to the table's messages.
    const policy = target.records;
    // Encoding needs the target's schema: a target not ready yet (a transient failure) is waited for as
    // the flush's own appends are, not taken for the batch's failure.
    const encoding = await withRetry(
      defaultRetryPolicy,
      () => {
        const format = directFormat(policy);
        return target.streams.startEncoding(
          format === undefined ? directShape(policy) : policy.shape,
          format,
        );
      },
      (error, attempt, delayMs) =>
        logger.warn('encoding the batch failed; the target is not ready', { error, attempt, delayMs }),
    );
    const { addRecord } = encoding;
    const classified = await classifyEach(
      records,
      policy,
      ingestedAt,
      (row) => encoding.add(row),
      addRecord === undefined ? undefined : (record) => addRecord(record, ingestedAt),
    );
    return { ...classified, encoded: encoding.finish() };
  }

  return {
    async recover(lease) {
      const intent = lease.intent;
      if (!intent) return {};
      const log = logger.child({ topic: lease.topic, partition: lease.partition });
      const outcome = await finishIntent(streams, lease, intent);
      if (outcome === 'discard') {
        log.warn('a recorded flush never committed and its streams are gone: the range is read again', {
          from: intent.fromOffset,
          to: intent.nextOffset,
        });
        return { startAt: intent.fromOffset };
      }
      log.notice('a flush recorded by an earlier run was finished', {
        from: intent.fromOffset,
        to: intent.nextOffset,
        rows: intent.rows,
        deadLetters: intent.deadLetters,
      });
      return { commit: intent };
    },

    async begin(lease, from, end) {
      // Not awaited, and never failing the run (a target not made yet is the first flush's business).
      if (from < end) streams.warmUp().catch(() => undefined);
      await replays.begin(lease, from, end);
    },

    async write(batch, signal) {
      const { records } = batch;
      const { fresh, heldRows, heldLetters } = splitReplayed(records, replays.of(batch.lease));
      const parts = router === undefined ? [fresh] : await router.split(fresh, signal);
      const ingestedAt = new Date(options.now());
      const encoded: EncodedRow[] = [];
      const letters: DeadLetter[] = [];
      let rows = 0;
      let tombstones = 0;
      let filtered = 0;
      for (const [i, part] of parts.entries()) {
        if (part.length === 0) continue;
        if (router !== undefined) for (const record of part) targetOf.set(record, i);
        const made = await encode(targets[i]!, part, ingestedAt);
        encoded.push(...made.encoded);
        letters.push(...made.letters);
        rows += made.rows;
        tombstones += made.tombstones;
        filtered += made.filtered;
      }
      await publishDeadLetters(letters, options.deadLetters);
      const alreadyHeld = { rows: heldRows, deadLetters: heldLetters };
      const flushed = await flusher.flush({
        alreadyHeld,
        bytes: records.reduce((n, r) => n + recordSize(r), 0),
        lease: batch.lease,
        fromOffset: batch.fromOffset,
        nextOffset: batch.nextOffset,
        records: records.length,
        tombstones,
        filtered,
        lastRecordTimestamp: records[records.length - 1]!.timestamp,
        rows: encoded,
        letters,
      });
      // Rows BigQuery refused were left out of the streams and became dead letters.
      const rejected = flushed.rejected.length;
      return {
        rows: rows - rejected + heldRows,
        deadLetters: letters.length + rejected + heldLetters,
        tombstones,
        ...(filtered > 0 ? { filtered } : {}),
        lease: flushed.lease,
        streams: flushed.streams,
        ...(heldRows + heldLetters > 0 ? { alreadyHeld } : {}),
      };
    },
  };
}
