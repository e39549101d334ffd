/** The dispatcher's rule (functions/dispatch/sizing.ts), on a fake clock: rates from summaries, clamps, runs still going. */
import { describe, expect, test } from 'vitest';
import { decideTasks, learnedRate, type RunRate, rateWindowMs } from '../../functions/dispatch/sizing.js';
import { createFakeClock } from '../support/fake-clock.js';

const clock = createFakeClock(Date.UTC(2026, 11, 6, 12));
const run = (
  ago: number,
  recordsRead: number,
  seconds: number,
  stopReason: RunRate['stopReason'],
): RunRate => ({
  endedAt: clock.now() - ago,
  recordsRead,
  durationMs: seconds * 1000,
  stopReason,
});
const base = { partitionCount: 16, runningTasks: 0, budgetSeconds: 240, minTasks: 1, maxTasks: 10 };

describe('the rate a task drains', () => {
  test('the median of recent runs that drained their whole budget', () => {
    const runs = [
      run(60_000, 240_000, 240, 'budget'),
      run(120_000, 480_000, 240, 'budget'),
      run(180_000, 720_000, 240, 'budget'),
    ];
    expect(learnedRate(runs, clock.now())).toBe(2000);
  });

  test('runs that caught up only bound it from below: the best of them, with no full run', () => {
    const runs = [run(60_000, 10_000, 20, 'caught_up'), run(120_000, 30_000, 20, 'caught_up')];
    expect(learnedRate(runs, clock.now())).toBe(1500);
    expect(learnedRate([...runs, run(30_000, 240_000, 240, 'budget')], clock.now())).toBe(1000);
  });

  test('unknown before any run, and runs older than the window or that failed teach nothing', () => {
    expect(learnedRate([], clock.now())).toBeNull();
    expect(learnedRate([run(rateWindowMs + 1, 240_000, 240, 'budget')], clock.now())).toBeNull();
    expect(learnedRate([run(1000, 500, 10, 'error'), run(1000, 0, 240, 'budget')], clock.now())).toBeNull();
  });
});

describe('the tasks launched', () => {
  test('nothing waits: none', () => {
    expect(decideTasks({ ...base, backlog: 0, ratePerTask: 1000 })).toEqual({
      tasks: 0,
      reason: 'nothing waits',
    });
  });

  test('enough tasks to drain what waits in one run at the learned rate', () => {
    // 300,000 records at 500/s a task for 240 s (120,000 a task): 3 tasks.
    const decision = decideTasks({ ...base, backlog: 300_000, ratePerTask: 500 });
    expect(decision.tasks).toBe(3);
    expect(decision.reason).toBe('300000 records wait; a task drains 500/s for 240 s: 3 task(s)');
    expect(decideTasks({ ...base, backlog: 100, ratePerTask: 500 }).tasks).toBe(1);
  });

  test('clamped to maxTasks, to the partitions, and raised to minTasks', () => {
    expect(decideTasks({ ...base, backlog: 10_000_000, ratePerTask: 500 }).tasks).toBe(10);
    expect(decideTasks({ ...base, partitionCount: 4, backlog: 10_000_000, ratePerTask: 500 }).tasks).toBe(4);
    expect(decideTasks({ ...base, minTasks: 2, backlog: 10, ratePerTask: 500 }).tasks).toBe(2);
  });

  test('no rate yet (the first run): minTasks', () => {
    const decision = decideTasks({ ...base, minTasks: 2, backlog: 300_000, ratePerTask: null });
    expect(decision).toEqual({
      tasks: 2,
      reason: '300000 records wait; no run has taught the rate yet: 2 task(s)',
    });
  });

  test('an execution still running: only the tasks missing are launched, none when it is enough', () => {
    expect(decideTasks({ ...base, backlog: 300_000, ratePerTask: 500, runningTasks: 1 })).toEqual({
      tasks: 2,
      reason: '300000 records wait; a task drains 500/s for 240 s: 3 task(s), 1 still run: 2 more launched',
    });
    expect(decideTasks({ ...base, backlog: 300_000, ratePerTask: 500, runningTasks: 3 }).tasks).toBe(0);
  });
});
