import { expect, test } from 'vitest';
import { headTimestamps } from '../../functions/sources/head-probe.js';
import { createTopic, testKafka } from '../support/kafka.js';
import { pythonProduce } from '../support/producers.js';
import { uniqueName } from '../support/stack.js';

/** JSON values as the raw format of the Python producer takes them (hex). */
const rawValues = (values: readonly unknown[]) =>
  `[${values.map((v) => `"${Buffer.from(JSON.stringify(v)).toString('hex')}"`).join(', ')}]`;

const hourAgo = () => Date.now() - 3_600_000;

test('the timestamp of the first record at or after each position, from records confluent-kafka produced with their own CreateTime', async () => {
  const topic = uniqueName('probe');
  await createTopic(topic, 3);
  const t0 = hourAgo();
  await pythonProduce({ topic, format: 'raw', partition: 0, timestamp: t0, values: rawValues([1, 2, 3]) });
  await pythonProduce({
    topic,
    format: 'raw',
    partition: 0,
    timestamp: t0 + 1_000,
    values: rawValues([4, 5]),
  });
  await pythonProduce({
    topic,
    format: 'raw',
    partition: 2,
    timestamp: t0 + 2_000,
    values: rawValues([6]),
  });
  const found = await headTimestamps(testKafka(), [
    { topic, partition: 0, offset: 0 },
    { topic, partition: 1, offset: 0 },
    { topic, partition: 2, offset: 0 },
  ]);
  expect(found).toEqual(
    new Map([
      [`${topic}~0`, t0],
      [`${topic}~1`, null],
      [`${topic}~2`, t0 + 2_000],
    ]),
  );
  // At offset 3 the next record is the fourth; at the end, nothing waits.
  const later = await headTimestamps(testKafka(), [
    { topic, partition: 0, offset: 3 },
    { topic, partition: 2, offset: 1 },
  ]);
  expect(later).toEqual(
    new Map([
      [`${topic}~0`, t0 + 1_000],
      [`${topic}~2`, null],
    ]),
  );
});

test('a first record batch larger than the first room, aborted records, and a position out of range among others', async () => {
  const topic = uniqueName('probe-hard');
  await createTopic(topic, 4);
  const t0 = hourAgo();
  // Partition 0: one batch of about 300 KB (kafkajs sends a send() as one batch).
  const kafka = testKafka();
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const big = 'x'.repeat(3_000);
  await producer.send({
    topic,
    messages: Array.from({ length: 100 }, (_, i) => ({
      partition: 0,
      value: JSON.stringify({ i, big }),
      timestamp: String(t0 + i),
    })),
  });
  // Partition 1 too, so that partition 0 is not alone in the response.
  await producer.send({
    topic,
    messages: Array.from({ length: 100 }, (_, i) => ({
      partition: 1,
      value: JSON.stringify({ i, big }),
      timestamp: String(t0 + 10_000 + i),
    })),
  });
  await producer.disconnect();
  // Partition 2: a transaction aborted, then one committed.
  const transactional = kafka.producer({
    transactionalId: uniqueName('probe-tx'),
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await transactional.connect();
  const aborted = await transactional.transaction();
  await aborted.send({
    topic,
    messages: [1, 2, 3].map((i) => ({ partition: 2, value: `{"aborted":${i}}`, timestamp: String(t0) })),
  });
  await aborted.abort();
  const committed = await transactional.transaction();
  await committed.send({
    topic,
    messages: [{ partition: 2, value: '{"committed":1}', timestamp: String(t0 + 20_000) }],
  });
  await committed.commit();
  await transactional.disconnect();

  const found = await headTimestamps(kafka, [
    { topic, partition: 0, offset: 0 },
    { topic, partition: 1, offset: 50 },
    { topic, partition: 2, offset: 0 },
    { topic, partition: 3, offset: 999 }, // past the end: Kafka refuses it; the others are answered
  ]);
  expect(found.get(`${topic}~0`)).toBe(t0);
  expect(found.get(`${topic}~1`)).toBe(t0 + 10_050);
  expect(found.get(`${topic}~2`)).toBe(t0 + 20_000);
  expect(found.has(`${topic}~3`)).toBe(false);
});

test('a topic with LogAppendTime: the broker’s time of append, whatever the producer said', async () => {
  const topic = uniqueName('probe-append');
  const admin = testKafka().admin();
  await admin.connect();
  await admin.createTopics({
    topics: [
      {
        topic,
        numPartitions: 1,
        configEntries: [{ name: 'message.timestamp.type', value: 'LogAppendTime' }],
      },
    ],
    waitForLeaders: true,
  });
  await admin.disconnect();
  const before = Date.now();
  await pythonProduce({ topic, format: 'raw', partition: 0, timestamp: hourAgo(), values: rawValues([1]) });
  const found = await headTimestamps(testKafka(), [{ topic, partition: 0, offset: 0 }]);
  const appended = found.get(`${topic}~0`)!;
  expect(appended).toBeGreaterThanOrEqual(before - 1_000);
  expect(appended).toBeLessThanOrEqual(Date.now() + 1_000);
});
