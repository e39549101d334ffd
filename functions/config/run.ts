import { ConfigError } from '../kernel/errors.js';
import { streamPerFlushModes } from './bigquery.js';
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

  const drainUntil = read.oneOf('DRAIN_UNTIL', ['end', 'budget'] as const);
  const flushLingerMs = read.integer('FLUSH_LINGER_MS', 10, 600_000);
  return { budgetSeconds, leaseTtlSeconds, taskCount, taskIndex, drainUntil, flushLingerMs };
}

/**
 * The linger a run following the log uses: FLUSH_LINGER_MS, but in storage-write mode (a PENDING write
 * stream a flush and table) at least tables × tasks × 720 ms, so that a pipeline opens at most 5,000
 * streams an hour, half of BigQuery's CreateWriteStream quota (10,000 an hour a project and region).
 */
export function followLingerMs(
  flushLingerMs: number,
  writeMode: string,
  tables: number,
  taskCount: number,
): number {
  if (!streamPerFlushModes.includes(writeMode)) return flushLingerMs;
  return Math.max(flushLingerMs, Math.ceil((tables * taskCount * 3600 * 1000) / 5000));
}
