import { type PubSub, v1 } from '@google-cloud/pubsub';
import { pubsubError } from './pubsub-dead-letters.js';

export interface PulledLetter {
  readonly data: Buffer;
  readonly attributes: Readonly<Record<string, string>>;
  /** Done with it: Pub/Sub forgets it. */
  ack(): Promise<void>;
  /** Not done: Pub/Sub delivers it again (now, to whoever pulls). */
  release(): Promise<void>;
}

/** Synchronous pull from a dead-letter subscription, for the operator commands (list, replay). */
export function createDeadLetterSubscription(pubsub: PubSub, subscriptionName: string) {
  const options = pubsub.options;
  const client = new v1.SubscriberClient({
    ...(options.servicePath ? { apiEndpoint: options.servicePath } : {}),
    ...(options.port ? { port: Number(options.port) } : {}),
    ...(options.sslCreds ? { sslCreds: options.sslCreds } : {}),
    projectId: pubsub.projectId,
  });
  const subscription = subscriptionName.includes('/')
    ? subscriptionName
    : `projects/${pubsub.projectId}/subscriptions/${subscriptionName}`;
  return {
    async pull(max: number): Promise<PulledLetter[]> {
      try {
        const [result] = await client.pull(
          { subscription, maxMessages: max, returnImmediately: true },
          { timeout: 30_000 },
        );
        return (result.receivedMessages ?? []).map((m) => ({
          data: Buffer.from(m.message?.data ?? ''),
          attributes: { ...(m.message?.attributes ?? {}) },
          ack: () =>
            client
              .acknowledge({ subscription, ackIds: [m.ackId!] })
              .then(() => undefined)
              .catch((error: unknown) => {
                throw pubsubError(error, 'acknowledge');
              }),
          release: () =>
            client
              .modifyAckDeadline({ subscription, ackIds: [m.ackId!], ackDeadlineSeconds: 0 })
              .then(() => undefined)
              .catch(() => undefined),
        }));
      } catch (error) {
        throw pubsubError(error, 'pull dead letters');
      }
    },
    close: () => client.close(),
  };
}
