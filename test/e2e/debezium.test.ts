/**
 * A real Debezium end to end: PostgreSQL 15 (the stack's, wal_level=logical) → Debezium's PostgreSQL
 * connector 3.6.1.Final on Kafka Connect standalone (JSON converter, schemas enabled) → Kafka → the drain in
 * cdc mode → the BigQuery emulator. Inserts, updates, deletes, a primary-key change, a SIGKILL of the drain
 * mid-run, more changes; at the end the BigQuery table equals `SELECT * FROM` the PostgreSQL table, row by
 * row, each read with its own client (psql, BigQuery's Node client).
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Admin } from 'kafkajs';
import { afterAll, describe, expect, test } from 'vitest';
import type { GoogleClients } from '../../functions/google/clients.js';
import { type Connect, createDatabase, psql, startDebezium } from '../support/debezium.js';
import {
  createPipeline,
  e2eClients,
  leasesFree,
  type Pipeline,
  runJob,
  runVerify,
  startJob,
  waitFor,
} from '../support/job.js';
import { testKafka } from '../support/kafka.js';
import { uniqueName } from '../support/stack.js';

const clients: GoogleClients = await e2eClients();
const workers: Connect[] = [];
const databases: string[] = [];
afterAll(async () => {
  for (const w of workers) await w.stop();
  // A replication slot left behind holds WAL (and the stack takes 32): drop each, and its database.
  for (const d of databases) {
    await psql(
      'postgres',
      `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = '${d}'`,
    );
    await psql('postgres', `DROP DATABASE IF EXISTS ${d}`);
  }
  await clients.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The BigQuery side of `customers`, as Debezium's logical types map to it. */
const fields = [
  { name: 'id', type: 'INT64', mode: 'REQUIRED' },
  { name: 'name', type: 'STRING' },
  { name: 'balance', type: 'NUMERIC' },
  { name: 'born', type: 'DATE' },
  { name: 'seen_at', type: 'TIMESTAMP' },
  { name: 'created', type: 'DATETIME' },
  { name: 'meta', type: 'JSON' },
  { name: 'uid', type: 'STRING' },
  { name: 'active', type: 'BOOL' },
];

const columns = 'id, name, balance, born, seen_at, created, meta, uid, active';

/** PostgreSQL's rows, each value as text in one canonical form per type. */
async function sourceRows(database: string): Promise<string[]> {
  const out = await psql(
    database,
    `SELECT id, coalesce(name, '∅'), coalesce(balance::text, '∅'), coalesce(born::text, '∅'),
            coalesce(to_char(seen_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), '∅'),
            coalesce(to_char(created, 'YYYY-MM-DD"T"HH24:MI:SS.US'), '∅'),
            coalesce((meta::jsonb)::text, '∅'), coalesce(uid::text, '∅'), coalesce(active::text, '∅')
       FROM customers ORDER BY id`,
  );
  return out
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const v = l.split('|');
      v[6] = v[6] === '∅' ? '∅' : JSON.stringify(JSON.parse(v[6]!));
      v[8] = v[8] === 't' ? 'true' : v[8] === 'f' ? 'false' : v[8]!;
      return v.join('|');
    });
}

/** BigQuery's rows, read with its own client, in the same canonical forms. */
async function tableRows(pipeline: Pipeline): Promise<string[]> {
  const [rows] = await clients.bigquery.query(
    `SELECT ${columns} FROM \`${pipeline.dataset}.${pipeline.table}\` ORDER BY id`,
  );
  const text = (v: unknown): string => {
    if (v === null || v === undefined) return '∅';
    if (typeof v === 'object' && 'value' in (v as object)) return String((v as { value: unknown }).value);
    return String(v);
  };
  return (rows as Record<string, unknown>[]).map((r) => {
    const balance = r.balance === null ? '∅' : Number(text(r.balance)).toFixed(2);
    const seen = r.seen_at === null ? '∅' : micros(text(r.seen_at));
    const created = r.created === null ? '∅' : text(r.created).padEnd(26, '0').replace(' ', 'T');
    const meta = r.meta === null ? '∅' : JSON.stringify(JSON.parse(text(r.meta)));
    return [
      text(r.id),
      text(r.name),
      balance,
      text(r.born),
      seen,
      created,
      meta,
      text(r.uid),
      text(r.active),
    ].join('|');
  });
}

/** A timestamp as BigQuery's client gives it → `YYYY-MM-DDTHH:MM:SS.ffffffZ`. */
function micros(text: string): string {
  const m = /^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(?:\.(\d{1,6})0*)?(?:Z|\+00:00)?$/.exec(text);
  if (m === null) throw new Error(`not a timestamp: ${text}`);
  return `${m[1]}T${m[2]}.${(m[3] ?? '').padEnd(6, '0')}Z`;
}

/** Waits until Debezium has written at least `count` records to the topic. */
async function topicHolds(topic: string, count: number) {
  const admin = testKafka().admin();
  await admin.connect();
  try {
    await waitFor(
      `${count} records on ${topic}`,
      async () => {
        const topics = await admin.listTopics();
        if (!topics.includes(topic)) return false;
        const size = await sizeOf(admin, topic);
        return size !== undefined && size >= count;
      },
      90_000,
    );
  } finally {
    await admin.disconnect();
  }
}

/** Waits until Debezium has written everything: the topic's size unchanged for 3 s. */
async function topicSettled(topic: string): Promise<number> {
  let last = -1;
  for (;;) {
    const size = await topicSize(topic);
    if (size === last) return size;
    last = size;
    await sleep(3_000);
  }
}

async function topicSize(topic: string) {
  const admin = testKafka().admin();
  await admin.connect();
  try {
    return await waitFor(`the size of ${topic}`, () => sizeOf(admin, topic), 30_000);
  } finally {
    await admin.disconnect();
  }
}

/**
 * The records on a topic, or undefined while the broker cannot yet say: a topic Debezium has just
 * created answers NOT_LEADER_FOR_PARTITION (retriable) until its partition has a leader.
 */
async function sizeOf(admin: Admin, topic: string): Promise<number | undefined> {
  try {
    return (await admin.fetchTopicOffsets(topic)).reduce((n, o) => n + Number(o.high), 0);
  } catch (error) {
    if ((error as { retriable?: unknown }).retriable === true) return undefined;
    throw error;
  }
}

describe('Debezium PostgreSQL → Kafka → cdc mode → BigQuery', () => {
  test('the BigQuery table ends equal to the PostgreSQL table, through a SIGKILL of the drain', async () => {
    const database = uniqueName('dbz').toLowerCase();
    await createDatabase(database);
    databases.push(database);
    await psql(
      database,
      `CREATE TABLE customers (
         id integer PRIMARY KEY, name text, balance numeric(12,2), born date, seen_at timestamptz,
         created timestamp, meta jsonb, uid uuid, active boolean)`,
    );
    await psql(
      database,
      `INSERT INTO customers
         SELECT i, 'customer ' || i, (i * 10.25)::numeric(12,2), DATE '1990-01-01' + i,
                TIMESTAMPTZ '2024-05-01 10:00:00.123456+02' + i * INTERVAL '1 hour',
                TIMESTAMP '2020-02-29 23:59:59.654321' + i * INTERVAL '1 minute',
                jsonb_build_object('n', i, 'tags', jsonb_build_array('a', 'b')),
                md5(i::text)::uuid, i % 2 = 0
           FROM generate_series(1, 40) AS i`,
    );
    const prefix = database.replaceAll('_', '-');
    const topic = `${prefix}.public.customers`;
    const partitions = 3;
    workers.push(
      await startDebezium({ database, topicPrefix: prefix, tables: ['public.customers'], partitions }),
    );
    await topicHolds(topic, 40); // the snapshot: op "r" for every row

    const pipeline = await createPipeline(clients, 1, {
      BQ_WRITE_MODE: 'cdc',
      CHANGE_FORMAT: 'debezium',
      BQ_MAX_STALENESS: '0',
      DRAIN_BUDGET_SECONDS: '20',
      BATCH_MAX_RECORDS: '10',
      KAFKA_TOPICS: topic,
      CDC_SOURCE_COLUMNS: 'true',
    });
    const schemaFile = join(tmpdir(), `${pipeline.id}.customers.json`);
    writeFileSync(schemaFile, JSON.stringify(fields));
    pipeline.env.BQ_SCHEMA_FILE = schemaFile;

    const first = await runJob(pipeline.env);
    expect(first.code, JSON.stringify(first.summary)).toBe(0);
    expect(await tableRows(pipeline)).toEqual(await sourceRows(database));

    // Updates, deletes, a primary-key change, NULLs; the drain killed while it drains them.
    await psql(
      database,
      `UPDATE customers SET name = name || ' (updated)', balance = balance + 0.01 WHERE id % 3 = 0;
       DELETE FROM customers WHERE id % 7 = 0;
       UPDATE customers SET id = 1000 WHERE id = 1;
       UPDATE customers SET meta = NULL, born = NULL, seen_at = NULL WHERE id = 2;
       INSERT INTO customers (id, name, balance) VALUES (500, 'new', -12.34);`,
    );
    await topicSettled(topic);
    const killed = startJob(pipeline.env);
    await sleep(1_500);
    killed.child.kill('SIGKILL');
    await killed.exited;

    await psql(
      database,
      `UPDATE customers SET active = NOT coalesce(active, false) WHERE id < 20;
       DELETE FROM customers WHERE id = 500;
       INSERT INTO customers (id, name) VALUES (501, 'late');`,
    );
    const events = await topicSettled(topic);
    await waitFor('the killed run’s leases to expire', () => leasesFree(clients, pipeline), 30_000);
    let read = 0;
    for (let i = 0; i < 10; i++) {
      const run = await runJob(pipeline.env);
      expect(run.code, JSON.stringify(run.summary)).toBe(0);
      read += Number(run.summary.recordsRead);
      if (run.summary.stopReason === 'caught_up' && run.summary.lag === 0) break;
    }
    console.log(
      `debezium: ${events} events on ${partitions} partitions; after the SIGKILL the drain read ${read}`,
    );
    expect(await tableRows(pipeline)).toEqual(await sourceRows(database));
    const verify = await runVerify(pipeline.env);
    expect(verify.code, JSON.stringify(verify.verdicts)).toBe(0);
    // The optional source columns: each row's last change, where Debezium made it.
    const [ops] = await clients.bigquery.query(
      `SELECT id, _cdc_op AS op, _cdc_source_position AS position FROM \`${pipeline.dataset}.${pipeline.table}\` WHERE id IN (3, 500, 501, 1000, 4) ORDER BY id`,
    );
    expect(ops.map((r: { id: number; op: string }) => [r.id, r.op])).toEqual([
      [3, 'u'],
      [4, 'u'],
      [501, 'c'],
      [1000, 'c'],
    ]);
    for (const r of ops as { position: string }[]) expect(JSON.parse(r.position)).toHaveProperty('lsn');
  }, 300_000);
});
