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
    await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: false });
    // kafkajs's own wait gives up on UNKNOWN_TOPIC_OR_PARTITION, which a broker answers for a while about a
    // topic of many partitions: wait until every partition has a leader.
    for (let attempt = 0; ; attempt++) {
      const ready = await admin.fetchTopicMetadata({ topics: [topic] }).then(
        ({ topics }) =>
          topics[0]!.partitions.length === partitions && topics[0]!.partitions.every((p) => p.leader >= 0),
        () => false,
      );
      if (ready) break;
      if (attempt > 100) throw new Error(`topic ${topic} has no leader for every partition after 20 s`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    await admin.disconnect();
  }
}

/**
 * Produces `values` to their partitions, in order. Idempotent: a send kafkajs retries (a broker that does
 * not serve a new topic's partitions yet answers errors for a moment) must not write a record twice, as
 * the tests count records exactly.
 */
export async function produce(
  topic: string,
  messages: {
    partition: number;
    value: string | Buffer | null;
    key?: string | Buffer;
    headers?: Record<string, string | Buffer | (string | Buffer)[]>;
  }[],
): Promise<void> {
  const producer = testKafka().producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    // At most 1,000 records or ~512 KB a request: the broker refuses record batches over 1 MB.
    let chunk: typeof messages = [];
    let bytes = 0;
    const flush = async () => {
      if (chunk.length === 0) return;
      await producer.send({
        topic,
        messages: chunk.map((m) => ({
          partition: m.partition,
          value: m.value,
          key: m.key ?? null,
          ...(m.headers === undefined ? {} : { headers: m.headers }),
        })),
      });
      chunk = [];
      bytes = 0;
    };
    for (const m of messages) {
      const size = m.value === null ? 0 : m.value.length;
      if (chunk.length >= 1000 || (chunk.length > 0 && bytes + size > 512 * 1024)) await flush();
      chunk.push(m);
      bytes += size;
    }
    await flush();
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
  options: {
    batch: number;
    pauseMs: number;
    malformedEvery: number;
    /**
     * Go on through broker faults: a send that fails is not retried (it may or may not be in the log) and
     * the producer is made anew; the log then comes from Kafka itself (faults.ts readTopic), not from here.
     */
    throughFaults?: boolean;
  },
) {
  let producer = testKafka().producer({ idempotent: true, maxInFlightRequests: 1 });
  let failures = 0;
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
          let meta: { baseOffset?: string } | undefined;
          try {
            [meta] = await producer.send({
              topic,
              acks: -1,
              messages: values.map((v) => ({ partition, value: v.value })),
            });
          } catch (error) {
            if (!options.throughFaults) throw error;
            failures++;
            await producer.disconnect().catch(() => {});
            await new Promise((resolve) => setTimeout(resolve, 500));
            producer = testKafka().producer({ idempotent: true, maxInFlightRequests: 1 });
            await producer.connect().catch(() => {});
            continue;
          }
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
    failures: () => failures,
    async stop(): Promise<ProducedLog> {
      running = false;
      await done;
      return log;
    },
  };
}
