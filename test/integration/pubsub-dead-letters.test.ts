import { afterAll, expect, test } from 'vitest';
import { createPubSubDeadLetters } from '../../functions/dead-letters/pubsub-dead-letters.js';
import { createMemoryLogger } from '../../functions/kernel/logger.js';
import { record } from '../support/memory-ports.js';
import { pullAll } from '../support/pubsub.js';
import { stackClients, uniqueName } from '../support/stack.js';

const clients = await stackClients();
afterAll(() => clients.close());
const retry = { attempts: 2, initialDelayMs: 1, maxDelayMs: 5 };

test('dead letters arrive with the original value and their origin', async () => {
  const [topic] = await clients.pubsub.createTopic(uniqueName('dlq'));
  const [subscription] = await topic.createSubscription(uniqueName('dlq-sub'));
  const deadLetters = createPubSubDeadLetters(clients.pubsub, {
    topic: topic.name.split('/').pop()!,
    pipeline: 'p1',
    execution: 'e1',
    retry,
    logger: createMemoryLogger(),
  });
  await deadLetters.publish(
    Array.from({ length: 30 }, (_, i) => ({
      record: record('orders', 1, i, `{bad ${i}`),
      kind: 'decode' as const,
      message: `reason ${i}`,
    })),
  );
  const pulled = await pullAll(clients, subscription.name);
  expect(pulled).toHaveLength(30);
  const byOffset = new Map(pulled.map((m) => [m.attributes.source_offset, m]));
  expect(byOffset.get('7')!.data.toString()).toBe('{bad 7');
  expect(byOffset.get('7')!.attributes).toMatchObject({
    pipeline: 'p1',
    source_topic: 'orders',
    source_partition: '1',
    error_kind: 'decode',
    error_message: 'reason 7',
    execution: 'e1',
  });
});

test('publishing to a topic that does not exist fails, naming the topic (so the checkpoint cannot pass it)', async () => {
  const missing = uniqueName('missing');
  const deadLetters = createPubSubDeadLetters(clients.pubsub, {
    topic: missing,
    pipeline: 'p1',
    execution: 'e1',
    retry,
    logger: createMemoryLogger(),
  });
  await expect(
    deadLetters.publish([{ record: record('t', 0, 0, 'x'), kind: 'decode', message: 'm' }]),
  ).rejects.toThrow(new RegExp(`pubsub publish 1 dead letters to topic ${missing}: .*NOT_FOUND`));
});
