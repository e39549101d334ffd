import { describe, expect, test } from 'vitest';
import { retriedByDefault } from '../../functions/google/clients.js';
import { createCallTracker, ServiceTimeoutError, trackedPort } from '../../functions/kernel/calls.js';
import { isRetriable } from '../../functions/kernel/errors.js';

const never = () => new Promise<never>(() => {});

describe('the call tracker', () => {
  test('a call that does not answer fails at its deadline, naming the service and the call, retriable', async () => {
    const calls = createCallTracker();
    const error = await calls
      .track('firestore', 'commit', never, { deadlineMs: 50 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceTimeoutError);
    expect((error as Error).message).toBe('firestore: commit did not answer within 0 s');
    expect((error as ServiceTimeoutError).service).toBe('firestore');
    expect(isRetriable(error)).toBe(true);
    expect(calls.pending()).toEqual([]);
  });

  test('answers and failures pass through untouched, and leave nothing pending', async () => {
    const calls = createCallTracker();
    await expect(calls.track('kafka', 'watermarks', async () => 7, { deadlineMs: 1_000 })).resolves.toBe(7);
    await expect(
      calls.track('kafka', 'open', () => Promise.reject(new Error('no')), { deadlineMs: 1_000 }),
    ).rejects.toThrow('no');
    expect(calls.pending()).toEqual([]);
  });

  test('what is pending, oldest per service; at the cutoff every pending and new call fails', async () => {
    let clock = 1_000;
    const calls = createCallTracker(() => clock);
    const publish = calls.track('pubsub', 'publish', never);
    clock = 3_000;
    const write = calls.track('bigquery', 'write', never);
    calls.track('bigquery', 'write', never).catch(() => {});
    clock = 9_000;
    expect(calls.pending().map((c) => c.service)).toEqual(['pubsub', 'bigquery', 'bigquery']);
    expect(calls.describePending()).toBe(
      'pubsub did not answer (publish pending for 8 s); bigquery did not answer (write pending for 6 s)',
    );
    calls.cutoff(clock);
    await expect(publish).rejects.toThrow("pubsub: publish did not answer for 8 s, by the run's end");
    await expect(write).rejects.toThrow(ServiceTimeoutError);
    await expect(calls.track('firestore', 'release', async () => 1)).rejects.toThrow(
      'firestore: release not started: the run is at its end',
    );
    expect(calls.pending()).toEqual([]);
  });

  test('a cut-off call tells a failing service (it answered during the call) from a silent one', async () => {
    let clock = 1_000;
    const calls = createCallTracker(() => clock);
    calls.heard('bigquery'); // before the calls: says nothing about them
    clock = 2_000;
    const failing = calls.track('bigquery', 'preparing the table', never).catch(() => {});
    const silent = calls.track('firestore', 'commit', never).catch(() => {});
    clock = 4_000;
    calls.heard('bigquery');
    const late = calls.track('bigquery', 'prepare', never).catch(() => {});
    const write = calls.track('bigquery', 'write', never, { mayOutliveRun: true }).catch(() => {});
    clock = 5_000;
    calls.cutoff(clock);
    await Promise.all([failing, silent, late, write]);
    expect(calls.cutOff()).toEqual([
      {
        service: 'bigquery',
        operation: 'preparing the table',
        startedAt: 2_000,
        answering: true,
        mayOutliveRun: false,
      },
      { service: 'firestore', operation: 'commit', startedAt: 2_000, answering: false, mayOutliveRun: false },
      { service: 'bigquery', operation: 'prepare', startedAt: 4_000, answering: true, mayOutliveRun: false },
      { service: 'bigquery', operation: 'write', startedAt: 4_000, answering: true, mayOutliveRun: true },
    ]);
    // Only the silent service fails the run.
    expect(calls.unanswered().map((c) => `${c.service} ${c.operation}`)).toEqual(['firestore commit']);
  });

  test('a write abandoned by design at the hard stop does not fail the run, even to a silent service', async () => {
    const calls = createCallTracker();
    const write = calls.track('bigquery', 'write', never, { mayOutliveRun: true }).catch((e: unknown) => e);
    const prepare = calls.track('bigquery', 'preparing the table', never).catch((e: unknown) => e);
    calls.cutoff(Date.now());
    expect(await write).toBeInstanceOf(ServiceTimeoutError);
    expect(await prepare).toBeInstanceOf(ServiceTimeoutError);
    expect(calls.cutOff()).toHaveLength(2);
    expect(calls.unanswered().map((c) => c.operation)).toEqual(['preparing the table']);
  });

  test('BigQuery error answers: the hook keeps what the client retries by default', () => {
    expect([408, 429, 500, 502, 503, 504].map((code) => retriedByDefault({ code }))).toEqual(
      Array(6).fill(true),
    );
    expect(retriedByDefault({ code: 400 })).toBe(false);
    expect(retriedByDefault({ code: 404 })).toBe(false);
    expect(retriedByDefault({ code: 403, errors: [{ reason: 'rateLimitExceeded' }] })).toBe(true);
    expect(retriedByDefault({ code: 403, errors: [{ reason: 'userRateLimitExceeded' }] })).toBe(true);
    expect(retriedByDefault({ code: 403, errors: [{ reason: 'accessDenied' }] })).toBe(false);
    expect(retriedByDefault(null)).toBe(false);
  });

  test('trackedPort tracks each method under its name, with per-method deadlines', async () => {
    const calls = createCallTracker();
    const port = {
      async renew(n: number) {
        return n + 1;
      },
      release: never,
    };
    const tracked = trackedPort(calls, 'firestore', port, { deadlineMs: 10_000 }, { release: 30 });
    await expect(tracked.renew(1)).resolves.toBe(2);
    await expect(tracked.release()).rejects.toThrow('firestore: release did not answer within 0 s');
  });
});

test('drained resolves once every pending call has answered or been cut off', async () => {
  const calls = createCallTracker();
  let answer: (value: number) => void = () => {};
  const slow = calls.track(
    'bigquery',
    'write',
    () =>
      new Promise<number>((resolve) => {
        answer = resolve;
      }),
  );
  let drained = false;
  const waiting = calls.drained().then(() => {
    drained = true;
  });
  await new Promise((resolve) => setTimeout(resolve, 10));
  expect(drained).toBe(false);
  answer(1);
  await slow;
  await waiting;
  expect(drained).toBe(true);
  await calls.drained(); // nothing pending: at once
});
