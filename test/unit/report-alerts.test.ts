import { describe, expect, test } from 'vitest';
import { reportAlerts } from '../../functions/drain/alert-report.js';
import { emptyLiveness } from '../../functions/drain/episodes.js';
import { createMemoryLogger } from '../../functions/kernel/logger.js';
import { createMemoryAlerts } from '../support/memory-ports.js';

const thresholds = { idleSeconds: 300, stallSeconds: 900, backlogRecords: 1_000_000, backlogGrowingRuns: 3 };
const seen = {
  pipeline: 'p',
  topic: 't',
  partition: 0,
  now: Date.parse('2026-11-29T12:00:00Z'),
  logStart: 100,
  end: 200,
  checkpointBefore: 40,
  checkpointAfter: 40,
  lastProgressAt: null,
  lost: { from: 40, to: 100, skipped: false },
};

describe("reportAlerts: a partition's alerts at the end of a run", () => {
  test('an alert that opens is logged at ERROR (retention gap) and published', async () => {
    const logger = createMemoryLogger();
    const alerts = createMemoryAlerts();
    const { state, raised } = await reportAlerts(emptyLiveness, seen, thresholds, { alerts, logger });
    expect(raised).toBe(1);
    expect(alerts.sent).toMatchObject([{ kind: 'retention_gap', state: 'open', lostFrom: 40, lostTo: 100 }]);
    expect(logger.lines).toContainEqual(
      expect.objectContaining({ severity: 'ERROR', message: 'retention_gap alert', event: 'alert' }),
    );
    expect(state.pendingAlerts).toEqual([]);
    expect(Object.keys(state.openAlerts)).toEqual(['retention_gap']);
  });

  test('an alert that cannot be published stays pending, and the next run publishes it without raising it again', async () => {
    const logger = createMemoryLogger();
    const alerts = createMemoryAlerts();
    alerts.failWith(new Error('pubsub down'));
    const first = await reportAlerts(emptyLiveness, seen, thresholds, { alerts, logger });
    expect(first.state.pendingAlerts).toHaveLength(1);
    expect(alerts.sent).toEqual([]);

    alerts.failWith(undefined);
    const second = await reportAlerts(first.state, { ...seen, now: seen.now + 60_000 }, thresholds, {
      alerts,
      logger,
    });
    expect(second.raised).toBe(0);
    expect(alerts.sent).toMatchObject([{ kind: 'retention_gap', state: 'open' }]);
    expect(second.state.pendingAlerts).toEqual([]);
  });

  test('without an alert topic, alerts are logged only and nothing is kept pending', async () => {
    const logger = createMemoryLogger();
    const { state, raised } = await reportAlerts(emptyLiveness, seen, thresholds, { logger });
    expect(raised).toBe(1);
    expect(state.pendingAlerts).toEqual([]);
  });
});
