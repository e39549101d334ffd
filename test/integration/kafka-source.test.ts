import { afterAll, expect, test } from 'vitest';
import { createMemoryLogger } from '../../functions/kernel/logger.js';
import type { SourceReader } from '../../functions/kernel/ports.js';
import type { FetchedBatch } from '../../functions/kernel/records.js';
import { createKafkaSource, fetchBytesFor } from '../../functions/sources/kafka-source.js';
import { createTopic, produce, testKafka } from '../support/kafka.js';
import { uniqueName } from '../support/stack.js';

const kafka = testKafka();
const source = createKafkaSource(kafka, {
  groupPrefix: uniqueName('kbd-test'),
  logger: createMemoryLogger(),
});
const readers: SourceReader[] = [];
afterAll(async () => {
  for (const r of readers) await r.close();
});

async function readUntil(
  reader: SourceReader,
  done: (batches: FetchedBatch[]) => boolean,
): Promise<FetchedBatch[]> {
  const batches: FetchedBatch[] = [];
  const timeout = AbortSignal.timeout(30_000);
  while (!done(batches)) {
    const batch = await reader.next(timeout);
    if (batch === undefined) throw new Error('reader ended before the expected records arrived');
    batches.push(batch);
  }
  return batches;
}

test('watermarks report log start and end per partition', async () => {
  const topic = uniqueName('src');
  await createTopic(topic, 3);
  await produce(
    topic,
    [0, 0, 1].map((partition, i) => ({ partition, value: `{"i":${i}}` })),
  );
  expect(await source.watermarks([topic])).toEqual([
    { topic, partition: 0, logStart: 0, end: 2 },
    { topic, partition: 1, logStart: 0, end: 1 },
    { topic, partition: 2, logStart: 0, end: 0 },
  ]);
});

test('a topic whose partitions have no leader yet (just created): watermarks wait for the leaders, then answer', async () => {
  // The broker answers NOT_LEADER_FOR_PARTITION for a moment about a new topic's partitions, as it does
  // about any partition while a broker restarts; kafkajs' admin gives up on it at once.
  const topic = uniqueName('src-new');
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions: 8 }], waitForLeaders: false });
  } finally {
    await admin.disconnect();
  }
  const logger = createMemoryLogger();
  const fresh = createKafkaSource(kafka, { groupPrefix: uniqueName('kbd-test'), logger });
  const marks = await fresh.watermarks([topic]);
  expect(marks.map((m) => [m.partition, m.logStart, m.end])).toEqual(
    Array.from({ length: 8 }, (_, partition) => [partition, 0, 0]),
  );
  console.log(`new topic: watermarks after ${logger.lines.length} leader-moving answer(s)`);
});

test('reads exactly the leased partitions from exactly the given offsets', async () => {
  const topic = uniqueName('src');
  await createTopic(topic, 3);
  await produce(
    topic,
    Array.from({ length: 30 }, (_, i) => ({ partition: i % 3, value: JSON.stringify({ i }), key: `k${i}` })),
  );
  // Partition 0 from offset 4, partition 2 from offset 7; partition 1 is not ours.
  const reader = await source.open([
    { topic, partition: 0, offset: 4 },
    { topic, partition: 2, offset: 7 },
  ]);
  readers.push(reader);
  const batches = await readUntil(reader, (bs) => {
    const got = bs.flatMap((b) => b.records);
    return (
      got.filter((r) => r.partition === 0).length >= 6 && got.filter((r) => r.partition === 2).length >= 3
    );
  });
  const records = batches.flatMap((b) => b.records);
  expect(records.filter((r) => r.partition === 0).map((r) => r.offset)).toEqual([4, 5, 6, 7, 8, 9]);
  expect(records.filter((r) => r.partition === 2).map((r) => r.offset)).toEqual([7, 8, 9]);
  expect(records.some((r) => r.partition === 1)).toBe(false);
  const first = records.find((r) => r.partition === 0 && r.offset === 4)!;
  expect(JSON.parse(first.value!.toString())).toEqual({ i: 12 });
  expect(first.key!.toString()).toBe('k12');
  for (const b of batches) expect(b.nextOffset).toBe(b.records[b.records.length - 1]!.offset + 1);

  // Kafka's own committed offsets are not touched: the group is gone after close.
  await reader.close();
  const admin = kafka.admin();
  await admin.connect();
  const groups = (await admin.listGroups()).groups.map((g) => g.groupId);
  await admin.disconnect();
  expect(groups.filter((g) => g.startsWith('kbd-test'))).toEqual([]);
});

test("a fetch brings up to fetchBytesPerPartition of a partition (kafkajs's own limit is 1 MiB)", async () => {
  // 1,800 records of ~1 KB, produced in requests of ~512 KB: kafkajs's default fetch stops after 1 MiB
  // of them, the drain's (2 MiB a partition) brings them all, so a first batch can be a whole batch.
  const topic = uniqueName('src-fetch');
  await createTopic(topic, 1);
  const padding = 'x'.repeat(1_000);
  await produce(
    topic,
    Array.from({ length: 1_800 }, (_, i) => ({ partition: 0, value: `{"i":${i},"p":"${padding}"}` })),
  );
  const firstFetch = async (fetchBytesPerPartition?: number) => {
    const reader = await createKafkaSource(kafka, {
      groupPrefix: uniqueName('kbd-test'),
      logger: createMemoryLogger(),
      ...(fetchBytesPerPartition === undefined ? {} : { fetchBytesPerPartition }),
    }).open([{ topic, partition: 0, offset: 0 }]);
    readers.push(reader);
    const batch = await reader.next(AbortSignal.timeout(30_000));
    await reader.close();
    return batch?.records.length ?? 0;
  };
  const byDefault = await firstFetch();
  expect(byDefault).toBeGreaterThan(0);
  expect(byDefault).toBeLessThanOrEqual(1_100);
  expect(await firstFetch(fetchBytesFor(5 * 1024 * 1024))).toBe(1_800);
});

test('close while the consumer waits on backpressure returns promptly', async () => {
  const topic = uniqueName('src');
  await createTopic(topic, 1);
  await produce(
    topic,
    Array.from({ length: 2000 }, (_, i) => ({ partition: 0, value: `{"i":${i}}` })),
  );
  const reader = await source.open([{ topic, partition: 0, offset: 0 }]);
  await reader.next(AbortSignal.timeout(30_000));
  const started = Date.now();
  await reader.close();
  expect(Date.now() - started).toBeLessThan(10_000);
});

test('with a transaction open, the end is the last stable offset (what the reader can reach), not the high watermark', async () => {
  const topic = uniqueName('src');
  await createTopic(topic, 1);
  await produce(topic, [{ partition: 0, value: '{"before":1}' }]);
  const producer = kafka.producer({
    transactionalId: uniqueName('tx'),
    maxInFlightRequests: 1,
    idempotent: true,
  });
  await producer.connect();
  try {
    const transaction = await producer.transaction();
    await transaction.send({
      topic,
      messages: [0, 1, 2].map((i) => ({ partition: 0, value: `{"tx":${i}}` })),
    });
    // The open transaction's records are written (high watermark 4) but not readable past offset 1: a
    // run that waited for the high watermark would wait until its budget. (kafkajs lists read_committed.)
    expect(await source.watermarks([topic])).toEqual([{ topic, partition: 0, logStart: 0, end: 1 }]);
    await transaction.commit();
    // Committed: the end moves past the records and the commit marker. The coordinator writes the marker
    // after EndTxn has answered (Kafka completes a commit in two phases), so the end moves a moment later.
    const deadline = Date.now() + 15_000;
    let watermarks = await source.watermarks([topic]);
    while (watermarks[0]?.end !== 5 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      watermarks = await source.watermarks([topic]);
    }
    expect(watermarks).toEqual([{ topic, partition: 0, logStart: 0, end: 5 }]);
  } finally {
    await producer.disconnect();
  }
});
