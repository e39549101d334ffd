/**
 * Records at the size limits, end to end: the local broker and the test topic take records up to 12 MiB
 * (stack/stack.sh raises `message.max.bytes`), so a value just under what a BigQuery row can hold must
 * land as a row, and one just over it must become an `oversize` dead letter that says how big it was.
 */
import { createHash } from 'node:crypto';
import { expect, test } from 'vitest';
import { maxRecordBytes } from '../../functions/records/records.js';
import {
  createPipeline,
  deadLetterOffsets,
  e2eClients,
  runJob,
  runVerify,
  tableOffsets,
} from '../support/job.js';
import { produce, testKafka } from '../support/kafka.js';

const clients = await e2eClients();

/** A JSON record of exactly `bytes` bytes. */
function recordOf(id: string, bytes: number): string {
  const empty = JSON.stringify({ id, note: '' });
  return JSON.stringify({ id, note: 'x'.repeat(bytes - empty.length) });
}

test('a value just under the row limit lands as a row; one just over it is an oversize dead letter', async () => {
  const pipeline = await createPipeline(clients, 1);
  const admin = testKafka().admin();
  await admin.connect();
  try {
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: 2,
          name: pipeline.topic,
          configEntries: [{ name: 'max.message.bytes', value: String(12 * 1024 * 1024) }],
        },
      ],
    });
  } finally {
    await admin.disconnect();
  }
  const under = recordOf('under', maxRecordBytes - 100);
  const over = recordOf('over', maxRecordBytes + 512 * 1024);
  await produce(pipeline.topic, [{ partition: 0, value: JSON.stringify({ id: 'small' }) }]);
  await produce(pipeline.topic, [{ partition: 0, value: under }]);
  await produce(pipeline.topic, [{ partition: 0, value: over }]);
  await produce(pipeline.topic, [{ partition: 0, value: JSON.stringify({ id: 'after' }) }]);

  const run = await runJob(pipeline.env);
  expect(run.code).toBe(0);
  expect(run.summary).toMatchObject({ stopReason: 'caught_up', rowsWritten: 3, deadLettered: 1 });
  expect((await tableOffsets(clients, pipeline)).get(0)).toEqual([0, 1, 3]);
  const [rows] = await clients.bigquery.query({
    query: `SELECT LENGTH(note) AS n FROM \`${pipeline.dataset}.${pipeline.table}\` WHERE id = 'under'`,
  });
  expect(rows).toEqual([{ n: JSON.parse(under).note.length }]);

  const { messages } = await deadLetterOffsets(clients, pipeline);
  expect(messages).toHaveLength(1);
  const letter = messages[0]!;
  expect(letter.attributes).toMatchObject({
    source_offset: '2',
    error_kind: 'oversize',
    value_size: String(Buffer.byteLength(over)),
    value_sha256: createHash('sha256').update(over).digest('hex'),
  });
  // Pub/Sub takes 10 MB a message: the dead letter keeps the value's first 9 MiB.
  expect(letter.data.equals(Buffer.from(over).subarray(0, letter.data.length))).toBe(true);
  expect(letter.data.length).toBeLessThan(Buffer.byteLength(over));
  expect((await runVerify(pipeline.env)).code).toBe(0);
});
