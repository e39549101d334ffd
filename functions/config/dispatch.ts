import { ConfigError } from '../kernel/errors.js';
import { loadPlan } from './load-config.js';
import type { Reader } from './reader.js';

/** The dispatcher's settings (functions/dispatch/): how many tasks it may launch, and which job. */
export interface DispatchConfig {
  readonly minTasks: number;
  /** Null: no dispatcher (the schedule runs the job with its fixed task count). */
  readonly maxTasks: number | null;
  /** `projects/P/locations/R/jobs/J`; null where the dispatcher does not launch through Cloud Run. */
  readonly job: string | null;
  /** CLOUD_RUN_ADMIN_ENDPOINT: a plaintext gRPC Cloud Run Admin API on `host:port` (tests); null in production. */
  readonly adminEndpoint: string | null;
}

/**
 * DISPATCH_MIN_TASKS, DISPATCH_MAX_TASKS, DISPATCH_JOB. In `load` mode the most tasks must each still get
 * a load (the plan the drain applies to its execution's real task count): a dispatcher that may launch
 * more is refused here, so no task it launches exits 2.
 */
export function dispatchOf(
  read: Reader,
  load: { perDay: number; periodSeconds: number } | null,
): DispatchConfig {
  const minTasks = read.integer('DISPATCH_MIN_TASKS', 1, 10_000);
  const maxTasks =
    read.optional('DISPATCH_MAX_TASKS') === null ? null : read.integer('DISPATCH_MAX_TASKS', 1, 10_000, 1);
  if (maxTasks !== null && minTasks > maxTasks)
    throw new ConfigError('DISPATCH_MIN_TASKS', `(${minTasks}) is above DISPATCH_MAX_TASKS (${maxTasks})`);
  if (maxTasks !== null && load !== null) {
    const plan = loadPlan(load.perDay, load.periodSeconds, maxTasks);
    if (typeof plan === 'string')
      throw new ConfigError('DISPATCH_MAX_TASKS', `(${maxTasks}) is too many for load mode: ${plan}`);
  }
  return {
    minTasks,
    maxTasks,
    job: read.matching(
      'DISPATCH_JOB',
      /^projects\/[^/\s]+\/locations\/[^/\s]+\/jobs\/[^/\s]+$/,
      'projects/P/locations/R/jobs/J',
      true,
    ),
    adminEndpoint: read.matching('CLOUD_RUN_ADMIN_ENDPOINT', /^[^\s:/]+:\d{1,5}$/, 'host:port', true),
  };
}
