/**
 * Every call the drain makes to a service goes through one tracker: it gives the call a deadline (a
 * service that does not answer is an error, never a hang), and it knows what is still pending, so that a
 * run that must end can say which service kept it ("firestore: commit did not answer for 21 s").
 *
 * Past the run's cutoff (its end: budget or signal, plus the settle time) every pending and new call
 * fails at once: nothing may keep a run alive past budget + 10 s (Cloud Run kills the task then).
 */
import { DrainError } from './errors.js';
import type { Source } from './ports.js';

export type Service = 'kafka' | 'firestore' | 'pubsub' | 'bigquery';

export interface PendingCall {
  readonly service: Service;
  readonly operation: string;
  readonly startedAt: number;
}

/** A call the cutoff failed. */
export interface CutOffCall extends PendingCall {
  /**
   * The service answered while the call was pending, with errors its client was still retrying (a 503):
   * the service is failing, not silent. Only services whose clients report their answers (see `heard`).
   */
  readonly answering: boolean;
  /** Tracked as `mayOutliveRun`: abandoned at the run's end by design. */
  readonly mayOutliveRun: boolean;
}

export interface CallOptions {
  /** Fails the call after this long; without one, only the run's cutoff ends it. */
  readonly deadlineMs?: number;
  /**
   * A call with no deadline of its own that the run abandons at its hard stop by design (a BigQuery
   * write: a MERGE may rightly take minutes; the batch is read again by the next run). Cut off, it is
   * no failure of the run.
   */
  readonly mayOutliveRun?: boolean;
}

/** A service did not answer in time. Retriable: the next attempt (or run) may find it back. */
export class ServiceTimeoutError extends DrainError {
  readonly service: Service;
  constructor(service: Service, message: string) {
    super(`${service}: ${message}`, { retriable: true, code: 'DEADLINE_EXCEEDED' });
    this.service = service;
  }
}

export interface CallTracker {
  /** Runs `call`, failing it with a ServiceTimeoutError after its deadline or at the cutoff. */
  track<T>(service: Service, operation: string, call: () => Promise<T>, options?: CallOptions): Promise<T>;
  pending(): PendingCall[];
  /** From `at` on, pending and new calls fail at once. */
  cutoff(at: number): void;
  /** The calls pending longest, one per service, as words for a log line and an exit message. */
  describePending(): string;
  /** The calls the cutoff failed: services that kept the run from ending by itself. */
  cutOff(): CutOffCall[];
  /**
   * The cut-off calls that fail the run: a service that did not answer at all (not one that answered
   * errors its client was retrying), in a call that was not abandoned by design.
   */
  unanswered(): CutOffCall[];
  /** The service answered just now (a client's own retry loop reports each error answer it retries). */
  heard(service: Service): void;
  /** Resolves once no call is pending (each answered, failed, or cut off). */
  drained(): Promise<void>;
}

export function createCallTracker(now: () => number = Date.now): CallTracker {
  const pending = new Set<PendingCall & { mayOutliveRun: boolean; fail: (error: Error) => void }>();
  const casualties: CutOffCall[] = [];
  const lastHeard = new Map<Service, number>();
  let whenDrained: (() => void)[] = [];
  let cutoffAt = Number.POSITIVE_INFINITY;
  let cutoffTimer: NodeJS.Timeout | undefined;

  const failPastCutoff = () => {
    for (const call of pending) {
      casualties.push({
        service: call.service,
        operation: call.operation,
        startedAt: call.startedAt,
        answering: (lastHeard.get(call.service) ?? Number.NEGATIVE_INFINITY) >= call.startedAt,
        mayOutliveRun: call.mayOutliveRun,
      });
      call.fail(
        new ServiceTimeoutError(
          call.service,
          `${call.operation} did not answer for ${Math.round((now() - call.startedAt) / 1000)} s, by the run's end`,
        ),
      );
    }
  };

  return {
    track(service, operation, call, { deadlineMs = Number.POSITIVE_INFINITY, mayOutliveRun = false } = {}) {
      const startedAt = now();
      if (startedAt >= cutoffAt) {
        return Promise.reject(
          new ServiceTimeoutError(service, `${operation} not started: the run is at its end`),
        );
      }
      return new Promise((resolve, reject) => {
        let timer: NodeJS.Timeout | undefined;
        const entry = {
          service,
          operation,
          startedAt,
          mayOutliveRun,
          fail: (error: Error) => settle(() => reject(error)),
        };
        function settle(done: () => void): void {
          if (!pending.delete(entry)) return;
          clearTimeout(timer);
          done();
          if (pending.size === 0) {
            for (const wake of whenDrained) wake();
            whenDrained = [];
          }
        }
        pending.add(entry);
        if (Number.isFinite(deadlineMs)) {
          timer = setTimeout(
            () =>
              entry.fail(
                new ServiceTimeoutError(
                  service,
                  `${operation} did not answer within ${Math.round(deadlineMs / 1000)} s`,
                ),
              ),
            deadlineMs,
          );
        }
        call().then(
          (value) => settle(() => resolve(value)),
          (error: unknown) => settle(() => reject(error)),
        );
      });
    },
    pending: () =>
      [...pending].map(({ service, operation, startedAt }) => ({ service, operation, startedAt })),
    cutoff(at) {
      cutoffAt = Math.min(cutoffAt, at);
      clearTimeout(cutoffTimer);
      cutoffTimer = setTimeout(failPastCutoff, Math.max(0, cutoffAt - now()));
      cutoffTimer.unref();
    },
    cutOff: () => [...casualties],
    unanswered: () => casualties.filter((call) => !call.answering && !call.mayOutliveRun),
    heard(service) {
      lastHeard.set(service, now());
    },
    drained: () =>
      pending.size === 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            whenDrained.push(resolve);
          }),
    describePending() {
      return describe(pending, now());
    },
  };
}

/** The oldest call per service, as words: `firestore did not answer (commit pending for 21 s)`. */
export function describe(calls: Iterable<PendingCall>, at: number): string {
  const oldest = new Map<Service, PendingCall>();
  for (const call of calls) {
    const seen = oldest.get(call.service);
    if (seen === undefined || call.startedAt < seen.startedAt) oldest.set(call.service, call);
  }
  return [...oldest.values()]
    .sort((a, b) => a.startedAt - b.startedAt)
    .map(
      (c) =>
        `${c.service} did not answer (${c.operation} pending for ${Math.round((at - c.startedAt) / 1000)} s)`,
    )
    .join('; ');
}

/**
 * The port with each of its methods tracked as calls to `service` (operation: the method's name), with
 * the deadline `deadlines` gives that method, or `options.deadlineMs`.
 */
export function trackedPort<T extends object>(
  tracker: CallTracker,
  service: Service,
  port: T,
  options: CallOptions = {},
  deadlines: Partial<Record<keyof T, number>> = {},
): T {
  const wrapped: Record<string, unknown> = {};
  for (const key of Object.keys(port) as (keyof T & string)[]) {
    const value = port[key];
    wrapped[key] =
      typeof value === 'function'
        ? (...args: unknown[]) =>
            tracker.track(
              service,
              key,
              () => (value as (...a: unknown[]) => Promise<unknown>).apply(port, args),
              { ...options, deadlineMs: deadlines[key] ?? options.deadlineMs },
            )
        : value;
  }
  return wrapped as T;
}

/** How long a run's end waits for the records' times that its freshness is measured with. */
export const headProbeDeadlineMs = 3_000;

/** The source with its calls tracked as Kafka's: admin calls and opening with a deadline, reads without. */
export function trackedSource(tracker: CallTracker, source: Source, deadlineMs: number): Source {
  return {
    watermarks: (topics) =>
      tracker.track('kafka', 'watermarks', () => source.watermarks(topics), { deadlineMs }),
    offsetsAt: (topic, at) =>
      tracker.track('kafka', 'offsetsAt', () => source.offsetsAt(topic, at), { deadlineMs }),
    // For the summary's freshness only: a probe the run's end cuts off fails no run.
    headTimestamps: (positions) =>
      tracker.track('kafka', 'headTimestamps', () => source.headTimestamps(positions), {
        deadlineMs: Math.min(deadlineMs, headProbeDeadlineMs),
        mayOutliveRun: true,
      }),
    async open(positions) {
      const reader = await tracker.track('kafka', 'open', () => source.open(positions), { deadlineMs });
      return {
        // A read waits for records as long as the run wants them; it ends with the run's stop signal.
        next: (signal) => tracker.track('kafka', 'fetch', () => reader.next(signal)),
        finish: (partition) => reader.finish(partition),
        close: () =>
          tracker.track('kafka', 'close', () => reader.close(), { deadlineMs: Math.min(deadlineMs, 10_000) }),
      };
    },
  };
}
