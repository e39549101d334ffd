import type { BigQuery, Table } from '@google-cloud/bigquery';
import { crashPoint } from '../../kernel/crash-points.js';
import { DrainError } from '../../kernel/errors.js';
import { createFlushQueue } from '../../kernel/flush-queue.js';
import type { Logger } from '../../kernel/logger.js';
import type { Sink } from '../../kernel/ports.js';
import type { RowResult, RowToInsert } from '../../kernel/records.js';
import { backoffDelay, type RetryPolicy, withRetry } from '../../kernel/retry.js';
import { sleep } from '../../kernel/timers.js';
import type { SchemaField } from '../../schema/table-schema.js';
import { bigQueryError, createTableIfMissing } from '../../sinks/bigquery-tables.js';
import { createInsertAllSink, insertAllLimits } from '../../sinks/insert-all-sink.js';
import {
  batchId,
  confirmStatement,
  mergeStatement,
  type StagingKind,
  stagingPrefix,
  stagingTableName,
  timestampDays,
} from './merge-statements.js';

/**
 * `merge` mode (exactly once): a flush stages its rows, tagged with a batch id, in the task's staging
 * table; then one MERGE inserts into the target only the rows of that batch whose (topic, partition,
 * offset) are not there yet; only then does the drain commit the checkpoint. A replayed batch therefore
 * inserts nothing twice, however often it is retried or a run dies.
 *
 * Concurrent writes from the task's partitions are gathered into one flush (one MERGE per flush, not per
 * partition), because BigQuery allows at most 2 concurrent MERGE per table and about 25 DML per table per
 * 10 s. A run stages into a table of its own, `_kbd_staging_{pipeline}_t{task}_{run}`: created once at
 * its first flush and dropped at its end (no DDL per flush; never re-created under the same name, as
 * streaming into a re-created table can land in the old one). A crashed run's staging table is found by
 * its prefix and dropped by a later run of the task once it is older than any run can last; its rows
 * were never merged, or were merged and are no longer needed. It also expires after a day by itself.
 *
 * A batch id is derived from the run, the attempt and the offset ranges. A staging attempt that fails in
 * any way is abandoned and the batch staged again under a new attempt's id: a timed-out insert may still
 * land, and staging a row twice under one id would let the MERGE insert both copies.
 *
 * Never trusting a table created moments ago: BigQuery can answer 404 to streaming inserts into a table
 * created seconds before (for up to minutes), so a 404 from the staging table this run created is
 * retried for a bounded time (`freshTableMs`); and inserts into a young table have been seen to "succeed"
 * and vanish, so after each MERGE one query confirms that every key of the batch is in the target. A
 * loss anywhere in the staging path then fails the batch (its checkpoint stays) instead of losing it.
 */
export interface MergeSinkOptions {
  readonly bigquery: BigQuery;
  readonly dataset: string;
  readonly table: string;
  readonly schema: readonly SchemaField[];
  readonly pipelineId: string;
  readonly taskIndex: number;
  readonly runId: string;
  readonly retry: RetryPolicy;
  readonly logger: Logger;
  /** A staging table of this task older than this belongs to no live run. */
  readonly leftoverAgeMs: number;
  /** How long after creating its staging table a 404 from it is taken for propagation and retried. */
  readonly freshTableMs?: number;
  /** The clock (tests move it). */
  readonly now?: () => number;
  /** What the sink merges into: the target's rows (default) or the error table's dead letters. */
  readonly stagingKind?: StagingKind;
}

export interface MergeSink extends Sink {
  /** Drops this task's staging tables left by crashed runs; returns how many. */
  cleanLeftovers(): Promise<number>;
  /** Drops this run's staging table. */
  close(): Promise<void>;
}

export function createMergeSink(options: MergeSinkOptions): MergeSink {
  const dataset = options.bigquery.dataset(options.dataset);
  const prefix = stagingPrefix(options.pipelineId, options.taskIndex);
  const stagingName = stagingTableName(
    options.pipelineId,
    options.taskIndex,
    options.runId,
    options.stagingKind,
  );
  const columns = options.schema.map((f) => f.name);
  // Concurrent writes wait while a flush runs, and the next flush takes them all (one MERGE).
  const queue = createFlushQueue<{ rows: readonly RowToInsert[]; signal?: AbortSignal }, RowResult[]>(
    async (group) => {
      const results = await flush(
        group.flatMap((g) => g.item.rows),
        group[0]!.item.signal,
      );
      for (const g of group) g.resolve(g.item.rows.map((r) => results.get(r.rowKey)!));
    },
  );
  let staging: Promise<Table> | undefined;
  const now = options.now ?? Date.now;
  const freshTableMs = options.freshTableMs ?? 10 * 60_000;
  /** When this run created its staging table (undefined: it found it, or has not made it yet). */
  let stagingCreatedAt: number | undefined;

  function stagingTable(): Promise<Table> {
    staging ??= (async () => {
      try {
        const { table, existed } = await createTableIfMissing(dataset, stagingName, {
          schema: {
            fields: [...options.schema, { name: '_kbd_batch', type: 'STRING', mode: 'REQUIRED' }],
          },
          expirationTime: String(Date.now() + 86_400_000),
          clustering: { fields: ['_kbd_batch'] },
        });
        // A table this run created: a 404 from it soon after is propagation (see freshTableMs).
        if (!existed) stagingCreatedAt = now();
        return table;
      } catch (error) {
        staging = undefined;
        throw bigQueryError(error, 'create staging table');
      }
    })();
    return staging;
  }

  /** Stages the rows under a fresh batch id per attempt; returns the id and each row's result. */
  async function stage(
    rows: RowToInsert[],
    signal?: AbortSignal,
  ): Promise<{ id: string; results: RowResult[] }> {
    const table = await stagingTable();
    for (let attempt = 1; ; attempt++) {
      const id = batchId(options.runId, attempt, rows);
      try {
        // Each row staged with its batch id (put into its JSON, the row itself not copied).
        const once = createInsertAllSink(table, {
          ...insertAllLimits,
          retry: { ...options.retry, attempts: 1 },
          logger: options.logger,
          extraColumns: { _kbd_batch: id },
        });
        return { id, results: await once.write(rows, signal) };
      } catch (error) {
        // A 404 from the table this run just created is propagation, not absence: retried while young.
        const youngTable404 =
          error instanceof DrainError &&
          error.code === '404' &&
          stagingCreatedAt !== undefined &&
          now() - stagingCreatedAt < freshTableMs;
        const retriable = (error instanceof DrainError && error.retriable) || youngTable404;
        if (!retriable || (attempt >= options.retry.attempts && !youngTable404) || signal?.aborted) {
          throw error;
        }
        const delayMs = backoffDelay(options.retry, attempt);
        options.logger.warn('staging failed; staging the batch again under a new id', {
          error,
          attempt,
          delayMs,
        });
        await sleep(delayMs, signal);
      }
    }
  }

  async function merge(sql: string, signal?: AbortSignal): Promise<void> {
    // The same MERGE again is harmless: retrying it is how a transient failure is survived.
    await withRetry(
      options.retry,
      async () => {
        try {
          await options.bigquery.query({ query: sql });
        } catch (error) {
          const mapped = bigQueryError(error, 'MERGE');
          // Concurrent DML on one table: BigQuery asks for the serialisation failure to be retried.
          if (/could not serialize access/i.test(mapped.message)) {
            throw new DrainError(mapped.message, { retriable: true, cause: error });
          }
          throw mapped;
        }
      },
      (error, attempt, delayMs) => options.logger.warn('merge failed; retrying', { error, attempt, delayMs }),
      signal,
    );
  }

  /** Every key of the batch is in the target after its MERGE, or the batch fails (and is written again). */
  async function confirm(rows: readonly RowToInsert[], days: { from: string; to: string }): Promise<void> {
    let present: number;
    try {
      const [result] = await options.bigquery.query({
        query: confirmStatement({ dataset: options.dataset, table: options.table }, rows, days),
      });
      present = Number((result[0] as { present?: unknown } | undefined)?.present ?? 0);
    } catch (error) {
      throw bigQueryError(error, 'confirm merge');
    }
    if (present < rows.length) {
      throw new DrainError(
        `merge: the target holds ${present} of the batch's ${rows.length} rows after its MERGE (staged rows were lost); the batch is not committed and will be written again`,
        { retriable: true, code: 'merge_unconfirmed' },
      );
    }
  }

  async function flush(rows: RowToInsert[], signal?: AbortSignal): Promise<Map<string, RowResult>> {
    const began = Date.now();
    const { id, results } = await stage(rows, signal);
    crashPoint('after-stage');
    const accepted = rows.filter((_, i) => results[i]!.ok);
    if (accepted.length > 0) {
      const target = { dataset: options.dataset, table: options.table, columns };
      const days = timestampDays(accepted);
      await merge(mergeStatement(target, stagingName, id, days), signal);
      await confirm(accepted, days);
    }
    crashPoint('after-merge-before-commit');
    options.logger.debug('flush merged', { batch: id, rows: rows.length, durationMs: Date.now() - began });
    return new Map(rows.map((r, i) => [r.rowKey, results[i]!]));
  }

  return {
    write(rows, signal) {
      return queue.add({ rows, ...(signal === undefined ? {} : { signal }) });
    },

    async cleanLeftovers() {
      try {
        const [tables] = await dataset.getTables();
        let dropped = 0;
        for (const table of tables) {
          if (!table.id?.startsWith(prefix) || table.id === stagingName) continue;
          const [metadata] = await table.getMetadata();
          if (Date.now() - creationMillis(metadata.creationTime) < options.leftoverAgeMs) continue;
          await table.delete().catch(() => {});
          dropped++;
        }
        if (dropped > 0) options.logger.info('dropped staging tables left by crashed runs', { dropped });
        return dropped;
      } catch (error) {
        throw bigQueryError(error, 'clean staging leftovers');
      }
    },

    async close() {
      // Not waiting for a flush still in flight: at a hard stop it is abandoned (its batch uncommitted).
      if (staging === undefined) return;
      staging = undefined;
      if (queue.busy) {
        // Its MERGE may still be running: dropping the table it reads would wait behind it (and a MERGE
        // may rightly take minutes) or fail it. The table is left for a later run's leftover clean-up
        // (and expires in a day); the next run's MERGE of the batch inserts nothing twice.
        options.logger.info('a flush was still in flight; its staging table is left for a later run', {
          staging: stagingName,
        });
        return;
      }
      await dataset
        .table(stagingName)
        .delete()
        .catch((error: unknown) =>
          options.logger.warn('dropping the staging table failed; a later run drops it', {
            error,
            staging: stagingName,
          }),
        );
    },
  };
}

/** BigQuery reports creation time in milliseconds; the local emulator in seconds. */
function creationMillis(value: unknown): number {
  const n = Number(value);
  return n < 1e12 ? n * 1000 : n;
}
