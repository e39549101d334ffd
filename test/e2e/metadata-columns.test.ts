/**
 * Optional metadata columns (#14): `_kafka_headers` (every header in order, repeated keys kept, values as
 * bytes) and `_kafka_key_text` (the key as UTF-8 where it is text), switched on per pipeline, in each
 * exactly-once mode; headers written by kcat (librdkafka) and by kafkajs, read back with the BigQuery client.
 */
import { describe, expect, test } from 'vitest';
import { createPipeline, e2eClients, runJob } from '../support/job.js';
import { produce } from '../support/kafka.js';
import { run } from '../support/producers.js';
import { stackEnv } from '../support/stack.js';

const clients = await e2eClients();

describe.each(['storage-write', 'merge'])('%s mode', (mode) => {
  test('headers and the key as text land in their columns; off by default, they are not there at all', async () => {
    const pipeline = await createPipeline(clients, 1, {
      BQ_WRITE_MODE: mode,
      BQ_HEADERS_COLUMN: 'true',
      BQ_KEY_TEXT_COLUMN: 'true',
    });
    // kcat: a text key and headers, one key repeated.
    await run(
      'kcat',
      [
        ...['-b', stackEnv().KAFKA_BROKERS, '-P', '-t', pipeline.topic, '-p', '0', '-K', '\t'],
        ...['-H', 'trace=abc', '-H', 'tag=one', '-H', 'tag=two'],
      ],
      'order-1\t{"id":"k1","n":1}\n',
    );
    // kafkajs: a binary key (not UTF-8) and a binary header value; then a record with neither.
    await produce(pipeline.topic, [
      {
        partition: 0,
        key: Buffer.from([0xff, 0xfe, 0x00]),
        headers: { bin: Buffer.from([0x00, 0xff]) },
        value: JSON.stringify({ id: 'k2', n: 2 }),
      },
      { partition: 0, value: JSON.stringify({ id: 'k3', n: 3 }) },
    ]);
    const drained = await runJob(pipeline.env);
    expect(drained.summary).toMatchObject({ stopReason: 'caught_up', rowsWritten: 3 });

    const [rows] = await clients.bigquery.query({
      query: `SELECT id, _kafka_key_text AS key_text, TO_HEX(_kafka_key) AS key_hex,
                ARRAY(SELECT AS STRUCT h.key AS key, TO_HEX(h.value) AS value FROM UNNEST(_kafka_headers) AS h) AS headers
              FROM \`${pipeline.dataset}.events\` ORDER BY _kafka_offset`,
    });
    const hex = (text: string) => Buffer.from(text).toString('hex');
    expect(rows).toEqual([
      {
        id: 'k1',
        key_text: 'order-1',
        key_hex: hex('order-1'),
        headers: [
          { key: 'trace', value: hex('abc') },
          { key: 'tag', value: hex('one') },
          { key: 'tag', value: hex('two') },
        ],
      },
      { id: 'k2', key_text: null, key_hex: 'fffe00', headers: [{ key: 'bin', value: '00ff' }] },
      { id: 'k3', key_text: null, key_hex: null, headers: [] },
    ]);

    // A pipeline without them has neither column.
    const plain = await createPipeline(clients, 1, { BQ_WRITE_MODE: mode });
    await produce(plain.topic, [{ partition: 0, value: JSON.stringify({ id: 'p', n: 1 }) }]);
    expect((await runJob(plain.env)).code).toBe(0);
    const [metadata] = await clients.bigquery.dataset(plain.dataset).table('events').getMetadata();
    const names = (metadata.schema.fields as { name: string }[]).map((f) => f.name);
    expect(names).not.toContain('_kafka_headers');
    expect(names).not.toContain('_kafka_key_text');
  });
});
