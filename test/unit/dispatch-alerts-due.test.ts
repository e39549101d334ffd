/**
 * The alerts a quiet pipeline still owes (functions/dispatch/alerts-due.ts), on a fake clock, and the
 * dispatcher's settings: bounds checked, and in load mode no more tasks than each can get a load.
 */
import { describe, expect, test } from 'vitest';
import { parseConfig } from '../../functions/config/config.js';
import { leastSettings } from '../../functions/config/settings.js';
import { alertOwed, type QuietPartition } from '../../functions/dispatch/alerts-due.js';
import { emptyLiveness } from '../../functions/drain/episodes.js';
import { createFakeClock } from '../support/fake-clock.js';

const clock = createFakeClock(Date.UTC(2026, 11, 6, 12));
const thresholds = { idleSeconds: 600, stallSeconds: 900, backlogRecords: 100_000, backlogGrowingRuns: 3 };
const drained = (changedAgo: number, extra: Partial<typeof emptyLiveness> = {}): QuietPartition => ({
  topic: 'orders',
  partition: 3,
  logStart: 0,
  end: 50,
  state: {
    nextOffset: 50,
    lastProgressAt: clock.now() - changedAgo,
    liveness: {
      ...emptyLiveness,
      highWatermark: 50,
      highWatermarkChangedAt: clock.now() - changedAgo,
      ...extra,
    },
  },
});

describe('what a quiet pipeline still owes', () => {
  test('nothing while no episode would change', () => {
    expect(alertOwed([drained(599_000)], 'p', thresholds, clock.now())).toBeNull();
  });

  test('idle opens once the quiet passes IDLE_ALERT_SECONDS, and not again once open', () => {
    expect(alertOwed([drained(600_000)], 'p', thresholds, clock.now())).toBe('idle opens on orders/3');
    const open = drained(700_000, {
      openAlerts: { idle: { since: clock.now() - 700_000, detail: 'quiet' } },
    });
    expect(alertOwed([open], 'p', thresholds, clock.now())).toBeNull();
  });

  test('an episode that ended while no run looked resolves (a backlog an operator skipped past)', () => {
    const backlog = drained(1_000, { openAlerts: { backlog: { since: 0, detail: '200000 records left' } } });
    expect(alertOwed([backlog], 'p', thresholds, clock.now())).toBe('backlog resolves on orders/3');
  });

  test('an alert a run could not publish, and a partition no run has seen, are owed a run', () => {
    const pending = drained(1_000, {
      pendingAlerts: [
        {
          kind: 'idle',
          state: 'open',
          pipeline: 'p',
          topic: 'orders',
          partition: 3,
          detail: 'quiet',
          since: '2026-12-06T11:00:00Z',
          observedAt: '2026-12-06T11:50:00Z',
        },
      ],
    });
    expect(alertOwed([pending], 'p', thresholds, clock.now())).toBe(
      '1 alert(s) of orders/3 wait to be published',
    );
    expect(
      alertOwed([{ topic: 'orders', partition: 7, logStart: 0, end: 0 }], 'p', thresholds, clock.now()),
    ).toBe('orders/7 was never seen by a run');
  });
});

describe('the dispatcher settings', () => {
  const env = { ...leastSettings, DEAD_LETTER_TOPIC: 'dead-letters' };

  test('unset: no dispatcher; set: its bounds and job', () => {
    expect(parseConfig(env).dispatch).toEqual({
      minTasks: 1,
      maxTasks: null,
      job: null,
      adminEndpoint: null,
    });
    expect(
      parseConfig({
        ...env,
        DISPATCH_MIN_TASKS: '2',
        DISPATCH_MAX_TASKS: '40',
        DISPATCH_JOB: 'projects/acme/locations/europe-west1/jobs/orders-drain',
      }).dispatch,
    ).toMatchObject({
      minTasks: 2,
      maxTasks: 40,
      job: 'projects/acme/locations/europe-west1/jobs/orders-drain',
    });
  });

  test('bad bounds and a bad job name are refused naming the variable', () => {
    expect(() => parseConfig({ ...env, DISPATCH_MAX_TASKS: 'many' })).toThrow(
      /DISPATCH_MAX_TASKS: "many" is not a whole number/,
    );
    expect(() => parseConfig({ ...env, DISPATCH_MIN_TASKS: '5', DISPATCH_MAX_TASKS: '4' })).toThrow(
      /DISPATCH_MIN_TASKS: \(5\) is above DISPATCH_MAX_TASKS \(4\)/,
    );
    expect(() => parseConfig({ ...env, DISPATCH_JOB: 'orders-drain' })).toThrow(/DISPATCH_JOB/);
  });

  test('load mode: no more tasks than each still gets a load of the day', () => {
    const load = {
      ...env,
      BQ_WRITE_MODE: 'load',
      SCHEDULE_PERIOD_SECONDS: '3600',
      LOAD_JOBS_PER_TABLE_PER_DAY: '96',
    };
    expect(parseConfig({ ...load, DISPATCH_MAX_TASKS: '4' }).dispatch.maxTasks).toBe(4);
    expect(() => parseConfig({ ...load, DISPATCH_MAX_TASKS: '5' })).toThrow(
      /DISPATCH_MAX_TASKS: \(5\) is too many for load mode: 96 loads a table a day over 24 runs/,
    );
  });
});
