/**
 * The drain's timers, beside its clock (`now`): the budget, the hard stop, lease renewals and share
 * polling all go through them, so that unit tests drive them with a fake clock and no sleeps.
 */
export interface Timers {
  /** Calls `fn` once after `ms`; the returned function cancels it. */
  after(ms: number, fn: () => void): () => void;
  /** Calls `fn` every `ms`; the returned function cancels it. */
  every(ms: number, fn: () => void): () => void;
  /** Resolves after `ms`, or at once when the signal aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemTimers: Timers = {
  after(ms, fn) {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  },
  every(ms, fn) {
    const timer = setInterval(fn, ms);
    return () => clearInterval(timer);
  },
  sleep,
};

/** Resolves after `ms` of the system's time, or at once when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
