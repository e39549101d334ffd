import { ConfigError } from '../kernel/errors.js';
import { followRefusedModes, streamPerFlushModes } from './bigquery.js';
import type { Reader } from './reader.js';

/** The run's budget and lease, and this task's place among the execution's tasks. */
export function runShape(read: Reader) {
  const budgetSeconds = read.integer('DRAIN_BUDGET_SECONDS', 5, 7 * 24 * 3600);
  // The default follows a short budget down: a default must never turn a valid budget into an error.
  const leaseTtlSeconds = read.integer('LEASE_TTL_SECONDS', 3, 3600, Math.min(60, budgetSeconds));
  // A crashed run keeps its partitions blocked until its leases expire; a TTL longer than a whole run
  // would make the next scheduled run skip them.
  if (leaseTtlSeconds > budgetSeconds) {
    throw new ConfigError(
      'LEASE_TTL_SECONDS',
      `(${leaseTtlSeconds}) must not exceed DRAIN_BUDGET_SECONDS (${budgetSeconds}): a crashed run would block its partitions past the next run`,
    );
  }

  const taskCount = read.integer('CLOUD_RUN_TASK_COUNT', 1, 10_000);
  const taskIndex = read.integer('CLOUD_RUN_TASK_INDEX', 0, 9_999);
  if (taskIndex >= taskCount) {
    throw new ConfigError(
      'CLOUD_RUN_TASK_INDEX',
      `(${taskIndex}) must be below CLOUD_RUN_TASK_COUNT (${taskCount})`,
    );
  }

  return { budgetSeconds, leaseTtlSeconds, taskCount, taskIndex };
}

/**
 * DRAIN_UNTIL and FLUSH_LINGER_MS: null (`end`, the default), or the linger of a run that follows the log:
 * FLUSH_LINGER_MS, but where a flush opens a write stream a table, at least tables × 2 × tasks × 720 ms, so
 * that a pipeline opens at most 5,000 streams an hour, half of BigQuery's CreateWriteStream quota (10,000
 * an hour a project and region): a flush with dead letters opens its table's error table's stream too
 * (issue #78: counting the tables alone, a deploy whose records all failed could spend the whole quota).
 * A mode that makes one load job a run and table refuses it.
 */
export function followOf(
  read: Reader,
  writeMode: string,
  tables: number,
  taskCount: number,
): { readonly lingerMs: number } | null {
  if (read.oneOf('DRAIN_UNTIL', ['end', 'budget'] as const) === 'end') return null;
  if (followRefusedModes.includes(writeMode))
    throw new ConfigError(
      'DRAIN_UNTIL',
      `"budget" (follow the log) is not for BQ_WRITE_MODE=${writeMode}: a run makes one load job a table, completed when it stops reading; for freshness in seconds use ${streamPerFlushModes[0]}`,
    );
  const flushLingerMs = read.integer('FLUSH_LINGER_MS', 10, 600_000);
  if (!streamPerFlushModes.includes(writeMode)) return { lingerMs: flushLingerMs };
  const streamsPerFlush = tables * 2;
  return { lingerMs: Math.max(flushLingerMs, Math.ceil((streamsPerFlush * taskCount * 3600 * 1000) / 5000)) };
}
