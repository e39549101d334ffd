import { describe, expect, test } from 'vitest';
import { createRunStop } from '../../functions/drain/stop.js';
import { createFakeClock } from '../support/fake-clock.js';

describe("a run's stop, under a fake clock", () => {
  test('the budget stops fetching at its end, and the hard stop follows exactly the settle time later', async () => {
    const clock = createFakeClock();
    const stop = createRunStop(
      { budgetMs: 1_000, settleMs: 300, signal: new AbortController().signal },
      clock.timers,
    );
    await clock.advance(999);
    expect(stop.signal.aborted).toBe(false);
    await clock.advance(1);
    expect(stop.signal.aborted).toBe(true);
    expect(stop.reason).toBe('budget');
    await clock.advance(299);
    expect(stop.hard.aborted).toBe(false);
    await clock.advance(1);
    expect(stop.hard.aborted).toBe(true);
    stop.dispose();
    expect(clock.pending()).toBe(0);
  });

  test('a signal stops the run at once (its reason kept when the budget ends later), the hard stop a settle time after', async () => {
    const clock = createFakeClock();
    const outside = new AbortController();
    const stop = createRunStop({ budgetMs: 1_000, settleMs: 300, signal: outside.signal }, clock.timers);
    await clock.advance(200);
    outside.abort();
    expect(stop.signal.aborted).toBe(true);
    expect(stop.reason).toBe('signal');
    await clock.advance(299);
    expect(stop.hard.aborted).toBe(false);
    await clock.advance(1);
    expect(stop.hard.aborted).toBe(true);
    await clock.advance(1_000);
    expect(stop.reason).toBe('signal');
    stop.dispose();
    stop.dispose();
    expect(clock.pending()).toBe(0);
  });

  test('a signal already aborted stops the run before it starts; disposing leaves no timer behind', async () => {
    const clock = createFakeClock();
    const outside = new AbortController();
    outside.abort();
    const stop = createRunStop({ budgetMs: 1_000, settleMs: 300, signal: outside.signal }, clock.timers);
    expect(stop.reason).toBe('signal');
    stop.dispose();
    expect(clock.pending()).toBe(0);
    await clock.advance(2_000);
    expect(stop.hard.aborted).toBe(false);
  });
});
