/**
 * One refusal policy for every write mode, through the writer port and the drain: a row the sink refuses
 * becomes a `rejected` dead letter with the sink's message, the rest of its batch lands, and the
 * checkpoint moves past all of it.
 */
import { describe, expect, test } from 'vitest';
import { DrainError } from '../../functions/kernel/errors.js';
import { createMemoryLogger } from '../../functions/kernel/logger.js';
import type { DeadLetter, KafkaRecord, RowToWrite } from '../../functions/kernel/records.js';
import { createCdcWriter } from '../../functions/modes/cdc/cdc-writer.js';
import { testDrainOptions } from '../support/drain-options.js';
import {
  createMemoryCheckpoints,
  createMemoryDeadLetters,
  createMemorySink,
  createMemorySource,
  createMemoryStreamSink,
  record,
} from '../support/memory-ports.js';
import { runDrain, type TestPorts } from '../support/run-drain.js';

const refuse = (row: RowToWrite) =>
  row.record.offset % 3 === 1 ? `Field g: invalid GEOGRAPHY at offset ${row.record.offset}` : undefined;

function modes() {
  const deadLetters = createMemoryDeadLetters();
  const errorTableRows: DeadLetter[] = [];
  const sink = createMemorySink({ reject: refuse });
  const streams = createMemoryStreamSink();
  streams.refuseRows(refuse);
  return {
    'insert-all': { sink, deadLetters, landed: () => sink.rows },
    merge: {
      sink,
      deadLetters,
      errorTable: { write: async (letters: readonly DeadLetter[]) => void errorTableRows.push(...letters) },
      landed: () => sink.rows,
      inErrorTable: () => errorTableRows,
    },
    'storage-write': {
      streams,
      deadLetters,
      landed: () => streams.table,
      inErrorTable: () => streams.errorTable,
    },
  };
}

describe.each(['insert-all', 'merge', 'storage-write'] as const)('the %s writer', (mode) => {
  test('rows the sink refuses are rejected dead letters with its message; the rest land; the checkpoint moves', async () => {
    const chosen = modes()[mode];
    const log = new Map<string, KafkaRecord[]>([
      ['t~0', Array.from({ length: 9 }, (_, o) => record('t', 0, o, { n: o }))],
    ]);
    const checkpoints = createMemoryCheckpoints(Date.now);
    const ports: TestPorts = {
      source: createMemorySource(log),
      checkpoints,
      deadLetters: chosen.deadLetters,
      ...('streams' in chosen ? { streams: chosen.streams } : { sink: chosen.sink }),
      ...('errorTable' in chosen && typeof chosen.errorTable === 'object'
        ? { errorTable: chosen.errorTable }
        : {}),
    };
    const context = { logger: createMemoryLogger(), now: Date.now, signal: new AbortController().signal };
    const summary = await runDrain(ports, testDrainOptions, context);

    expect(summary).toMatchObject({
      stopReason: 'caught_up',
      recordsRead: 9,
      rowsWritten: 6,
      deadLettered: 3,
    });
    expect(chosen.landed().map((r) => r.record.offset)).toEqual([0, 2, 3, 5, 6, 8]);
    expect(chosen.deadLetters.letters.map((l) => [l.record.offset, l.kind, l.message])).toEqual(
      [1, 4, 7].map((o) => [o, 'rejected', `Field g: invalid GEOGRAPHY at offset ${o}`]),
    );
    if ('inErrorTable' in chosen) {
      expect(
        chosen
          .inErrorTable()
          .map((l) => l.record.offset)
          .sort(),
      ).toEqual([1, 4, 7]);
    }
    expect(checkpoints.checkpoint({ topic: 't', partition: 0 })).toBe(9);
    // A second run has nothing to do.
    const again = await runDrain(ports, { ...testDrainOptions, runId: 'run-2' }, context);
    expect(again).toMatchObject({ stopReason: 'caught_up', recordsRead: 0 });
  });
});

describe('the cdc writer', () => {
  /** A change sink double: keeps each key's latest change by sequence number, refuses some rows. */
  function changeSink(refused: (row: RowToWrite) => string | undefined = refuse) {
    const table = new Map<string, { row: Record<string, unknown>; seq: string }>();
    const errorTable: DeadLetter[] = [];
    const readyFor: string[][] = [];
    return {
      table,
      errorTable,
      readyFor,
      ports: {
        ready: async (key: readonly string[]) => void readyFor.push([...key]),
        changes: {
          startEncoding: async () => undefined, // every record the general path's
          async apply(rows: readonly RowToWrite[], letters: readonly DeadLetter[]) {
            const rejected: DeadLetter[] = [];
            for (const r of rows) {
              const reason = refused(r);
              if (reason !== undefined) {
                rejected.push({ record: r.record, kind: 'rejected', message: reason });
                continue;
              }
              const key = String(r.row.id);
              const seq = String(r.row._CHANGE_SEQUENCE_NUMBER);
              const held = table.get(key);
              if (held !== undefined && held.seq > seq) continue;
              if (r.row._CHANGE_TYPE === 'DELETE') table.set(key, { row: {}, seq });
              else table.set(key, { row: r.row, seq });
            }
            errorTable.push(...letters, ...rejected);
            return rejected;
          },
          close() {},
        },
      },
    };
  }
  const batch = (records: KafkaRecord[]) => ({
    lease: { topic: 't', partition: 0, epoch: 1 } as never,
    fromOffset: records[0]!.offset,
    nextOffset: records.at(-1)!.offset + 1,
    records,
  });
  const keyed = (offset: number, key: string, value: object | null): KafkaRecord => ({
    ...record('t', 0, offset, {}),
    key: Buffer.from(JSON.stringify({ id: key })),
    value: value === null ? null : Buffer.from(JSON.stringify(value)),
  });

  test('refused rows are rejected dead letters, in the error table and on Pub/Sub; the rest apply', async () => {
    const sink = changeSink();
    const deadLetters = createMemoryDeadLetters();
    const writer = createCdcWriter({
      ...sink.ports,
      deadLetters,
      now: Date.now,
      logger: createMemoryLogger(),
      policy: { format: 'upsert', primaryKey: ['id'] },
    });
    const records = Array.from({ length: 9 }, (_, o) => keyed(o, `k${o % 4}`, { id: `k${o % 4}`, n: o }));
    const written = await writer.write(batch(records), new AbortController().signal);
    expect(written).toEqual({ rows: 6, deadLetters: 3, tombstones: 0 });
    expect(deadLetters.letters.map((l) => [l.record.offset, l.kind])).toEqual([
      [1, 'rejected'],
      [4, 'rejected'],
      [7, 'rejected'],
    ]);
    expect(sink.errorTable.map((l) => l.record.offset)).toEqual([1, 4, 7]);
    // k0: offsets 0, 4 (refused), 8 → 8; k1: 1 (refused), 5 → 5; k2: 2, 6; k3: 3, 7 (refused) → 3.
    expect(new Map([...sink.table].map(([k, v]) => [k, v.row.n]))).toEqual(
      new Map([
        ['k0', 8],
        ['k1', 5],
        ['k2', 6],
        ['k3', 3],
      ]),
    );
    expect(sink.readyFor).toEqual([['id']]);
  });

  test("Debezium without BQ_PRIMARY_KEY: the key's fields are the primary key; a replay changes nothing", async () => {
    const sink = changeSink(() => undefined);
    const writer = createCdcWriter({
      ...sink.ports,
      deadLetters: createMemoryDeadLetters(),
      now: Date.now,
      logger: createMemoryLogger(),
      policy: { format: 'debezium', primaryKey: [] },
    });
    const event = (op: string, before: object | null, after: object | null) => ({ op, before, after });
    const records = [
      keyed(10, 'a', event('c', null, { id: 'a', n: 1 })),
      keyed(11, 'a', event('u', { id: 'a', n: 1 }, { id: 'a', n: 2 })),
      keyed(12, 'b', event('c', null, { id: 'b', n: 3 })),
      keyed(13, 'b', event('d', { id: 'b', n: 3 }, null)),
      keyed(14, 'b', null),
    ];
    expect(await writer.write(batch(records), new AbortController().signal)).toEqual({
      rows: 4,
      deadLetters: 0,
      tombstones: 1,
    });
    const state = () =>
      JSON.stringify([...sink.table].map(([k, v]) => [k, v.row.n, v.row._kafka_offset, v.seq]));
    const after = state();
    // The same batch again, as after a crash before the checkpoint: the table does not change.
    await writer.write(batch(records.slice(0, 2)), new AbortController().signal);
    expect(state()).toBe(after);
    expect(sink.table.get('a')?.row.n).toBe(2);
    expect(sink.table.get('b')?.row).toEqual({});
    expect(sink.readyFor[0]).toEqual(['id']);
  });

  test('a transient failure of the appends is tried again (harmless: the same changes, the same numbers)', async () => {
    const sink = changeSink(() => undefined);
    let failures = 2;
    const apply = sink.ports.changes.apply;
    sink.ports.changes.apply = async (rows, letters) => {
      if (failures-- > 0) throw new DrainError('bigquery storage write: UNAVAILABLE', { retriable: true });
      return apply(rows, letters);
    };
    const logger = createMemoryLogger();
    const writer = createCdcWriter({
      ...sink.ports,
      deadLetters: createMemoryDeadLetters(),
      now: Date.now,
      logger,
      retry: { attempts: 5, initialDelayMs: 1, maxDelayMs: 1 },
      policy: { format: 'upsert', primaryKey: ['id'] },
    });
    const written = await writer.write(
      batch([keyed(0, 'k', { id: 'k', n: 1 })]),
      new AbortController().signal,
    );
    expect(written.rows).toBe(1);
    expect(sink.table.get('k')?.row.n).toBe(1);
    expect(logger.lines.filter((l) => l.message === 'applying the changes failed; again')).toHaveLength(2);
  });
});
