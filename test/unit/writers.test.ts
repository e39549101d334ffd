/**
 * One refusal policy for every write mode, through the writer port and the drain: a row the sink refuses
 * becomes a `rejected` dead letter with the sink's message, the rest of its batch lands, and the
 * checkpoint moves past all of it.
 */
import { describe, expect, test } from 'vitest';
import { createMemoryLogger } from '../../functions/drain/logger.js';
import type { DeadLetter, KafkaRecord, RowToWrite } from '../../functions/drain/types.js';
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
