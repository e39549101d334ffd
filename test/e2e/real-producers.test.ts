/**
 * What real producers write, read by the real job: every compression codec (from kcat and Kafka's own
 * Java producer, never kafkajs), codecs mixed in one partition, a Java transactional producer that aborts
 * some of its transactions, and tombstones under both policies.
 */
import { describe, expect, test } from 'vitest';
import {
  checkpointsOf,
  createPipeline,
  deadLetterOffsets,
  e2eClients,
  runJob,
  runVerify,
  tableOffsets,
} from '../support/job.js';
import { createTopic, produce } from '../support/kafka.js';
import {
  batchCodecs,
  type Codec,
  javaProduce,
  kafkaTool,
  kcatOffsets,
  kcatProduce,
  kcatProduceKeyed,
} from '../support/producers.js';
import { stackEnv } from '../support/stack.js';

const clients = await e2eClients();

const records = (from: number, count: number, tag: string) =>
  Array.from({ length: count }, (_, i) => JSON.stringify({ id: `${tag}-${from + i}`, n: from + i }));

async function tableIds(dataset: string, table: string): Promise<string[]> {
  const [rows] = await clients.bigquery.query({ query: `SELECT id FROM \`${dataset}.${table}\`` });
  return rows.map((r: { id: string }) => r.id).sort();
}

// Every codec from both producers in one partition, each batch's codec read back from Kafka's own log dump
// (one test: five more, a codec each, cost the suite 10 JVMs and 50 s and proved nothing this one does not).
describe('compression codecs, written by producers no one here wrote', () => {
  test('every codec mixed in one partition, from both producers, in one run', async () => {
    const pipeline = await createPipeline(clients, 1);
    const codecs: Codec[] = ['zstd', 'none', 'lz4', 'gzip', 'snappy'];
    let next = 0;
    for (const codec of codecs) {
      await kcatProduce(pipeline.topic, 0, records(next, 40, `kcat-${codec}`), codec);
      next += 40;
      await javaProduce(pipeline.topic, records(next, 40, `java-${codec}`), codec);
      next += 40;
    }
    expect(new Set(await batchCodecs(pipeline.topic, 0))).toEqual(new Set(codecs));

    const run = await runJob(pipeline.env);
    expect(run.code).toBe(0);
    expect(run.summary).toMatchObject({ stopReason: 'caught_up', rowsWritten: next, deadLettered: 0 });
    expect((await tableOffsets(clients, pipeline)).get(0)).toEqual([...Array(next).keys()]);
    // Each producer's records of each codec, their values exact.
    expect(await tableIds(pipeline.dataset, pipeline.table)).toEqual(
      Array.from(
        { length: next },
        (_, i) => `${i % 80 < 40 ? 'kcat' : 'java'}-${codecs[Math.floor(i / 80)]}-${i}`,
      ).sort(),
    );
    expect((await runVerify(pipeline.env)).code).toBe(0);
  });
});

test('a Java transactional producer that aborts some transactions: only committed records land, the checkpoint passes every marker and aborted range', async () => {
  // Kafka's own TransactionalMessageCopier copies an input partition into our topic in transactions of
  // 10 and aborts about one in three at random, re-copying the aborted ones in a later transaction. An
  // abort may come before the producer has sent the transaction's records (they are then never written):
  // a copy with no aborted record in the log proves nothing, and is made again into a new pipeline.
  const copied = async () => {
    const pipeline = await createPipeline(clients, 1, { BQ_WRITE_MODE: 'merge' });
    const input = `${pipeline.topic}-input`;
    await createTopic(input, 1);
    await produce(
      input,
      records(0, 200, 'tx').map((value) => ({ partition: 0, value })),
    );
    await kafkaTool('org.apache.kafka.tools.TransactionalMessageCopier', [
      '--broker-list',
      stackEnv().KAFKA_BROKERS,
      '--input-topic',
      input,
      '--input-partition',
      '0',
      '--output-topic',
      pipeline.topic,
      '--transactional-id',
      `${pipeline.id}-copier`,
      '--consumer-group',
      `${pipeline.id}-copier`,
      '--transaction-size',
      '10',
      '--max-messages',
      '200',
      '--enable-random-aborts',
    ]);
    // The truth, from librdkafka: what a read_committed reader sees, and every record written at all.
    const committed = await kcatOffsets(pipeline.topic, 0, 'read_committed');
    const written = await kcatOffsets(pipeline.topic, 0, 'read_uncommitted');
    return { pipeline, committed, aborted: written.filter((o) => !committed.includes(o)) };
  };
  let copy = await copied();
  for (let attempt = 1; attempt < 3 && copy.aborted.length === 0; attempt++) copy = await copied();
  const { pipeline, committed, aborted } = copy;
  expect(committed).toHaveLength(200);
  expect(aborted.length).toBeGreaterThan(0); // else the test proved nothing: rerun

  const run = await runJob(pipeline.env);
  expect(run.code).toBe(0);
  expect(run.summary).toMatchObject({ stopReason: 'caught_up', rowsWritten: 200, deadLettered: 0 });
  expect((await tableOffsets(clients, pipeline)).get(0)).toEqual(committed);
  expect(await tableIds(pipeline.dataset, pipeline.table)).toEqual(
    records(0, 200, 'tx')
      .map((r) => JSON.parse(r).id)
      .sort(),
  );
  expect((await deadLetterOffsets(clients, pipeline)).messages).toHaveLength(0);
  // Past the last commit marker: the end of the partition.
  const mark = (await listEnd(pipeline.topic))[0]!;
  expect((await checkpointsOf(clients, pipeline)).get(0)).toBe(mark);
  const verify = await runVerify(pipeline.env);
  expect(verify.code).toBe(0);
  // Offsets with no delivered record: the aborted records and one control marker per transaction.
  expect(verify.verdicts[0]).toMatchObject({ ok: true, ledgerRows: 200, skipped: mark - 200 });
  expect(mark - 200).toBeGreaterThan(aborted.length);
});

async function listEnd(topic: string): Promise<number[]> {
  const out = await kafkaTool('org.apache.kafka.tools.GetOffsetShell', [
    '--bootstrap-server',
    stackEnv().KAFKA_BROKERS,
    '--topic',
    topic,
  ]);
  return out
    .trim()
    .split('\n')
    .map((line) => Number(line.split(':')[2]));
}

describe('tombstones (null values, as compacted topics carry them)', () => {
  const keyed = [
    { key: 'a', value: JSON.stringify({ id: 'a', n: 1 }) },
    { key: 'a', value: null },
    { key: 'b', value: JSON.stringify({ id: 'b', n: 2 }) },
    { key: 'c', value: null },
    { key: 'd', value: JSON.stringify({ id: 'd', n: 4 }) },
  ];

  test('TOMBSTONES unset (skip): counted in the summary and the ledger, not written, every offset accounted for', async () => {
    const pipeline = await createPipeline(clients, 1);
    await kcatProduceKeyed(pipeline.topic, 0, keyed);
    const run = await runJob(pipeline.env);
    expect(run.summary).toMatchObject({ rowsWritten: 3, deadLettered: 0, tombstonesSkipped: 2 });
    expect(run.summary.partitions[0]).toMatchObject({ tombstonesSkipped: 2 });
    expect((await tableOffsets(clients, pipeline)).get(0)).toEqual([0, 2, 4]);
    expect((await checkpointsOf(clients, pipeline)).get(0)).toBe(5);
    const verify = await runVerify(pipeline.env);
    expect(verify.code).toBe(0);
    expect(verify.verdicts[0]).toMatchObject({ ok: true, tombstones: 2, skipped: 0, deadLetters: 0 });
  });

  test('TOMBSTONES=dead-letter: each one a dead letter naming it, with its key', async () => {
    const pipeline = await createPipeline(clients, 1, { TOMBSTONES: 'dead-letter' });
    await kcatProduceKeyed(pipeline.topic, 0, keyed);
    const run = await runJob(pipeline.env);
    expect(run.summary).toMatchObject({ rowsWritten: 3, deadLettered: 2, tombstonesSkipped: 0 });
    const messages = (await deadLetterOffsets(clients, pipeline)).messages.sort(
      (a, b) => Number(a.attributes.source_offset) - Number(b.attributes.source_offset),
    );
    expect(messages.map((m) => [m.attributes.source_offset, m.attributes.error_kind])).toEqual([
      ['1', 'decode'],
      ['3', 'decode'],
    ]);
    expect(messages.map((m) => Buffer.from(m.attributes.key_base64!, 'base64').toString())).toEqual([
      'a',
      'c',
    ]);
    expect(messages[0]!.attributes.error_message).toContain('tombstone');
  });
});
