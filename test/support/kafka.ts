import kafkajs from 'kafkajs';
import { stackEnv } from './stack.js';

export function testKafka() {
  return new kafkajs.Kafka({
    clientId: 'tests',
    brokers: [stackEnv().KAFKA_BROKERS],
    logLevel: kafkajs.logLevel.NOTHING,
  });
}

export async function createTopic(topic: string, partitions: number): Promise<void> {
  const admin = testKafka().admin();
  await admin.connect();
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
}

/** Produces `values` to one partition, in order; returns the offsets Kafka gave them. */
export async function produce(
  topic: string,
  messages: { partition: number; value: string | Buffer | null; key?: string }[],
): Promise<void> {
  const producer = testKafka().producer();
  await producer.connect();
  try {
    for (let i = 0; i < messages.length; i += 1000) {
      await producer.send({
        topic,
        messages: messages
          .slice(i, i + 1000)
          .map((m) => ({ partition: m.partition, value: m.value, key: m.key ?? null })),
      });
    }
  } finally {
    await producer.disconnect();
  }
}
