import type { Logger } from '../kernel/logger.js';
import type { Alerts } from '../kernel/ports.js';
import {
  type Alert,
  evaluateEpisodes,
  type LivenessState,
  type Observation,
  type Thresholds,
} from './episodes.js';

/**
 * A partition's alerts at the end of a run: its episodes opened and resolved (episodes.ts), each alert
 * logged (WARNING or ERROR when it opens, NOTICE when it resolves, so that log-based policies can page)
 * and published with any alert an earlier run could not publish. What is not acknowledged stays pending
 * in the returned state, for the next run. Returns the state to keep and how many alerts were raised.
 */
export async function reportAlerts(
  previous: LivenessState,
  seen: Observation,
  thresholds: Thresholds,
  ports: { readonly alerts?: Alerts; readonly logger: Logger },
): Promise<{ state: LivenessState; raised: number }> {
  const { state, alerts } = evaluateEpisodes(previous, seen, thresholds);
  for (const alert of alerts) {
    const fields = { event: 'alert', ...alert };
    if (alert.state === 'resolved') ports.logger.notice(`${alert.kind} alert resolved`, fields);
    else if (alert.kind === 'retention_gap' || alert.kind === 'stalled')
      ports.logger.error(`${alert.kind} alert`, fields);
    else ports.logger.warn(`${alert.kind} alert`, fields);
  }
  const pending: Alert[] = [];
  for (const alert of state.pendingAlerts) {
    // Without an alert topic, alerts are only logged.
    if (ports.alerts === undefined) continue;
    try {
      await ports.alerts.publish(alert);
    } catch (error) {
      ports.logger.warn('alert publish failed; the next run publishes it again', { error, kind: alert.kind });
      pending.push(alert);
    }
  }
  return { state: { ...state, pendingAlerts: pending }, raised: alerts.length };
}
