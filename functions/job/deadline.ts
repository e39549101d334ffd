import type { CallTracker } from '../kernel/calls.js';
import type { Logger } from '../kernel/logger.js';
import type { RunSummary } from '../kernel/summary.js';
import { sleep } from '../kernel/timers.js';

/** How long a batch in flight may settle after SIGTERM or the budget; Cloud Run kills 10 s after SIGTERM. */
export const settleMs = 6_000;
/** After the settle time (or, for calls a run left behind, from its end), pending calls fail this much later. */
export const cutoffAfterSettleMs = 1_500;

/** Deadlines of single calls, by service: a service that does not answer is an error, never a hang. */
export const callDeadlinesMs = {
  firestore: 20_000,
  kafka: 30_000,
  pubsub: 30_000,
  alerts: 15_000,
  /** Closing clients at the end of a run. */
  close: 5_000,
} as const;

/**
 * A run that did not get through its work (budget, signal, error) and left calls behind (a write
 * abandoned at the hard stop, a publish) pending longer than the settle time gives them until a cutoff
 * 1.5 s from now to answer, before the clients close (closing would fail them and hide which service did
 * not answer). One from before the process was frozen (a zombie) answers once it runs again; one to a
 * service that is down is cut off, and the run fails naming it (main). A run that caught up needed
 * nothing more of anyone: what it left pending (a table still being prepared that it never wrote to)
 * does not matter.
 */
export async function cutOffLateCalls(summary: RunSummary, calls: CallTracker): Promise<void> {
  if (summary.stopReason === 'caught_up') return;
  if (!calls.pending().some((call) => Date.now() - call.startedAt >= settleMs)) return;
  calls.cutoff(Date.now() + cutoffAfterSettleMs);
  await calls.drained();
}

/** Closing waits for nothing that does not answer: a service gone quiet must not hold the run's end. */
export async function closeWithin(
  what: string,
  closing: () => Promise<void> | undefined,
  logger: Logger,
): Promise<void> {
  const closed = new AbortController(); // its timer does not outlive a client that closed in time
  const timeout = sleep(callDeadlinesMs.close, closed.signal).then(() => {
    if (!closed.signal.aborted) {
      throw new Error(`${what} did not finish within ${callDeadlinesMs.close / 1000} s`);
    }
  });
  await Promise.race([closing(), timeout])
    .catch((error: unknown) => logger.warn(`${what} failed`, { error }))
    .finally(() => closed.abort());
}
