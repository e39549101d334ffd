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

export interface ProducedLog {
  /** Per partition, per offset: whether the record was produced malformed. */
  offsets: Map<number, Map<number, boolean>>;
  total: number;
}

/**
 * A producer that keeps writing small batches to every partition until stopped; every `malformedEvery`-th
 * record is not JSON. Returns exactly which offset got what, from Kafka's own acknowledgements.
 */
export function startProducer(
  topic: string,
  partitions: number,
  options: { batch: number; pauseMs: number; malformedEvery: number },
) {
  const producer = testKafka().producer();
  const log: ProducedLog = { offsets: new Map(), total: 0 };
  let running = true;
  let counter = 0;
  const done = (async () => {
    await producer.connect();
    try {
      while (running) {
        for (let partition = 0; partition < partitions && running; partition++) {
          const values = Array.from({ length: options.batch }, () => {
            const i = counter++;
            const malformed = i % options.malformedEvery === options.malformedEvery - 1;
            return {
              malformed,
              value: malformed ? `{malformed ${i}` : JSON.stringify({ id: `r${i}`, n: i }),
            };
          });
          const [meta] = await producer.send({
            topic,
            acks: -1,
            messages: values.map((v) => ({ partition, value: v.value })),
          });
          const base = Number(meta!.baseOffset);
          const offsets = log.offsets.get(partition) ?? new Map<number, boolean>();
          for (const [k, v] of values.entries()) offsets.set(base + k, v.malformed);
          log.offsets.set(partition, offsets);
          log.total += values.length;
        }
        await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
      }
    } finally {
      await producer.disconnect();
    }
  })();
  return {
    log,
    async stop(): Promise<ProducedLog> {
      running = false;
      await done;
      return log;
    },
  };
}
