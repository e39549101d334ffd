import { crashPoint } from '../../kernel/crash-points.js';
import type { Lease, Writer } from '../../kernel/ports.js';
import { type KafkaRecord, partitionId } from '../../kernel/records.js';
import type { RecordRouter } from '../../records/record-router.js';
import { publishDeadLetters } from '../dead-letters.js';
import { classifyRows, rowTexts } from '../sink-writer.js';
import { createReplays, splitReplayed } from '../storage-write/replay.js';
import { createLoadFlushes, type LoadFlushesOptions } from './load-flushes.js';
import { type LoadPart, lineOf, linesOfRows } from './load-lines.js';
import { createLoadStream } from './load-stream.js';
import { heldInTargets, recoverIntent } from './load-targets.js';

/**
 * `load` mode's way to durability (exactly once, free ingestion): what a task's run reads of a table is
 * loaded by one job, streamed as it is read (load-stream.ts); a range whose streamed load failed is read
 * again flush by flush (load-flushes.ts), which names the rows BigQuery refuses. Either way, each batch's
 * dead letters go into its table's error table (MERGE by origin: none twice) and to Pub/Sub first, and the
 * jobs' ids are recorded as the partition's intent before any job is made.
 *
 * A group (routes sharing a topic by `when`) splits each batch by route: each table has its own job, and
 * one intent names them all. Whoever takes a lease and finds an intent finishes it first (`recover`,
 * load-targets.ts): every job done, committed; one running, waited for; else its jobs never made are
 * fenced and the range is read again, as a replay where some tables' jobs were done (what the tables hold
 * is counted, not loaded again). A job id is never submitted again once an intent names another: a range
 * loads into a table at most once.
 */
export interface LoadWriterOptions extends LoadFlushesOptions {
  /** Which target takes each record (a group's); without it the one target takes all. */
  readonly router?: RecordRouter;
  /** How long `recover` waits for a job an earlier run left running. */
  readonly recoverWaitMs?: number;
  /** One load for what the run reads of a table (load-stream.ts), not one a flush. */
  readonly streamed?: boolean;
}

export function createLoadWriter(options: LoadWriterOptions): Writer {
  const { logger, targets, router } = options;
  const rowTextOf = rowTexts();
  /** Per partition (and lease epoch), what a replayed range's tables already hold. */
  const replays = createReplays((p, from, to) => heldInTargets(targets, p, from, to), logger);
  const stream = options.streamed ? createLoadStream(options) : undefined;
  const flushes = createLoadFlushes(options);
  /** Partitions whose run's load failed: read again flush by flush, which names the rows BigQuery refuses. */
  const flushByFlush = new Set<string>();

  /** The batch's records by target, classified; its dead letters durable (error tables, Pub/Sub). */
  async function classified(fresh: readonly KafkaRecord[], signal: AbortSignal) {
    const parts = router === undefined ? [fresh] : await router.split(fresh, signal);
    const ingestedAt = new Date(options.now());
    const counts = { rows: 0, letters: 0, tombstones: 0, filtered: 0 };
    const rowsOf = await Promise.all(
      parts.map(async (toLoad, t) => {
        const target = targets[t]!;
        const rowText = rowTextOf(target.records);
        if (toLoad.length === 0) return [];
        const { rows, letters, tombstones, filtered } = await classifyRows(
          toLoad,
          target.records,
          ingestedAt,
          rowText,
        );
        counts.rows += rows.length;
        counts.letters += letters.length;
        counts.tombstones += tombstones;
        counts.filtered += filtered;
        if (letters.length > 0) {
          await target.errorTable.write(letters, ingestedAt, signal);
          crashPoint('after-error-table');
          await publishDeadLetters(letters, options.deadLetters);
        }
        return rows;
      }),
    );
    return { rowsOf, counts };
  }

  return {
    async recover(lease: Lease, signal) {
      const { streamedFailed, ...recovery } = await recoverIntent(options, lease, signal);
      if (streamedFailed) flushByFlush.add(partitionId(lease));
      return recovery;
    },

    begin: replays.begin,

    settle: async (hard, budget) => stream?.settle(hard, budget) ?? new Map(),

    async write(batch, signal) {
      const { records } = batch;
      const { fresh, heldRows, heldLetters } = splitReplayed(records, replays.of(batch.lease));
      const { rowsOf, counts } = await classified(fresh, signal);
      const held = { rows: heldRows, deadLetters: heldLetters };
      const lastRecordTimestamp = records[records.length - 1]!.timestamp;
      const filtered = counts.filtered > 0 ? { filtered: counts.filtered } : {};
      if (stream !== undefined && !flushByFlush.has(partitionId(batch.lease))) {
        const written = {
          records: records.length,
          rows: counts.rows + held.rows,
          deadLetters: counts.letters + held.deadLetters,
          tombstones: counts.tombstones,
          ...filtered,
          lastRecordTimestamp,
        };
        const lease = await stream.take(
          { ...batch, lines: rowsOf.map(linesOfRows), counts: written },
          signal,
        );
        return { ...written, lease, deferred: true };
      }
      const parts: LoadPart[] = rowsOf.map((rows) => ({
        rows: rows.map((row) => ({ row, line: lineOf(row) })),
      }));
      const loadedBatch = await flushes.add({
        lease: batch.lease,
        fromOffset: batch.fromOffset,
        nextOffset: batch.nextOffset,
        records: records.length,
        tombstones: counts.tombstones,
        filtered: counts.filtered,
        lastRecordTimestamp,
        parts,
        letters: counts.letters,
        rejected: [],
        held,
        bytes: parts.reduce((n, p) => n + p.rows.reduce((m, l) => m + l.line.length, 0), 0),
        signal,
      });
      return {
        rows: loadedBatch.rows + held.rows,
        deadLetters: counts.letters + loadedBatch.rejected + held.deadLetters,
        tombstones: counts.tombstones,
        ...filtered,
        ...(loadedBatch.jobIds.length === 0
          ? {}
          : { lease: loadedBatch.lease, streams: [...loadedBatch.jobIds] }),
      };
    },
  };
}
