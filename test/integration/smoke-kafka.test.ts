import kafkajs from 'kafkajs';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { stackEnv, uniqueName } from '../support/stack.js';

const kafka = new kafkajs.Kafka({ brokers: [stackEnv().KAFKA_BROKERS], logLevel: kafkajs.logLevel.NOTHING });
const admin = kafka.admin();
const producer = kafka.producer();

beforeAll(async () => {
  await admin.connect();
  await producer.connect();
});
afterAll(async () => {
  await producer.disconnect();
  await admin.disconnect();
});

test('kafka: a topic with several partitions keeps exact offsets per partition', async () => {
  const topic = uniqueName('smoke');
  await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true });
  for (let i = 0; i < 9; i++) {
    await producer.send({ topic, messages: [{ partition: i % 3, value: JSON.stringify({ i }) }] });
  }
  const offsets = await admin.fetchTopicOffsets(topic);
  expect(offsets.map((o) => [o.partition, o.low, o.high]).sort()).toEqual([
    [0, '0', '3'],
    [1, '0', '3'],
    [2, '0', '3'],
  ]);

  const consumer = kafka.consumer({ groupId: uniqueName('smoke-group') });
  const seen: string[] = [];
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      consumer
        .run({
          autoCommit: false,
          eachMessage: async ({ partition, message }) => {
            seen.push(`${partition}:${message.offset}:${message.value?.toString()}`);
            if (seen.length === 9) resolve();
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  expect(seen.sort()).toEqual([
    '0:0:{"i":0}',
    '0:1:{"i":3}',
    '0:2:{"i":6}',
    '1:0:{"i":1}',
    '1:1:{"i":4}',
    '1:2:{"i":7}',
    '2:0:{"i":2}',
    '2:1:{"i":5}',
    '2:2:{"i":8}',
  ]);
});
