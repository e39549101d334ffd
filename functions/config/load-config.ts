import { ConfigError } from '../kernel/errors.js';
import type { Reader } from './reader.js';

/** load mode: how many load jobs a table may take, and so how many a run may submit. */
export interface LoadConfig {
  /** The pipeline's share of BigQuery's 1,500 load jobs per table per day (failed ones count too). */
  readonly jobsPerTablePerDay: number;
  /** How often the scheduler starts a run (infra sets it from the cron). */
  readonly schedulePeriodSeconds: number;
  /** Loads one task's run may submit per table: the day's budget over the day's runs of every task. */
  readonly loadsPerRun: number;
}

/** BigQuery's limit: load jobs per table per day. https://cloud.google.com/bigquery/quotas#load_jobs */
export const bigQueryLoadsPerTablePerDay = 1500;

/** load mode: LOAD_JOBS_PER_TABLE_PER_DAY, SCHEDULE_PERIOD_SECONDS; refused when a run gets no load. */
export function loadOf(read: Reader, taskCount: number): LoadConfig {
  const jobsPerTablePerDay = read.integer('LOAD_JOBS_PER_TABLE_PER_DAY', 1, bigQueryLoadsPerTablePerDay);
  const schedulePeriodSeconds = read.integer('SCHEDULE_PERIOD_SECONDS', 60, 7 * 24 * 3600);
  const plan = loadPlan(jobsPerTablePerDay, schedulePeriodSeconds, taskCount);
  if (typeof plan === 'string') throw new ConfigError('LOAD_JOBS_PER_TABLE_PER_DAY', plan);
  return { jobsPerTablePerDay, schedulePeriodSeconds, loadsPerRun: plan };
}

/**
 * The loads one task's run may submit per table (the day's budget over the day's runs of every task), or
 * why there is none (the drain and infra refuse such a configuration alike).
 */
export function loadPlan(perDay: number, periodSeconds: number, taskCount: number): number | string {
  const runsPerDay = Math.ceil(86_400 / periodSeconds);
  const loadsPerRun = Math.floor(perDay / (runsPerDay * taskCount));
  if (loadsPerRun >= 1) return loadsPerRun;
  return (
    `${perDay} loads a table a day over ${runsPerDay} runs (SCHEDULE_PERIOD_SECONDS=${periodSeconds}) ` +
    `of ${taskCount} tasks (CLOUD_RUN_TASK_COUNT) leaves a run less than one load a table: ` +
    'run less often, with fewer tasks, or raise LOAD_JOBS_PER_TABLE_PER_DAY (at most 1500)'
  );
}

/** load mode: the most tasks an execution may have with a load each (what loadPlan refuses beyond). */
export function loadTaskCeiling(perDay: number, periodSeconds: number): number {
  return Math.max(1, Math.floor(perDay / Math.ceil(86_400 / periodSeconds)));
}
