import kafkajs from 'kafkajs';
import { createTopic } from '../test/support/kafka.js';

/**
 * Produces `count` records to a new topic of `partitions`, round robin by hand (every partition gets its
 * share: keys alone could leave some empty), 1,000 a send, idempotent (a send retried while the broker
 * brings up a new topic's partitions must not write twice).
 */
export async function produce(
  brokers: string,
  topic: string,
  count: number,
  partitions: number,
  value: (i: number) => string | Buffer,
): Promise<void> {
  // Waits until every partition has a leader (kafkajs's own wait gives up early on a topic of many).
  await createTopic(topic, partitions);
  const kafka = new kafkajs.Kafka({ brokers: [brokers], logLevel: kafkajs.logLevel.NOTHING });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  for (let i = 0; i < count; i += 1000) {
    const messages = Array.from({ length: Math.min(1000, count - i) }, (_, k) => ({
      key: `k${i + k}`,
      partition: (i + k) % partitions,
      value: value(i + k),
    }));
    await producer.send({ topic, messages });
  }
  await producer.disconnect();
}
