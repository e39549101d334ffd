/**
 * `cdc` mode end to end, on the real CLI, against the local stack's patched BigQuery emulator (its change
 * data capture: stack/bigquery-emulator/cdc.patch). Keyed records written by kcat (a producer no one here
 * wrote), upserts and tombstones; Debezium envelopes as Kafka Connect's JSON converter writes them. The
 * table must end equal to the last change of every key, whatever crashes and replays came between.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import type { GoogleClients } from '../../functions/google/clients.js';
import { cdcTables, upsertSchema } from '../support/cdc-tables.js';
import { checkpointsOf, e2eClients, type Pipeline, runCli, runJob, runVerify } from '../support/job.js';
import { testKafka } from '../support/kafka.js';
import { kcatProduceKeyed, pythonProduce } from '../support/producers.js';
import { root } from '../support/stack.js';

const clients: GoogleClients = await e2eClients();
afterAll(async () => {
  await clients.close();
});

const seekToStart = (pipeline: Pipeline) =>
  runCli(
    ['seek', '--topic', pipeline.topic, '--partition', '0', '--offset', '0', '--reason', 'replay test'],
    pipeline.env,
  );

const { cdcPipeline, tableState, expectedUpserts, produceChanges } = cdcTables(clients);

describe('cdc mode: keyed upserts and tombstones', () => {
  test('the table ends equal to each key’s last change; a second run is idle; verify passes', async () => {
    const pipeline = await cdcPipeline(2, upsertSchema, { CHANGE_FORMAT: 'upsert', BQ_PRIMARY_KEY: 'id' });
    await produceChanges(pipeline, 2, [
      { id: 1, v: 1 },
      { id: 2, v: 2 },
      { id: 3, v: 3 },
      { id: 1, v: 11 },
      { id: 2, v: null },
      { id: 4, v: 4 },
      { id: 4, v: null },
      { id: 4, v: 44 },
    ]);
    const first = await runJob(pipeline.env);
    expect(first.code).toBe(0);
    expect(first.summary.stopReason).toBe('caught_up');
    expect(await tableState(pipeline, ['v', 'note'])).toEqual(await expectedUpserts(pipeline));
    expect([...(await tableState(pipeline, ['v'])).keys()].sort()).toEqual(['k1', 'k3', 'k4']);

    await produceChanges(pipeline, 2, [
      { id: 3, v: null },
      { id: 1, v: 111 },
    ]);
    expect((await runJob(pipeline.env)).code).toBe(0);
    expect(await tableState(pipeline, ['v', 'note'])).toEqual(await expectedUpserts(pipeline));
    const idle = await runJob(pipeline.env);
    expect(idle.summary.recordsRead).toBe(0);
    const verify = await runVerify(pipeline.env);
    expect(verify.code, JSON.stringify(verify.verdicts)).toBe(0);
  }, 120_000);

  test('a backward seek replays changes without undoing later ones', async () => {
    const pipeline = await cdcPipeline(1, upsertSchema, { CHANGE_FORMAT: 'upsert', BQ_PRIMARY_KEY: 'id' });
    await produceChanges(pipeline, 1, [
      { id: 1, v: 1 },
      { id: 2, v: 2 },
      { id: 1, v: 3 },
      { id: 2, v: null },
      { id: 5, v: 5 },
    ]);
    expect((await runJob(pipeline.env)).code).toBe(0);
    const before = await tableState(pipeline, ['v', 'note']);
    expect(before).toEqual(await expectedUpserts(pipeline));
    const seek = await seekToStart(pipeline);
    expect(seek.code, seek.stderr).toBe(0);
    const replay = await runJob(pipeline.env);
    expect(replay.code).toBe(0);
    expect(replay.summary.recordsRead).toBe(5);
    expect(await tableState(pipeline, ['v', 'note'])).toEqual(before);
    expect((await checkpointsOf(clients, pipeline)).get(0)).toBe(5);
    const verify = await runVerify(pipeline.env);
    expect(verify.code, JSON.stringify(verify.verdicts)).toBe(0);
  }, 120_000);

  test('a row BigQuery would refuse and a value that is no JSON become dead letters; the rest is applied', async () => {
    const fields = [...upsertSchema, { name: 'j', type: 'JSON', mode: 'NULLABLE' }];
    const pipeline = await cdcPipeline(1, fields, { CHANGE_FORMAT: 'upsert', BQ_PRIMARY_KEY: 'id' });
    await kcatProduceKeyed(pipeline.topic, 0, [
      { key: 'a', value: JSON.stringify({ id: 'a', v: 1, j: '{"ok":true}' }) },
      { key: 'b', value: JSON.stringify({ id: 'b', v: 2, j: '{broken' }) },
      { key: 'c', value: JSON.stringify({ id: 'c', v: 3 }) },
      { key: 'd', value: 'not json' },
    ]);
    const run = await runJob(pipeline.env);
    expect(run.code).toBe(0);
    expect(run.summary.stopReason).toBe('caught_up');
    expect([...(await tableState(pipeline, ['v'])).keys()].sort()).toEqual(['a', 'c']);
    const [letters] = await clients.bigquery.query(
      `SELECT _kafka_offset AS o, error_kind AS kind, error_message AS message FROM \`${pipeline.dataset}.${pipeline.table}_dead_letters\` ORDER BY o`,
    );
    expect(letters.map((l: { o: number; kind: string }) => [Number(l.o), l.kind])).toEqual([
      [1, 'schema'], // JSON text that does not parse: refused up front, as BigQuery would
      [3, 'decode'],
    ]);
    // Read again from the start: the error table is keyed by origin, nothing doubles.
    expect((await seekToStart(pipeline)).code).toBe(0);
    expect((await runJob(pipeline.env)).code).toBe(0);
    const [again] = await clients.bigquery.query(
      `SELECT COUNT(*) AS n FROM \`${pipeline.dataset}.${pipeline.table}_dead_letters\``,
    );
    expect(Number(again[0].n)).toBe(2);
  }, 120_000);

  test('a topic given more partitions stops the run before it reads anything, naming it', async () => {
    const pipeline = await cdcPipeline(2, upsertSchema, { CHANGE_FORMAT: 'upsert', BQ_PRIMARY_KEY: 'id' });
    await produceChanges(pipeline, 2, [
      { id: 1, v: 1 },
      { id: 2, v: 2 },
    ]);
    expect((await runJob(pipeline.env)).code).toBe(0);
    const admin = testKafka().admin();
    await admin.connect();
    await admin.createPartitions({ topicPartitions: [{ topic: pipeline.topic, count: 4 }] });
    await admin.disconnect();
    await produceChanges(pipeline, 4, [{ id: 3, v: 3 }]);
    const refused = await runJob(pipeline.env);
    expect(refused.code).toBe(1);
    expect(String(refused.summary.error)).toContain(`topic ${pipeline.topic} had 2 partitions`);
    expect(refused.summary.recordsRead ?? 0).toBe(0);
    expect([...(await tableState(pipeline, ['v'])).keys()].sort()).toEqual(['k1', 'k2']);
  }, 120_000);

  test("Debezium's JSON converter (kcat): nanosecond timestamps and ids beyond 2^53 land exact", async () => {
    const fields = [
      { name: 'id', type: 'INT64', mode: 'REQUIRED' },
      { name: 'ts', type: 'DATETIME', mode: 'NULLABLE' },
      { name: 'n', type: 'INT64', mode: 'NULLABLE' },
    ];
    const pipeline = await cdcPipeline(1, fields, { CHANGE_FORMAT: 'debezium', BQ_PRIMARY_KEY: 'id' });
    const row = {
      type: 'struct',
      optional: true,
      fields: [
        { type: 'int64', optional: false, field: 'id' },
        { type: 'int64', optional: true, name: 'io.debezium.time.NanoTimestamp', version: 1, field: 'ts' },
        { type: 'int64', optional: true, field: 'n' },
      ],
    };
    const schema = JSON.stringify({
      type: 'struct',
      fields: [
        { ...row, field: 'before' },
        { ...row, field: 'after' },
        { type: 'string', optional: false, field: 'op' },
      ],
      name: 'dbserver1.public.events.Envelope',
    });
    // Written as text: JavaScript's JSON.stringify could not write these numbers.
    const event = (op: string, before: string, after: string) =>
      `{"schema":${schema},"payload":{"before":${before},"after":${after},"op":"${op}"}}`;
    await kcatProduceKeyed(pipeline.topic, 0, [
      {
        key: '1733300000123456789',
        value: event('c', 'null', '{"id":1733300000123456789,"ts":1733300000123456999,"n":9007199254740993}'),
      },
      {
        key: '1733300000123456790',
        value: event('c', 'null', '{"id":1733300000123456790,"ts":-1000,"n":-9223372036854775808}'),
      },
      {
        key: '9223372036854775807',
        value: event('c', 'null', '{"id":9223372036854775807,"ts":null,"n":1}'),
      },
      {
        key: '9223372036854775807',
        value: event('d', '{"id":9223372036854775807,"ts":null,"n":null}', 'null'),
      },
    ]);
    const run = await runJob(pipeline.env);
    expect(run.code, JSON.stringify(run.summary)).toBe(0);
    expect(run.summary.deadLettered).toBe(0);
    const [rows] = await clients.bigquery.query(
      `SELECT CAST(id AS STRING) AS id, CAST(ts AS STRING) AS ts, CAST(n AS STRING) AS n
         FROM \`${pipeline.dataset}.${pipeline.table}\` ORDER BY id`,
    );
    expect(rows.map((r: { ts: string }) => ({ ...r, ts: r.ts.replace('T', ' ') }))).toEqual([
      // JSON.parse would have read 1733300000123457024 ns: .123457, and refused the ids.
      { id: '1733300000123456789', ts: '2024-12-04 08:13:20.123456', n: '9007199254740993' },
      { id: '1733300000123456790', ts: '1969-12-31 23:59:59.999999', n: '-9223372036854775808' },
    ]);
  }, 120_000);

  test("Debezium's Avro envelopes through the registry (Python's serializer): columns from the after row, changes straight from their bytes", async () => {
    const pipeline = await cdcPipeline(1, upsertSchema, {
      CHANGE_FORMAT: 'debezium',
      BQ_PRIMARY_KEY: 'id',
      VALUE_FORMAT: 'avro',
    });
    delete pipeline.env.BQ_SCHEMA_FILE; // the columns come from the subject's latest version
    // The connector's envelope for a PostgreSQL table (Debezium's Json and VariableScaleDecimal among its
    // types): creates, reads, updates and deletes (the key of `before`) all take the compiled path.
    const schema = readFileSync(
      join(root, 'test', 'fixtures', 'debezium', 'customers-envelope.avsc'),
      'utf8',
    );
    const row = (id: number, name: string) =>
      customer(id, name, `'meta': ' {"n": [${id}, null]} ', 'ratio': {'scale': 3, 'value': b'09'}`);
    await pythonProduce({
      topic: pipeline.topic,
      format: 'avro',
      schema,
      values: `[${[
        debeziumEvent('r', 'None', row(1, 'ann')),
        debeziumEvent('c', 'None', row(2, 'bob')),
        debeziumEvent('u', row(1, 'ann'), row(1, 'ann v2')),
        debeziumEvent('c', 'None', row(4, 'dee')),
        debeziumEvent('d', row(2, 'bob'), 'None'),
        debeziumEvent('u', 'None', row(4, 'dee v2')),
        debeziumEvent('c', 'None', row(3, 'cy')),
      ].join(', ')}]`,
    });
    const run = await runJob(pipeline.env);
    expect(run.code, JSON.stringify(run.summary)).toBe(0);
    expect(run.summary.deadLettered).toBe(0);
    const [rows] = await clients.bigquery.query(
      `SELECT id, name, CAST(balance AS STRING) AS balance, CAST(born AS STRING) AS born, CAST(created AS STRING) AS created,
              CAST(seen_at AS STRING) AS seen_at, CAST(alarm AS STRING) AS alarm, uid, CAST(ratio AS STRING) AS ratio,
              active, meta
         FROM \`${pipeline.dataset}.${pipeline.table}\` ORDER BY id`,
    );
    // BigQuery casts a DATETIME to text with a space, the emulator with a T: the value is what counts; a
    // JSON column comes back as its text (or an object holding it).
    const normalised = rows.map((r: { created: string; meta: unknown }) => ({
      ...r,
      created: r.created.replace('T', ' '),
      meta: JSON.parse(String((r.meta as { value?: unknown })?.value ?? r.meta)),
    }));
    const expected = (id: number, name: string) => ({
      id,
      name,
      balance: `${id}.25`,
      born: '1990-01-02',
      created: '2020-03-01 00:00:59.654321',
      seen_at: expect.stringMatching(/^2024-05-01[ T]09:00:00\.123456(\+00(:00)?|Z)?$/),
      alarm: '12:34:56.789012',
      uid: 'c4ca4238-a0b9-2382-0dcc-509a6f75849b',
      ratio: '12.345',
      active: true,
      meta: { n: [id, null] },
    });
    expect(normalised).toEqual([expected(1, 'ann v2'), expected(3, 'cy'), expected(4, 'dee v2')]);
  }, 120_000);

  test("keyed Avro upserts through the registry (Python's serializer): straight from their bytes, exact", async () => {
    const pipeline = await cdcPipeline(1, upsertSchema, {
      CHANGE_FORMAT: 'upsert',
      BQ_PRIMARY_KEY: 'id',
      VALUE_FORMAT: 'avro',
    });
    delete pipeline.env.BQ_SCHEMA_FILE; // the columns come from the subject's latest version
    const schema = {
      type: 'record',
      name: 'Customer',
      fields: [
        { name: 'id', type: 'long' },
        { name: 'name', type: ['null', 'string'], default: null },
        { name: 'balance', type: { type: 'bytes', logicalType: 'decimal', precision: 12, scale: 2 } },
        { name: 'seen', type: { type: 'long', logicalType: 'timestamp-micros' } },
        { name: 'tags', type: { type: 'array', items: 'string' } },
        { name: 'u', type: ['null', 'string', 'long'], default: null },
      ],
    };
    const row = (id: number, name: string, u: string) =>
      `{"id": ${id}, "name": ${name}, "balance": Decimal("${id}.25"), "seen": datetime(2024, 5, 1, 9, 0, 0, ${id}, tzinfo=timezone.utc), ` +
      `"tags": ["t${id}", ""], "u": ${u}}`;
    await pythonProduce({
      topic: pipeline.topic,
      format: 'avro',
      schema: JSON.stringify(schema),
      partition: 0,
      values: `[${[
        row(1, '"ann"', '"x"'),
        row(2, '"bob"', '9007199254740993'),
        row(1, '"ann v2"', 'None'),
        row(3, 'None', '-1'),
      ].join(', ')}]`,
    });
    const run = await runJob(pipeline.env);
    expect(run.code, JSON.stringify(run.summary)).toBe(0);
    expect(run.summary).toMatchObject({ rowsWritten: 4, deadLettered: 0 });
    const [rows] = await clients.bigquery.query(
      `SELECT id, name, CAST(balance AS STRING) AS balance, FORMAT_TIMESTAMP('%Y-%m-%dT%H:%M:%E6S', seen) AS seen, tags,
              u.string AS u_string, CAST(u.long AS STRING) AS u_long
         FROM \`${pipeline.dataset}.${pipeline.table}\` ORDER BY id`,
    );
    expect(rows).toEqual([
      {
        id: 1,
        name: 'ann v2',
        balance: '1.25',
        seen: '2024-05-01T09:00:00.000001',
        tags: ['t1', ''],
        u_string: null,
        u_long: null,
      },
      {
        id: 2,
        name: 'bob',
        balance: '2.25',
        seen: '2024-05-01T09:00:00.000002',
        tags: ['t2', ''],
        u_string: null,
        u_long: '9007199254740993',
      },
      {
        id: 3,
        name: null,
        balance: '3.25',
        seen: '2024-05-01T09:00:00.000003',
        tags: ['t3', ''],
        u_string: null,
        u_long: '-1',
      },
    ]);
  }, 120_000);
});

/** A row of the customers envelope (test/fixtures/debezium), as Python literal text; `more`: more fields. */
function customer(id: number, name: string, more = ''): string {
  return (
    `{'id': ${id}, 'name': '${name}', 'balance': Decimal('${id}.25'), 'born': 7306, 'created': 1583020859654321, ` +
    `'seen_at': '2024-05-01T09:00:00.123456Z', 'alarm': 45296789012, ` +
    `'uid': 'c4ca4238-a0b9-2382-0dcc-509a6f75849b', 'active': True${more === '' ? '' : `, ${more}`}}`
  );
}

/** A Debezium event of the customers table from PostgreSQL, as Python literal text. */
function debeziumEvent(op: string, before: string, after: string): string {
  const source = `{'version': '3.6.1.Final', 'connector': 'postgresql', 'name': 'dbserver1', 'ts_ms': 1700000000000, 'db': 'd', 'schema': 'public', 'table': 'customers', 'txId': 7, 'lsn': 99}`;
  return `{'before': ${before}, 'after': ${after}, 'source': ${source}, 'op': '${op}', 'ts_ms': 1}`;
}
