import type { PubSub } from '@google-cloud/pubsub';
import { pubsubError } from '../dead-letters/pubsub-dead-letters.js';
import type { Alerts } from '../kernel/ports.js';

/** Alerts on ALERT_TOPIC: JSON data as DESIGN.md says, with `kind`, `state`, `pipeline` as attributes. */
export function createPubSubAlerts(pubsub: PubSub, topicName: string): Alerts {
  const topic = pubsub.topic(topicName);
  return {
    async publish(alert) {
      try {
        await topic.publishMessage({
          data: Buffer.from(JSON.stringify(alert)),
          attributes: { kind: alert.kind, state: alert.state, pipeline: alert.pipeline },
        });
      } catch (error) {
        throw pubsubError(error, 'publish alert');
      }
    },
  };
}
