import { afterAll, expect, test } from 'vitest';
import { pullAll } from '../support/pubsub.js';
import { stackClients, uniqueName } from '../support/stack.js';

const clients = await stackClients();
afterAll(() => clients.close());

test('pubsub: a message published with attributes is pulled back with them', async () => {
  const [topic] = await clients.pubsub.createTopic(uniqueName('smoke'));
  const [subscription] = await topic.createSubscription(uniqueName('smoke-sub'));
  await topic.publishMessage({
    data: Buffer.from('{"a":1}'),
    attributes: { source_offset: '42', kind: 'x' },
  });

  const pulled = await pullAll(clients, subscription.name);
  expect(pulled.map((m) => ({ data: m.data.toString(), attributes: m.attributes }))).toEqual([
    { data: '{"a":1}', attributes: { source_offset: '42', kind: 'x' } },
  ]);
});
