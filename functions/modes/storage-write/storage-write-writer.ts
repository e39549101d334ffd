import type { Logger } from '../../kernel/logger.js';
import type { Checkpoints, DeadLetters, Writer } from '../../kernel/ports.js';
import { defaultRetryPolicy, withRetry } from '../../kernel/retry.js';
import { classifyEach, directShape, type RecordPolicy } from '../../records/classify.js';
import { recordSize } from '../../records/records.js';
import type { StreamSink } from '../../sinks/contracts.js';
import { publishDeadLetters } from '../dead-letters.js';
import { createReplays, splitReplayed } from './replay.js';
import { createStreamFlusher, finishIntent } from './stream-flusher.js';

export interface StorageWriteWriterOptions {
  readonly streams: StreamSink;
  readonly checkpoints: Checkpoints;
  readonly deadLetters: DeadLetters;
  readonly records: RecordPolicy;
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
 */
export function createStorageWriteWriter(options: StorageWriteWriterOptions): Writer {
  const { logger } = options;
  const flusher = createStreamFlusher({ ...options, sink: options.streams }, options);
  /** Per partition (and lease epoch), what a replayed range's tables already hold. */
  const replays = createReplays(
    (partition, from, to) => options.streams.heldOffsets(partition, from, to),
    logger,
  );

  return {
    async recover(lease) {
      const intent = lease.intent;
      if (!intent) return {};
      const log = logger.child({ topic: lease.topic, partition: lease.partition });
      const outcome = await finishIntent(options.streams, lease, intent);
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

    begin: replays.begin,

    async write(batch) {
      const { records } = batch;
      const { fresh, heldRows, heldLetters } = splitReplayed(records, replays.of(batch.lease));
      // JSON records without business rules can go straight from their text to the table's messages.
      const policy = options.records;
      const direct = directShape(policy);
      // Encoding needs the target's schema: a target not ready yet (a transient failure) is waited for as
      // the flush's own appends are, not taken for the batch's failure.
      const encoding = await withRetry(
        defaultRetryPolicy,
        () => options.streams.startEncoding(direct),
        (error, attempt, delayMs) =>
          logger.warn('encoding the batch failed; the target is not ready', { error, attempt, delayMs }),
      );
      // Each row encoded as soon as it is made: the batch holds its bytes, not its objects.
      const ingestedAt = new Date(options.now());
      const { addRecord } = encoding;
      const { rows, letters, tombstones, filtered } = await classifyEach(
        fresh,
        policy,
        ingestedAt,
        (row) => encoding.add(row),
        addRecord === undefined ? undefined : (record) => addRecord(record, ingestedAt),
      );
      const encoded = encoding.finish();
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
