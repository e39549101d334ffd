/**
 * cdc mode's record path alone, in this process: Debezium's PostgreSQL change events through Confluent's
 * Avro converter (the connector's customers envelope, test/fixtures/debezium), creates, updates and deletes
 * as a table's stream mostly carries them, each through the general path (decode the envelope, unwrap its
 * `after` or its `before`'s key, convert, validate, then the cdc table's message with its change columns)
 * and through the compiled one (the cdc sink's `startEncoding`: the bytes straight to the change's
 * message), rounds alternating, the median round standing. No Kafka, no BigQuery (#42).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import avro from 'avsc';
import type { KafkaRecord } from '../functions/kernel/records.js';
import { type ChangePolicy, classifyChanges } from '../functions/records/changes.js';
import { targetTableSchema } from '../functions/schema/table-schema.js';
import { cdcMessage, debeziumAvro, encodingCdcSink } from '../test/support/cdc-encoding.js';
import type { PathFigures } from './record-path.js';

const envelopeSchema = readFileSync(
  join(import.meta.dirname, '..', 'test', 'fixtures', 'debezium', 'customers-envelope.avsc'),
  'utf8',
);

/** A customer row as the connector writes it (every column set: decimals, times, JSON, a UUID). */
function customer(i: number) {
  return {
    id: i,
    name: `customer ${i}`,
    balance: Buffer.from([0x01, (i * 7) & 0xff, 0x39]),
    born: 7000 + (i % 15000),
    created: 1733300000123456 + i * 1000,
    seen_at: '2024-12-04T08:13:20.123456Z',
    alarm: 3600000000 + i,
    meta: `{"tier":"gold","visits":${i % 100},"tags":["a","b"]}`,
    uid: '0b6f9d2e-3c1a-4f57-9b8e-6d2a1c4e5f70',
    ratio: { scale: 3, value: Buffer.from([0x30, 0x39]) },
    active: i % 2 === 0,
  };
}

/**
 * `count` events as Confluent frames Avro: creates, updates carrying the row as it was (one in four), and
 * deletes carrying it (one in ten).
 */
function events(count: number): KafkaRecord[] {
  const type = avro.Type.forSchema(JSON.parse(envelopeSchema) as avro.Schema);
  return Array.from({ length: count }, (_, i) => {
    const op = i % 10 === 5 ? 'd' : i % 4 === 3 ? 'u' : 'c';
    const payload = type.toBuffer({
      before: op === 'c' ? null : op === 'u' ? { ...customer(i), name: `earlier ${i}` } : customer(i),
      after: op === 'd' ? null : customer(i),
      source: {
        version: '3.0.0.Final',
        connector: 'postgresql',
        name: 'dbserver1',
        ts_ms: 1733300000000 + i,
        db: 'inventory',
        schema: 'public',
        table: 'customers',
        txId: 700 + i,
        lsn: 34000000 + i * 8,
      },
      op,
      ts_ms: 1733300000999 + i,
    });
    return {
      topic: 'bench',
      partition: i % 4,
      offset: i,
      timestamp: 1733300000000 + i,
      key: Buffer.from(`{"id":${i}}`),
      value: payload,
      headers: {},
    };
  });
}

function cpuUsOf(started: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(started);
  return used.user + used.system;
}

/** The general path against the compiled one on `count` events, `rounds` alternating rounds. */
export async function debeziumPathFigures(count: number, rounds = 5): Promise<PathFigures> {
  const { format, shape } = debeziumAvro(envelopeSchema);
  const primaryKey = ['id'];
  const target = targetTableSchema(shape.fields, shape.metadata!);
  const sink = encodingCdcSink(target);
  // The general path's rows become the message the cdc sink sends them as.
  const message = cdcMessage(target);
  const policy: ChangePolicy = { format: 'debezium', primaryKey, shape, valueFormat: format };
  const records = events(count);
  const ingestedAt = new Date();
  let taken = 0;
  const general = async () => {
    const started = process.cpuUsage();
    const { rows, letters } = await classifyChanges(records, policy, ingestedAt);
    if (letters.length > 0) throw new Error(`Debezium Avro: ${letters[0]!.message}`);
    message.encode.many(rows.map((r) => r.row));
    return cpuUsOf(started) / records.length;
  };
  const straight = async () => {
    const started = process.cpuUsage();
    const encoding = await sink.startEncoding(shape, format, primaryKey);
    if (encoding === undefined) throw new Error('Debezium Avro: no compiled path for the envelope');
    const left: KafkaRecord[] = [];
    for (const record of records) if (!encoding.addRecord(record, ingestedAt)) left.push(record);
    taken = records.length - left.length;
    const { rows } = await classifyChanges(left, policy, ingestedAt);
    message.encode.many(rows.map((r) => r.row));
    encoding.finish();
    return cpuUsOf(started) / records.length;
  };
  // The figures stand for the same messages: the first events (creates, an update, a delete) checked byte
  // for byte.
  const sample = records.slice(0, 8);
  const check = await sink.startEncoding(shape, format, primaryKey);
  for (const record of sample) check?.addRecord(record, ingestedAt);
  const made = check?.finish() ?? [];
  const expected = message.encode.many(
    (await classifyChanges(sample, policy, ingestedAt)).rows.map((r) => r.row),
  );
  if (
    made.length !== sample.length ||
    made.some((m, i) => !Buffer.from(m.bytes).equals(Buffer.from(expected[i]!)))
  )
    throw new Error('Debezium Avro: the compiled path and the general one made different messages');
  const generalRounds: number[] = [];
  const compiledRounds: number[] = [];
  for (let i = 0; i < rounds; i++) {
    generalRounds.push(await general());
    compiledRounds.push(await straight());
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  return {
    format: 'Debezium Avro (cdc)',
    generalUs: median(generalRounds),
    compiledUs: median(compiledRounds),
    compiledShare: taken / records.length,
  };
}
