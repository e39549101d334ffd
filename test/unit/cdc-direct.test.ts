/**
 * cdc mode's changes written straight from their bytes (the compiled paths of #42, cdc-sink.ts's
 * `startEncoding`) against the general path (classifyChanges, then the cdc table's message): every record
 * the direct path takes gets the general path's message byte for byte, change columns included (a Debezium
 * delete's: its key); a record whose primary key is null or missing, or that the path is not sure of, is
 * left to the general path.
 * Nothing here reaches a service: encoding is pure.
 */
import avro from 'avsc';
import { describe, expect, test } from 'vitest';
import { createRawAvroFormat } from '../../functions/formats/avro/index.js';
import { compileAvro } from '../../functions/formats/avro/schema.js';
import type { ValueFormat } from '../../functions/formats/value-format.js';
import type { KafkaRecord } from '../../functions/kernel/records.js';
import { type ChangePolicy, changeTypeColumn, classifyChanges } from '../../functions/records/changes.js';
import type { RowShape } from '../../functions/records/records.js';
import { type SchemaField, targetTableSchema } from '../../functions/schema/table-schema.js';
import { cdcMessage, debeziumAvro, encodingCdcSink } from '../support/cdc-encoding.js';
import { pick, random } from '../support/differential.js';

const ingestedAt = new Date(1733300001000);

function recordOf(value: Buffer | null, offset: number): KafkaRecord {
  return {
    topic: 't',
    partition: 0,
    offset,
    timestamp: 1733300000123,
    key: Buffer.from('k'),
    value,
    headers: {},
  };
}

/**
 * Each record through the direct path and the general one: where the direct path takes it, the same
 * message as the general row's, change type included. Returns how many each path took (and of the
 * direct path's, how many deletes).
 */
async function compare(
  records: readonly KafkaRecord[],
  shape: RowShape,
  format: ValueFormat | undefined,
  primaryKey: readonly string[],
  changes: ChangePolicy['format'] = 'upsert',
) {
  const target = targetTableSchema(shape.fields, shape.metadata!);
  const sink = encodingCdcSink(target);
  const encode = cdcMessage(target).encode;
  const policy: ChangePolicy = {
    format: changes,
    primaryKey,
    shape,
    ...(format === undefined ? {} : { valueFormat: format }),
  };
  const tally = { direct: 0, general: 0, generalUpserts: 0, directDeletes: 0 };
  for (const record of records) {
    const encoding = await sink.startEncoding(shape, format, primaryKey);
    if (encoding === undefined) throw new Error('no direct path for this route');
    const took = encoding.addRecord(record, ingestedAt);
    const general = await classifyChanges([record], policy, ingestedAt);
    if (!took) {
      tally.general++;
      if (general.rows[0]?.row[changeTypeColumn] === 'UPSERT') tally.generalUpserts++;
      continue;
    }
    tally.direct++;
    const [encoded] = encoding.finish();
    expect(general.letters, `offset ${record.offset}: the general path refuses it`).toEqual([]);
    const row = general.rows[0]!.row;
    if (row[changeTypeColumn] === 'DELETE') tally.directDeletes++;
    else expect(row[changeTypeColumn]).toBe('UPSERT');
    expect(
      Buffer.from(encoded!.bytes).equals(Buffer.from(encode.many([row])[0]!)),
      `offset ${record.offset}`,
    ).toBe(true);
  }
  return tally;
}

describe('cdc changes straight from their bytes', () => {
  test('JSON: 1,500 randomized records, the general message wherever the direct path writes', async () => {
    const fields: SchemaField[] = [
      { name: 'id', type: 'STRING' },
      { name: 'n', type: 'INT64' },
      { name: 'price', type: 'NUMERIC' },
      { name: 'seen', type: 'TIMESTAMP' },
      { name: 'tags', type: 'STRING', mode: 'REPEATED' },
      { name: 'note', type: 'STRING', mode: 'REQUIRED' },
    ];
    const shape: RowShape = { fields, unknownFields: 'reject', metadata: { headers: false, keyText: true } };
    const next = random(7);
    const values: Record<string, readonly unknown[]> = {
      id: ['a', 'ü', '', null, 5, undefined, 'x'.repeat(300)],
      n: [0, -1, 9007199254740991, '12', 1.5, null, undefined, 'x'],
      price: ['1.10', '-0.5', 12, '1e3', null, 'x'],
      seen: ['2024-12-04T08:13:20.123456Z', '2024-12-04 08:13:20Z', '2024-12-04T09:13:20+01:00', 0, null],
      tags: [[], ['a', 'b'], null, ['a', null], 'a'],
      note: ['n', '', null, undefined],
    };
    const records: KafkaRecord[] = [];
    for (let i = 0; i < 1500; i++) {
      const value: Record<string, unknown> = {};
      for (const [name, choices] of Object.entries(values)) {
        // Mostly the first (usual) values; one field in eight anything on its list.
        const v = next() < 7 / 8 ? choices[Math.floor(next() * 2)] : pick(next, choices);
        if (v !== undefined) value[name] = v;
      }
      if (next() < 0.03) value.extra = 1; // a field the table lacks: the general path's rules
      const text =
        next() < 0.01 ? pick(next, ['[1]', '5', 'not json', '{"id":"a",}']) : JSON.stringify(value);
      records.push(recordOf(Buffer.from(text), i));
    }
    const tally = await compare(records, shape, undefined, ['id']);
    expect(tally.direct).toBeGreaterThan(500);
    expect(tally.general).toBeGreaterThan(100);
  });

  test('Avro: the compiled path, a null key left to the general path (a dead letter there)', async () => {
    const schema = {
      type: 'record',
      name: 'Row',
      fields: [
        { name: 'id', type: ['null', 'string'], default: null },
        { name: 'n', type: 'long' },
        { name: 'u', type: ['null', 'string', 'long'], default: null },
      ],
    };
    const text = JSON.stringify(schema);
    const compiled = compileAvro(text);
    const format: ValueFormat = {
      ...createRawAvroFormat(text),
      directRows(target) {
        const rows = compiled.rows?.(target);
        return (w, record) => rows !== undefined && record.value !== null && rows(w, record.value, 0);
      },
    };
    const shape: RowShape = {
      fields: compiled.fields,
      unknownFields: 'reject',
      metadata: { headers: false, keyText: true },
    };
    const zigzag = (n: number) => {
      const out: number[] = [];
      let v = n >= 0 ? n * 2 : -n * 2 - 1;
      while (v >= 0x80) {
        out.push((v & 0x7f) | 0x80);
        v = Math.floor(v / 128);
      }
      out.push(v);
      return Buffer.from(out);
    };
    const str = (s: string) => Buffer.concat([zigzag(Buffer.byteLength(s)), Buffer.from(s)]);
    const payloads = [
      Buffer.concat([zigzag(1), str('a'), zigzag(7), zigzag(1), str('x')]),
      Buffer.concat([zigzag(1), str('ü'), zigzag(-70000), zigzag(2), zigzag(-3)]),
      Buffer.concat([zigzag(1), str(''), zigzag(0), zigzag(0)]),
      Buffer.concat([zigzag(0), zigzag(5), zigzag(0)]), // a null key: the general path's dead letter
      Buffer.concat([zigzag(1), str('b'), zigzag(1)]), // cut short
    ];
    const records = payloads.map((p, i) => recordOf(p, 1000 + i));
    const tally = await compare(records, shape, format, ['id']);
    expect(tally).toEqual({ direct: 3, general: 2, generalUpserts: 0, directDeletes: 0 });
    const general = await classifyChanges(
      [records[3]!],
      { format: 'upsert', primaryKey: ['id'], shape, valueFormat: format },
      ingestedAt,
    );
    expect(general.letters.map((l) => l.message)).toEqual(['primary key column(s) id missing']);
  });

  test('Debezium envelopes in Avro: 2,000 randomized events, the general message wherever the direct path writes', async () => {
    // Debezium's PostgreSQL connector through Confluent's Avro converter: the row's record defined in
    // `before` and named in `after`, Kafka Connect's logical types, the source block, the transaction.
    const ns = 'dbserver1.inventory.orders';
    const connect = (name: string, type: string, extra: Record<string, unknown> = {}) => ({
      type,
      'connect.version': 1,
      'connect.name': name,
      ...extra,
    });
    const value = {
      type: 'record',
      name: 'Value',
      namespace: ns,
      fields: [
        { name: 'id', type: 'int' },
        { name: 'note', type: ['null', 'string'], default: null },
        {
          name: 'price',
          type: {
            ...connect('org.apache.kafka.connect.data.Decimal', 'bytes', {
              'connect.parameters': { scale: '2', 'connect.decimal.precision': '10' },
            }),
            logicalType: 'decimal',
            precision: 10,
            scale: 2,
          },
        },
        { name: 'placed', type: ['null', connect('io.debezium.time.MicroTimestamp', 'long')], default: null },
        { name: 'at', type: ['null', connect('io.debezium.time.MicroTime', 'long')], default: null },
        { name: 'qty', type: ['null', 'long'], default: null },
      ],
      'connect.name': `${ns}.Value`,
    };
    const source = {
      type: 'record',
      name: 'Source',
      namespace: 'io.debezium.connector.postgresql',
      fields: [
        { name: 'version', type: 'string' },
        { name: 'connector', type: 'string' },
        { name: 'name', type: 'string' },
        { name: 'ts_ms', type: 'long' },
        {
          name: 'snapshot',
          type: [
            connect('io.debezium.data.Enum', 'string', {
              'connect.parameters': { allowed: 'true,last,false,incremental' },
              'connect.default': 'false',
            }),
            'null',
          ],
          default: 'false',
        },
        { name: 'db', type: 'string' },
        { name: 'sequence', type: ['null', 'string'], default: null },
        { name: 'schema', type: 'string' },
        { name: 'table', type: 'string' },
        { name: 'txId', type: ['null', 'long'], default: null },
        { name: 'lsn', type: ['null', 'long'], default: null },
        { name: 'xmin', type: ['null', 'long'], default: null },
      ],
      'connect.name': 'io.debezium.connector.postgresql.Source',
    };
    const envelope = {
      type: 'record',
      name: 'Envelope',
      namespace: ns,
      fields: [
        { name: 'before', type: ['null', value], default: null },
        // Named by its short name in the envelope's namespace, as the converter writes it.
        { name: 'after', type: ['null', 'Value'], default: null },
        { name: 'source', type: source },
        { name: 'op', type: 'string' },
        { name: 'ts_ms', type: ['null', 'long'], default: null },
        {
          name: 'transaction',
          type: [
            'null',
            {
              type: 'record',
              name: 'block',
              namespace: 'event',
              fields: [
                { name: 'id', type: 'string' },
                { name: 'total_order', type: 'long' },
                { name: 'data_collection_order', type: 'long' },
              ],
            },
          ],
          default: null,
        },
      ],
    };
    const { format, shape } = debeziumAvro(JSON.stringify(envelope));
    // Encoded by avsc, as Confluent's serializers write Avro (the wire format's header aside).
    const type = avro.Type.forSchema(envelope as avro.Schema, { wrapUnions: true });
    const next = random(42);
    const usual = () => next() < 0.9;
    const row = () => ({
      id: usual() ? Math.floor(next() * 1e6) : pick(next, [0, -1, 2 ** 31 - 1, -(2 ** 31)]),
      note: usual() ? { string: 'ok' } : pick(next, [null, { string: '' }, { string: 'ü'.repeat(500) }]),
      price: usual()
        ? Buffer.from([0x30, 0x39])
        : pick(next, [Buffer.alloc(0), Buffer.from([0xff]), Buffer.from('7fffffffff', 'hex')]),
      placed: usual()
        ? { long: 1733300000123456 }
        : pick(next, [null, { long: 0 }, { long: -(2 ** 52) }, { long: 2 ** 52 }]),
      at: usual()
        ? { long: 3600000000 }
        : pick(next, [null, { long: 0 }, { long: -1 }, { long: 86400000000 }]),
      qty: usual() ? { long: 3 } : pick(next, [null, { long: 2 ** 52 + 1 }, { long: -(2 ** 52) }]),
    });
    const source0 = {
      version: '2.7.3.Final',
      connector: 'postgresql',
      name: 'dbserver1',
      ts_ms: 1733300000000,
      snapshot: null,
      db: 'inventory',
      sequence: null,
      schema: 'inventory',
      table: 'orders',
      txId: null,
      lsn: null,
      xmin: null,
    };
    const records: KafkaRecord[] = [];
    for (let i = 0; i < 2000; i++) {
      const op = usual() ? pick(next, ['c', 'r', 'u', 'd']) : pick(next, ['d', 't', 'm', 'cu', '']);
      // A delete usually has its `before` row and no `after`, any other change the other way round.
      const deleted = op === 'd' ? usual() : !usual();
      const event = {
        before: (deleted ? next() < 0.95 : next() < 0.1) ? { [`${ns}.Value`]: row() } : null,
        after: (deleted ? next() < 0.05 : next() < 0.95) ? { [`${ns}.Value`]: row() } : null,
        source: {
          version: '2.7.3.Final',
          connector: 'postgresql',
          name: 'dbserver1',
          ts_ms: 1733300000000 + i,
          snapshot: usual() ? { string: 'false' } : null,
          db: 'inventory',
          sequence: usual() ? { string: `["${i}","${i + 1}"]` } : null,
          schema: 'inventory',
          table: 'orders',
          txId: usual() ? { long: 700 + i } : null,
          lsn: { long: 34000000 + i },
          xmin: null,
        },
        op,
        ts_ms: usual() ? { long: 1733300000999 } : null,
        transaction:
          next() < 0.8 ? null : { 'event.block': { id: `t${i}`, total_order: i, data_collection_order: 1 } },
      };
      let payload = type.toBuffer(event);
      const damage = next();
      if (damage < 0.01)
        payload = payload.subarray(0, Math.floor(next() * payload.length)); // cut short
      else if (damage < 0.02) payload = Buffer.concat([payload, Buffer.from([0])]); // a byte too many
      records.push(recordOf(payload, 5000 + i));
    }
    const tally = await compare(records, shape, format, ['id'], 'debezium');
    expect(tally.direct).toBeGreaterThan(1000);
    // Deletes, events with a `before` row, cut values: the general path's, as upserts or not.
    expect(tally.general).toBeGreaterThan(300);
    expect(tally.generalUpserts).toBeGreaterThan(50);
    // An update with the row as it was: taken where the row's plans read its `before` as they would an
    // `after`; one they are not sure of (a time of day out of range) goes the general way, which judges
    // only `after` and upserts it.
    const plain = {
      id: 9,
      note: { string: 'ok' },
      price: Buffer.from([0x30, 0x39]),
      placed: { long: 1733300000123456 },
      at: { long: 3600000000 },
      qty: { long: 3 },
    };
    const update = (at: number) =>
      recordOf(
        type.toBuffer({
          before: { [`${ns}.Value`]: { ...plain, at: { long: at } } },
          after: { [`${ns}.Value`]: plain },
          source: { ...source0, ts_ms: 1 },
          op: 'u',
          ts_ms: null,
          transaction: null,
        }),
        9000 + at,
      );
    expect(await compare([update(5)], shape, format, ['id'], 'debezium')).toEqual({
      direct: 1,
      general: 0,
      generalUpserts: 0,
      directDeletes: 0,
    });
    expect(await compare([update(-1)], shape, format, ['id'], 'debezium')).toEqual({
      direct: 0,
      general: 1,
      generalUpserts: 1,
      directDeletes: 0,
    });
    // A delete: the key of its `before` row, taken where the row's plans read all of that row; one they
    // are not sure of goes the general way, which judges only the key and deletes it; one with an `after`
    // row too, or without `before`, goes the general way as well.
    const deletion = (at: number, rows: { before?: boolean; after?: boolean } = { before: true }) =>
      recordOf(
        type.toBuffer({
          before: rows.before ? { [`${ns}.Value`]: { ...plain, at: { long: at } } } : null,
          after: rows.after ? { [`${ns}.Value`]: plain } : null,
          source: { ...source0, ts_ms: 1 },
          op: 'd',
          ts_ms: null,
          transaction: null,
        }),
        9500 + at,
      );
    const generalOf = async (record: KafkaRecord) => {
      const { rows, letters } = await classifyChanges(
        [record],
        { format: 'debezium', primaryKey: ['id'], shape, valueFormat: format },
        ingestedAt,
      );
      return { types: rows.map((r) => r.row[changeTypeColumn]), letters: letters.map((l) => l.message) };
    };
    expect(await compare([deletion(5)], shape, format, ['id'], 'debezium')).toEqual({
      direct: 1,
      general: 0,
      generalUpserts: 0,
      directDeletes: 1,
    });
    for (const record of [deletion(-1), deletion(5, { before: true, after: true })]) {
      expect(await compare([record], shape, format, ['id'], 'debezium')).toEqual({
        direct: 0,
        general: 1,
        generalUpserts: 0,
        directDeletes: 0,
      });
      expect(await generalOf(record)).toEqual({ types: ['DELETE'], letters: [] });
    }
    const keyless = deletion(5, { after: true });
    expect((await compare([keyless], shape, format, ['id'], 'debezium')).direct).toBe(0);
    expect(await generalOf(keyless)).toEqual({
      types: [],
      letters: ['op "d" without a "before" row (the key of the deleted row)'],
    });
  });

  test('no direct path without a primary key, nor where the table lacks the metadata columns', async () => {
    const fields: SchemaField[] = [{ name: 'id', type: 'STRING' }];
    const shape: RowShape = { fields, unknownFields: 'reject', metadata: { headers: false, keyText: true } };
    const sink = encodingCdcSink(targetTableSchema(fields, shape.metadata!));
    expect(await sink.startEncoding(shape, undefined, [])).toBeUndefined();
    expect(await sink.startEncoding(shape, undefined, ['id'])).toBeDefined();
    expect(await encodingCdcSink(fields).startEncoding(shape, undefined, ['id'])).toBeUndefined();
  });
});
