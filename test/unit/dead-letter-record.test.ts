/**
 * A dead letter gives back the record as the drain saw it (#64): its key and its headers, in Kafka's order,
 * repeated names and bytes kept, so that a replayed row equals, column by column, the row a clean run makes
 * (transform reading the headers, `_kafka_headers`, `_kafka_key_text`); what Pub/Sub's attributes cannot
 * carry is refused with its reason, never replayed with less.
 */
import { describe, expect, test } from 'vitest';
import { recordOf } from '../../functions/dead-letters/letter-record.js';
import { deadLetterMessage } from '../../functions/dead-letters/pubsub-dead-letters.js';
import type { KafkaRecord } from '../../functions/kernel/records.js';
import { rowOf } from '../../functions/records/classify.js';
import type { RowShape } from '../../functions/records/records.js';
import { createTransform } from '../../functions/records/transform.js';

const context = { pipeline: 'p', execution: 'e' };

function record(over: Partial<KafkaRecord> = {}): KafkaRecord {
  return {
    topic: 'orders',
    partition: 2,
    offset: 41,
    timestamp: 1_700_000_000_123,
    key: Buffer.from('order-7'),
    value: Buffer.from(JSON.stringify({ id: 'a', n: 3 })),
    // As the Kafka source gives them: by name (repeated names joined), and exactly.
    headers: { source: 'web', trace: 'x,y', bin: '\u0000\u00ff' },
    rawHeaders: [
      { key: 'source', value: Buffer.from('web') },
      { key: 'trace', value: Buffer.from('x') },
      { key: 'trace', value: Buffer.from('y') },
      { key: 'bin', value: Buffer.from([0, 0xff]) },
    ],
    ...over,
  };
}

/** Through Pub/Sub and back: the letter's data and attributes, as a subscriber pulls them. */
function throughLetter(original: KafkaRecord) {
  const { data, attributes } = deadLetterMessage(
    { record: original, kind: 'rule', message: 'n is odd' },
    context,
  );
  return recordOf({ data, attributes });
}

describe('a dead letter gives back its record', () => {
  test('key and headers exactly: order, repeated names, bytes, a null value', () => {
    const original = record({
      rawHeaders: [...record().rawHeaders!, { key: 'empty', value: null }],
      headers: { ...record().headers, empty: 'null' },
    });
    const back = throughLetter(original) as KafkaRecord;
    expect(back.key).toEqual(original.key);
    expect(back.rawHeaders).toEqual(original.rawHeaders);
    expect(back.headers).toEqual({
      source: 'web',
      trace: 'x,y',
      bin: Buffer.from([0, 0xff]).toString(),
      empty: 'null',
    });
    expect(back).toMatchObject({ topic: 'orders', partition: 2, offset: 41, timestamp: 1_700_000_000_123 });
    expect(back.value).toEqual(original.value);
  });

  test('no key, no headers', () => {
    const back = throughLetter(record({ key: null, headers: {}, rawHeaders: [] })) as KafkaRecord;
    expect(back.key).toBeNull();
    expect(back.rawHeaders).toEqual([]);
    expect(back.headers).toEqual({});
  });

  test('the replayed row equals the clean run’s, but for _ingested_at: header-reading transform, metadata columns', async () => {
    const transform = createTransform((value, ctx) => ({
      ...(value as object),
      note: `${ctx.headers.source}/${ctx.headers.trace}/${ctx.keyText}`,
    }));
    const shape: RowShape = {
      fields: [
        { name: 'id', type: 'STRING', mode: 'REQUIRED' },
        { name: 'n', type: 'INT64', mode: 'NULLABLE' },
        { name: 'note', type: 'STRING', mode: 'NULLABLE' },
      ],
      unknownFields: 'reject',
      metadata: { headers: true, keyText: true },
    };
    const original = record();
    const clean = await rowOf(original, new Date(0), { shape, transform });
    const replayed = await rowOf(throughLetter(original) as KafkaRecord, new Date(5_000), {
      shape,
      transform,
    });
    const columns = (made: typeof clean) => {
      const { _ingested_at, ...rest } = (made as { row: Record<string, unknown> }).row;
      return rest;
    };
    expect(columns(clean)).toMatchObject({ note: 'web/x,y/order-7' });
    expect(columns(replayed)).toEqual(columns(clean));
  });

  test('a key or headers too large for an attribute: refused with the reason, never replayed with less', () => {
    const longKey = throughLetter(record({ key: Buffer.alloc(2_000, 1) }));
    expect(longKey).toMatch(/its key was too large for a Pub\/Sub attribute/);
    const big = Buffer.alloc(900, 2);
    const manyHeaders = throughLetter(
      record({
        headers: { a: big.toString(), b: big.toString() },
        rawHeaders: [
          { key: 'a', value: big },
          { key: 'b', value: big },
        ],
      }),
    );
    expect(manyHeaders).toMatch(/its headers were too large for a Pub\/Sub attribute \(\d+ bytes/);
  });

  test('a letter of an older drain (header_<name> attributes only) gives its headers back as text', () => {
    const { data, attributes } = deadLetterMessage({ record: record(), kind: 'rule', message: 'x' }, context);
    delete attributes.kafka_headers;
    const back = recordOf({ data, attributes }) as KafkaRecord;
    expect(back.headers).toMatchObject({ source: 'web', trace: 'x,y' });
  });

  test('a kafka_headers attribute not written by the drain is a reason, not a crash', () => {
    const { data, attributes } = deadLetterMessage({ record: record(), kind: 'rule', message: 'x' }, context);
    for (const bad of ['{', '[["a"]]', '[[1, "eA=="]]', '{"a": "b"}']) {
      expect(recordOf({ data, attributes: { ...attributes, kafka_headers: bad } })).toMatch(
        /kafka_headers attribute is not a list/,
      );
    }
  });
});
