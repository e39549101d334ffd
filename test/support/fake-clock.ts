import type { Timers } from '../../functions/kernel/timers.js';

interface Scheduled {
  readonly id: number;
  at: number;
  readonly fn: () => void;
  readonly every?: number;
}

/** Lets promises and callbacks queued by the code under test run (real immediates, not timers). */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve));
}

/**
 * A clock and timers that move only when a test says so: `advance` runs every timer that falls due, in
 * time order, at its own instant (with what it queued settled before the next), so that a test asserts
 * exactly when something happens.
 */
export function createFakeClock(start = 0) {
  let now = start;
  let nextId = 1;
  const scheduled: Scheduled[] = [];
  const schedule = (ms: number, fn: () => void, every?: number): (() => void) => {
    const entry: Scheduled = { id: nextId++, at: now + Math.max(0, ms), fn, ...(every ? { every } : {}) };
    scheduled.push(entry);
    return () => {
      const i = scheduled.indexOf(entry);
      if (i >= 0) scheduled.splice(i, 1);
    };
  };
  const timers: Timers = {
    after: (ms, fn) => schedule(ms, fn),
    every: (ms, fn) => schedule(ms, fn, ms),
    sleep: (ms, signal) =>
      new Promise<void>((resolve) => {
        if (signal?.aborted) return resolve();
        const cancel = schedule(ms, done);
        function done(): void {
          cancel();
          signal?.removeEventListener('abort', done);
          resolve();
        }
        signal?.addEventListener('abort', done, { once: true });
      }),
  };

  async function advance(ms: number): Promise<void> {
    const until = now + ms;
    await settle();
    for (;;) {
      const due = scheduled.filter((s) => s.at <= until).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (due === undefined) break;
      now = due.at;
      if (due.every === undefined) scheduled.splice(scheduled.indexOf(due), 1);
      else due.at += due.every;
      due.fn();
      await settle();
    }
    now = until;
    await settle();
  }

  return {
    now: () => now,
    timers,
    advance,
    /** Advances in steps of `stepMs` until the promise settles (at most `limitMs`); its value. */
    async run<T>(promise: Promise<T>, stepMs = 10, limitMs = 600_000): Promise<T> {
      let settled = false;
      const watched = promise.finally(() => {
        settled = true;
      });
      for (let spent = 0; !settled && spent < limitMs; spent += stepMs) await advance(stepMs);
      return watched;
    },
    /** Timers still scheduled (a test fails one that leaves a timer behind). */
    pending: () => scheduled.length,
  };
}
