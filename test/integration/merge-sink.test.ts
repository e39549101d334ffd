import { afterAll, describe, expect, test } from 'vitest';
import { compileRowText } from '../../functions/encoders/row-text.js';
import { armCrashPoints } from '../../functions/kernel/crash-points.js';
import { createMemoryLogger } from '../../functions/kernel/logger.js';
import type { DeadLetter, RowToWrite, TextRow } from '../../functions/kernel/records.js';
import { createMergeErrorTable } from '../../functions/modes/merge/merge-error-table.js';
import { createMergeSink } from '../../functions/modes/merge/merge-sink.js';
import { stagingPrefix, stagingTableName } from '../../functions/modes/merge/merge-statements.js';
import { rowKey, toRow } from '../../functions/records/records.js';
import { targetTableSchema } from '../../functions/schema/table-schema.js';
import { ensureTargetTable } from '../../functions/sinks/bigquery-tables.js';
import { record } from '../support/memory-ports.js';
import { stackClients, uniqueName } from '../support/stack.js';

const clients = await stackClients();
afterAll(() => clients.close());
const userFields = [
  { name: 'id', type: 'STRING', mode: 'NULLABLE' as const },
  { name: 'n', type: 'INT64', mode: 'NULLABLE' as const },
];

function sinkOn(dataset: string, runId: string) {
  return createMergeSink({
    bigquery: clients.bigquery,
    dataset,
    table: 'target',
    schema: targetTableSchema(userFields),
    pipelineId: 'p1',
    taskIndex: 0,
    runId,
    retry: { attempts: 3, initialDelayMs: 1, maxDelayMs: 5 },
    logger: createMemoryLogger(),
    leftoverAgeMs: 0,
  });
}

async function setup(runId: string, fault?: (point: string) => void) {
  const dataset = uniqueName('merge');
  await ensureTargetTable(clients.bigquery, { dataset, table: 'target', location: null }, userFields);
  // The crash point (if any) is armed for this test's first sink; it is disarmed once that sink crashed.
  armCrashPoints(fault);
  return { dataset, sink: sinkOn(dataset, runId) };
}

function batch(from: number, to: number, partition = 0): RowToWrite[] {
  return Array.from(
    { length: to - from },
    (_, i) =>
      toRow(
        record('orders', partition, from + i, { id: `r${from + i}`, n: from + i }),
        new Date(),
      ) as RowToWrite,
  );
}

async function targetStats(dataset: string) {
  const [rows] = await clients.bigquery.query({
    query: `SELECT COUNT(*) AS c, COUNT(DISTINCT _kafka_offset) AS d FROM \`${dataset}.target\``,
  });
  return rows[0] as { c: number; d: number };
}

async function tables(dataset: string): Promise<string[]> {
  // Listing tables is what an operator would do to find leftovers.
  const [list] = await clients.bigquery.dataset(dataset).getTables();
  return list.map((t) => t.id!).sort();
}

test('merging the same batch twice leaves one copy', async () => {
  const { dataset, sink } = await setup('run-a');
  const results = await sink.write(batch(0, 50));
  expect(results.every((r) => r.ok)).toBe(true);
  await sink.write(batch(0, 50));
  await sink.write(batch(25, 75)); // overlaps: only 50..74 are new
  expect(await targetStats(dataset)).toEqual({ c: 75, d: 75 });
  // One staging table for the run, made once (no table per flush), dropped at the end.
  expect(await tables(dataset)).toEqual([stagingTableName('p1', 0, 'run-a'), 'target']);
  await sink.close();
  expect(await tables(dataset)).toEqual(['target']);
});

test("rows made from their records' text are staged with their batch id and merged once, as object rows are", async () => {
  const { dataset, sink } = await setup('run-text');
  const rowText = compileRowText({ fields: userFields, unknownFields: 'reject' })!;
  const ingestedAt = new Date();
  const texts = (from: number, to: number): TextRow[] =>
    Array.from({ length: to - from }, (_, i) => {
      const r = record('orders', 0, from + i, { id: `r${from + i}`, n: from + i });
      return { rowKey: rowKey(r), record: r, json: rowText(r, ingestedAt)! };
    });
  expect((await sink.write(texts(0, 30))).every((r) => r.ok)).toBe(true);
  await sink.write(texts(0, 30));
  // Text rows and another partition's object rows in one flush: only 30..39 and the other's 10 are new.
  await Promise.all([sink.write(texts(20, 40)), sink.write(batch(0, 10, 1))]);
  const [rows] = await clients.bigquery.query({
    query: `SELECT _kafka_partition AS p, COUNT(*) AS c, COUNT(DISTINCT _kafka_offset) AS d, MAX(n) AS n FROM \`${dataset}.target\` GROUP BY p ORDER BY p`,
  });
  expect(rows).toEqual([
    { p: 0, c: 40, d: 40, n: 39 },
    { p: 1, c: 10, d: 10, n: 9 },
  ]);
  await sink.close();
});

test('writes from several partitions at once go out as one flush, each row once', async () => {
  const { dataset, sink } = await setup('run-b');
  const results = await Promise.all([
    sink.write(batch(0, 30, 0)),
    sink.write(batch(0, 30, 1)),
    sink.write(batch(0, 30, 2)),
  ]);
  expect(results.flat().every((r) => r.ok)).toBe(true);
  const [rows] = await clients.bigquery.query({ query: `SELECT COUNT(*) AS c FROM \`${dataset}.target\`` });
  expect(rows[0]).toEqual({ c: 90 });
});

test('rows a run staged but never merged (it crashed) are discarded with its staging table; the replay lands once', async () => {
  const crash = new Error('crash after stage');
  const { dataset, sink } = await setup('run-c', (point) => {
    if (point === 'after-stage') throw crash;
  });
  await expect(sink.write(batch(0, 40))).rejects.toBe(crash);
  armCrashPoints(undefined); // the run that crashed is gone; the next one is not armed
  expect(await targetStats(dataset)).toEqual({ c: 0, d: 0 });
  expect((await tables(dataset)).filter((t) => t.startsWith(stagingPrefix('p1', 0)))).toHaveLength(1);

  // The next run of the task finds the crashed run's staging table, drops it, and replays the records.
  const next = sinkOn(dataset, 'run-d');
  expect(await next.cleanLeftovers()).toBe(1);
  await next.write(batch(0, 60));
  await next.write(batch(20, 60));
  await next.close();
  expect(await targetStats(dataset)).toEqual({ c: 60, d: 60 });
  expect(await tables(dataset)).toEqual(['target']);
});

test('a batch merged by a run that crashed before its checkpoint commit inserts nothing when replayed', async () => {
  const crash = new Error('crash after merge');
  const { dataset, sink } = await setup('run-f', (point) => {
    if (point === 'after-merge-before-commit') throw crash;
  });
  await expect(sink.write(batch(0, 40))).rejects.toBe(crash);
  armCrashPoints(undefined); // the run that crashed is gone; the next one is not armed
  expect(await targetStats(dataset)).toEqual({ c: 40, d: 40 });
  const replay = sinkOn(dataset, 'run-g');
  await replay.cleanLeftovers();
  await replay.write(batch(0, 60));
  expect(await targetStats(dataset)).toEqual({ c: 60, d: 60 });
});

test('rows BigQuery rejects in staging are returned as rejected, and not merged', async () => {
  const { dataset, sink } = await setup('run-h');
  const rows = batch(0, 10);
  rows[4] = { ...rows[4]!, row: { ...rows[4]!.row, unknown_column: 1 } };
  const results = await sink.write(rows);
  expect(results.filter((r) => !r.ok)).toHaveLength(1);
  expect(results[4]).toMatchObject({ ok: false, reason: expect.stringContaining('unknown_column') });
  expect(await targetStats(dataset)).toEqual({ c: 9, d: 9 });
});

describe('the error table merge mode writes itself', () => {
  function letter(offset: number, value: string | null, headers: Record<string, string> = {}): DeadLetter {
    return {
      record: {
        ...record('orders', 0, offset, {}),
        value: value === null ? null : Buffer.from(value),
        headers,
      },
      kind: 'decode',
      message: `offset ${offset} is not JSON`,
    };
  }

  test('each dead letter once, however often its batch is written again; read back with the BigQuery client', async () => {
    const dataset = uniqueName('merge');
    await ensureTargetTable(clients.bigquery, { dataset, table: 'target', location: null }, userFields);
    const options = {
      bigquery: clients.bigquery,
      dataset,
      table: 'target',
      location: null,
      pipelineId: 'p1',
      taskIndex: 0,
      retry: { attempts: 3, initialDelayMs: 1, maxDelayMs: 5 },
      logger: createMemoryLogger(),
      leftoverAgeMs: 0,
    };
    const letters = [letter(3, '{oops', { trace: 'abc' }), letter(7, null), letter(9, 'x')];
    const at = new Date('2026-11-29T10:00:00.000Z');
    // A first run writes them and dies before its checkpoint; two more runs write the same batch again,
    // one of them with a letter more.
    const first = createMergeErrorTable({ ...options, runId: 'run-a' });
    await first.write(letters, at);
    const second = createMergeErrorTable({ ...options, runId: 'run-b' });
    await second.write(letters, at);
    await second.write([...letters, letter(11, '[')], at);
    for (const t of [first, second]) await t.close();

    const [rows] = await clients.bigquery.query({
      query: `SELECT _kafka_offset AS o, value, value_size, error_kind, error_message, TO_JSON_STRING(headers) AS headers
              FROM \`${dataset}.target_dead_letters\` ORDER BY _kafka_offset`,
    });
    expect(rows.map((r: { o: number }) => Number(r.o))).toEqual([3, 7, 9, 11]);
    const three = rows[0] as { value: string; value_size: number; error_kind: string; error_message: string };
    // The client returns BYTES as base64, as BigQuery's REST API does.
    expect(Buffer.from(three.value, 'base64').toString()).toBe('{oops');
    expect(JSON.parse((rows[0] as { headers: string }).headers)).toEqual({ trace: 'abc' });
    expect(Number(three.value_size)).toBe(5);
    expect(three).toMatchObject({ error_kind: 'decode', error_message: 'offset 3 is not JSON' });
    expect(rows[1]).toMatchObject({ value: null, value_size: null });
    // The staging tables of both runs are gone with them.
    expect((await tables(dataset)).filter((t) => t.startsWith(stagingPrefix('p1', 0)))).toEqual([]);
  });

  test('its staging table is the run’s own, next to the rows’ one', () => {
    const rows = stagingTableName('p1', 0, 'run-a');
    const letters = stagingTableName('p1', 0, 'run-a', 'dead-letters');
    expect(letters).not.toBe(rows);
    expect(letters.startsWith(stagingPrefix('p1', 0))).toBe(true);
  });
});
