import type { StopReason } from '../kernel/summary.js';
import type { Timers } from '../kernel/timers.js';

/**
 * When a run stops. The soft stop (`signal`: the budget ran out, or SIGTERM/SIGINT) ends fetching and
 * starting batches; the hard stop (`hard`) follows `settleMs` later and abandons the batch still in
 * flight, uncommitted (the next run reads it again).
 */
export interface RunStop {
  readonly signal: AbortSignal;
  readonly hard: AbortSignal;
  /** Why the soft stop came, once it has. */
  readonly reason: StopReason | undefined;
  request(reason: StopReason): void;
  /** Cancels the timers and stops listening to the outside signal (safe to call twice). */
  dispose(): void;
}

export function createRunStop(
  options: { readonly budgetMs: number; readonly settleMs: number; readonly signal: AbortSignal },
  timers: Timers,
): RunStop {
  const soft = new AbortController();
  const hard = new AbortController();
  let reason: StopReason | undefined;
  let cancelHard: (() => void) | undefined;
  const request = (why: StopReason): void => {
    if (soft.signal.aborted) return;
    reason = why;
    soft.abort();
    cancelHard = timers.after(options.settleMs, () => hard.abort());
  };
  const onSignal = (): void => request('signal');
  if (options.signal.aborted) onSignal();
  options.signal.addEventListener('abort', onSignal, { once: true });
  const cancelBudget = timers.after(options.budgetMs, () => request('budget'));
  return {
    signal: soft.signal,
    hard: hard.signal,
    get reason() {
      return reason;
    },
    request,
    dispose() {
      cancelBudget();
      cancelHard?.();
      options.signal.removeEventListener('abort', onSignal);
    },
  };
}
