import { isRetriable } from './errors.js';
import { systemTimers, type Timers } from './timers.js';

/** How often and how patiently a transient failure is retried. Passed in, so tests use milliseconds. */
export interface RetryPolicy {
  readonly attempts: number;
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  /** Whose clock the waits between attempts run on (the system's unless given: tests pass a fake clock's). */
  readonly timers?: Pick<Timers, 'sleep'>;
}

export const defaultRetryPolicy: RetryPolicy = { attempts: 6, initialDelayMs: 200, maxDelayMs: 10_000 };

/** Capped exponential backoff with full jitter. */
export function backoffDelay(
  policy: RetryPolicy,
  attempt: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/**
 * Runs `operation` until it succeeds, throws an error that is not retriable, or the attempts are spent.
 * `onRetry` sees each retried failure (for logging with the attempt number).
 */
export async function withRetry<T>(
  policy: RetryPolicy,
  operation: (attempt: number) => Promise<T>,
  onRetry?: (error: unknown, attempt: number, delayMs: number) => void,
  signal?: AbortSignal,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation(attempt);
    } catch (error) {
      if (!isRetriable(error) || attempt >= policy.attempts) throw error;
      const delayMs = backoffDelay(policy, attempt);
      onRetry?.(error, attempt, delayMs);
      await (policy.timers ?? systemTimers).sleep(delayMs, signal);
      // A hard stop (the budget's grace ran out) must not spin through more attempts.
      if (signal?.aborted) throw error;
    }
  }
}
