import { v1 } from '@google-cloud/pubsub';
import type { GoogleClients } from '../../functions/google/clients.js';

export interface PulledMessage {
  data: Buffer;
  attributes: Record<string, string>;
}

/** Synchronous pull until the subscription returns nothing more, acknowledging what it pulled. */
export async function pullAll(clients: GoogleClients, subscriptionName: string): Promise<PulledMessage[]> {
  const options = clients.pubsub.options;
  const client = new v1.SubscriberClient({
    apiEndpoint: options.servicePath,
    port: Number(options.port),
    sslCreds: options.sslCreds,
    projectId: clients.pubsub.projectId,
  });
  const subscription = subscriptionName.includes('/')
    ? subscriptionName
    : `projects/${clients.pubsub.projectId}/subscriptions/${subscriptionName}`;
  const messages: PulledMessage[] = [];
  try {
    for (;;) {
      const [result] = await client.pull(
        { subscription, maxMessages: 1000, returnImmediately: true },
        { timeout: 10_000 },
      );
      const received = result.receivedMessages ?? [];
      if (received.length === 0) break;
      for (const m of received) {
        messages.push({
          data: Buffer.from(m.message?.data ?? ''),
          attributes: { ...(m.message?.attributes ?? {}) },
        });
      }
      await client.acknowledge({ subscription, ackIds: received.map((m) => m.ackId!) });
    }
  } finally {
    await client.close();
  }
  return messages;
}
