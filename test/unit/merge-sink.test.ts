/**
 * Merge mode against BigQuery as it behaves on a bad day, with doubles of the BigQuery client: a table
 * created moments ago that answers 404 to streaming inserts for a while, and inserts that "succeed" and
 * vanish. Neither may lose a record: the first is retried, the second fails the batch (its checkpoint stays).
 */
import type { BigQuery } from '@google-cloud/bigquery';
import { describe, expect, test } from 'vitest';
import { createMemoryLogger } from '../../functions/kernel/logger.js';
import type { KafkaRecord, Row } from '../../functions/kernel/records.js';
import { createMergeSink } from '../../functions/modes/merge/merge-sink.js';
import { confirmStatement } from '../../functions/modes/merge/merge-statements.js';
import { targetTableSchema } from '../../functions/schema/table-schema.js';
import { testDrainOptions } from '../support/drain-options.js';
import {
  createMemoryCheckpoints,
  createMemoryDeadLetters,
  createMemorySource,
  record,
} from '../support/memory-ports.js';
import { type DrainOptions, runDrain } from '../support/run-drain.js';

interface Behaviour {
  /** Inserts into a staging table answered 404 before they succeed. */
  notFoundInserts: number;
  /** Staged rows that "succeed" and vanish. */
  dropStaged: boolean;
  /** A MERGE that never answers (a long one, still running at the hard stop). */
  hangMerge?: boolean;
}

/** Just enough of the BigQuery client for the merge sink: tables, insertAll, MERGE and the confirm query. */
function bigQueryDouble(behaviour: Behaviour) {
  const tables = new Set<string>();
  const staged: Row[] = [];
  const target: Row[] = [];
  let notFound = 0;
  const key = (r: Row) => `${r._kafka_topic}:${r._kafka_partition}:${r._kafka_offset}`;
  const table = (name: string) => ({
    id: name,
    exists: async () => [tables.has(name)],
    // tabledata.insertAll, as the sink sends it: its body's bytes through the table's `request`.
    request: async ({ uri, body }: { uri: string; body: Buffer }) => {
      expect(uri).toBe('/insertAll');
      if (notFound < behaviour.notFoundInserts) {
        notFound++;
        throw Object.assign(new Error(`Not found: Table ${name}`), { code: 404 });
      }
      const { rows } = JSON.parse(body.toString()) as { rows: { json: Row }[] };
      if (!behaviour.dropStaged) staged.push(...rows.map((r) => r.json));
      return [{}];
    },
    delete: async () => {
      tables.delete(name);
    },
  });
  const dataset = {
    table,
    createTable: async (name: string) => {
      tables.add(name);
      return [table(name)];
    },
    getTables: async () => [[...tables].map(table)],
  };
  const bigquery = {
    dataset: () => dataset,
    async query({ query }: { query: string }) {
      if (query.startsWith('MERGE') && behaviour.hangMerge) return new Promise(() => {});
      if (query.startsWith('MERGE')) {
        const batch = /S\._kbd_batch = '([0-9a-f]+)'/.exec(query)![1];
        for (const row of staged.filter((r) => r._kbd_batch === batch)) {
          if (!target.some((t) => key(t) === key(row))) target.push(row);
        }
        return [[]];
      }
      // The confirm query's keys: per partition, ranges and IN lists of offsets.
      const wanted = new Set<string>();
      for (const part of query.split("_kafka_topic = '").slice(1)) {
        const [, topic, partition] = /^([^']+)' AND _kafka_partition = (\d+)/.exec(part)!;
        for (const [, from, to] of part.matchAll(/_kafka_offset BETWEEN (\d+) AND (\d+)/g))
          for (let o = Number(from); o <= Number(to); o++) wanted.add(`${topic}:${partition}:${o}`);
        for (const [, list] of part.matchAll(/_kafka_offset IN \(([\d, ]+)\)/g))
          for (const o of list!.split(', ')) wanted.add(`${topic}:${partition}:${o}`);
      }
      return [[{ present: new Set(target.map(key).filter((k) => wanted.has(k))).size }]];
    },
  };
  return { bigquery: bigquery as unknown as BigQuery, target, staged, behaviour, tables };
}

const options: DrainOptions = {
  ...testDrainOptions,
  batchMaxRecords: 5,
  partitionConcurrency: 2,
  tombstones: 'skip',
};

const mergeSinkOn = (
  double: ReturnType<typeof bigQueryDouble>,
  runId: string,
  clock: () => number = Date.now,
) =>
  createMergeSink({
    bigquery: double.bigquery,
    dataset: 'd',
    table: 'events',
    schema: targetTableSchema([{ name: 'n', type: 'INT64' }]),
    pipelineId: 'p',
    taskIndex: 0,
    runId,
    retry: { attempts: 3, initialDelayMs: 1, maxDelayMs: 5 },
    logger: createMemoryLogger(),
    leftoverAgeMs: 60_000,
    freshTableMs: 5_000,
    now: clock,
  });

function world(double: ReturnType<typeof bigQueryDouble>, log: Map<string, KafkaRecord[]>) {
  const checkpoints = createMemoryCheckpoints(Date.now);
  const run = (runId: string, clock: () => number = Date.now) => {
    const sink = mergeSinkOn(double, runId, clock);
    return runDrain(
      { source: createMemorySource(log), checkpoints, sink, deadLetters: createMemoryDeadLetters() },
      { ...options, runId },
      { logger: createMemoryLogger(), now: Date.now, signal: new AbortController().signal },
    );
  };
  return { checkpoints, run };
}

const logOf = (count: number) =>
  new Map([['t~0', Array.from({ length: count }, (_, o) => record('t', 0, o, { n: o }))]]);
const targetOffsets = (double: ReturnType<typeof bigQueryDouble>) =>
  double.target.map((r) => Number(r._kafka_offset)).sort((a, b) => a - b);

/** The most terms any one parenthesised OR of `sql` has. */
function widestOr(sql: string): number {
  const counts: number[] = [0];
  let widest = 0;
  for (let i = 0; i < sql.length; i++) {
    if (sql[i] === '(') counts.push(0);
    else if (sql[i] === ')') widest = Math.max(widest, counts.pop()! + 1);
    else if (sql.startsWith(' OR ', i)) counts[counts.length - 1]!++;
  }
  return widest;
}

describe('merge mode on a bad day', () => {
  test('a staging table that answers 404 for a while after it was made: retried, nothing lost, nothing twice', async () => {
    // More 404s than the retry policy's 3 attempts: only the young-table rule carries it through.
    const double = bigQueryDouble({ notFoundInserts: 6, dropStaged: false });
    const w = world(double, logOf(12));
    const summary = await w.run('run-1');
    expect(summary.stopReason).toBe('caught_up');
    expect(targetOffsets(double)).toEqual([...Array(12).keys()]);
    expect(w.checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(12);
  });

  test('a 404 long after the table was made is what it says: the run fails, the checkpoint stays', async () => {
    const double = bigQueryDouble({ notFoundInserts: 100, dropStaged: false });
    const w = world(double, logOf(5));
    let clock = Date.now();
    const summary = await w.run('run-1', () => {
      clock += 3_000;
      return clock;
    });
    expect(summary.stopReason).toBe('error');
    expect(summary.error).toMatch(/Not found/);
    expect(w.checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(0);
  });

  test('staged rows that vanish fail the batch (the MERGE is confirmed); once BigQuery behaves, each row lands once', async () => {
    const double = bigQueryDouble({ notFoundInserts: 0, dropStaged: true });
    const w = world(double, logOf(10));
    const first = await w.run('run-1');
    expect(first.stopReason).toBe('error');
    expect(first.error).toMatch(/holds 0 of the batch's 5 rows after its MERGE/);
    expect(w.checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(0);
    expect(double.target).toEqual([]);

    double.behaviour.dropStaged = false;
    const second = await w.run('run-2');
    expect(second.stopReason).toBe('caught_up');
    expect(targetOffsets(double)).toEqual([...Array(10).keys()]);
  });

  test('a MERGE still running at the hard stop: the run ends, exit-clean, its staging table left for later', async () => {
    const double = bigQueryDouble({ notFoundInserts: 0, dropStaged: false, hangMerge: true });
    const sink = mergeSinkOn(double, 'run-1');
    const checkpoints = createMemoryCheckpoints(Date.now);
    const stop = new AbortController();
    const running = runDrain(
      { source: createMemorySource(logOf(5)), checkpoints, sink, deadLetters: createMemoryDeadLetters() },
      { ...options, runId: 'run-1', settleMs: 50 },
      { logger: createMemoryLogger(), now: Date.now, signal: stop.signal },
    );
    // Stop once the MERGE is on the wire (the batch is staged).
    while (double.staged.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    stop.abort();
    const summary = await running;
    expect(summary.stopReason).toBe('signal');
    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(0);
    // Closing does not wait for the MERGE, nor drop the table it reads.
    const closed = await Promise.race([
      sink.close().then(() => 'closed'),
      new Promise((resolve) => setTimeout(() => resolve('held'), 1_000)),
    ]);
    expect(closed).toBe('closed');
    expect([...double.tables].some((t) => t.startsWith('_kbd_staging_p_t0'))).toBe(true);
  });

  test('the confirm query names exactly the batch keys, inlined only when they are safe', () => {
    const rows = [record('t.a', 0, 3, {}), record('t.a', 0, 4, {}), record('t-b', 2, 9, {})].map((r) => ({
      rowKey: '',
      record: r,
      row: {},
    }));
    const sql = confirmStatement({ dataset: 'd', table: 'e' }, rows, {
      from: '2026-01-01T00:00:00.000Z',
      to: '2026-01-02T00:00:00.000Z',
    });
    expect(sql).toContain("(_kafka_topic = 't.a' AND _kafka_partition = 0 AND (_kafka_offset IN (3, 4)))");
    expect(sql).toContain("(_kafka_topic = 't-b' AND _kafka_partition = 2 AND (_kafka_offset IN (9)))");
    const evil = [{ rowKey: '', record: record("t' OR 1=1 --", 0, 1, {}), row: {} }];
    expect(() => confirmStatement({ dataset: 'd', table: 'e' }, evil, { from: '', to: '' })).toThrow(
      RangeError,
    );
  });

  test('the confirm query says runs of offsets as ranges and the rest in bounded IN lists, ORs nested', () => {
    const days = { from: '2026-01-01T00:00:00.000Z', to: '2026-01-02T00:00:00.000Z' };
    const rowsOf = (partition: number, offsets: number[]) =>
      offsets.map((o) => ({ rowKey: '', record: record('t', partition, o, {}), row: {} }));
    // 0..999 but for the dead letters at 10, 500 and 501: three runs; then 1,200 lone even offsets.
    const run = Array.from({ length: 1_000 }, (_, o) => o).filter((o) => ![10, 500, 501].includes(o));
    const lone = Array.from({ length: 1_200 }, (_, i) => 2_000 + 2 * i);
    const sql = confirmStatement({ dataset: 'd', table: 'e' }, rowsOf(0, [...lone, ...run]), days);
    expect(sql).toContain('_kafka_offset BETWEEN 0 AND 9 OR _kafka_offset BETWEEN 11 AND 499');
    expect(sql).toContain('_kafka_offset BETWEEN 502 AND 999');
    const lists = [...sql.matchAll(/_kafka_offset IN \(([^)]*)\)/g)].map((m) =>
      m[1]!.split(', ').map(Number),
    );
    expect(lists.map((l) => l.length)).toEqual([500, 500, 200]);
    expect(lists.flat()).toEqual(lone);
    // A flush over 250 partitions: no OR of more than 100 terms.
    const wide = confirmStatement(
      { dataset: 'd', table: 'e' },
      Array.from({ length: 250 }, (_, p) => rowsOf(p, [1])).flat(),
      days,
    );
    expect(widestOr(wide)).toBeLessThanOrEqual(100);
    expect((wide.match(/_kafka_topic = 't'/g) ?? []).length).toBe(250);
    expect(widestOr(sql)).toBeLessThanOrEqual(100);
  });
});
