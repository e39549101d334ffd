import { describe, expect, test } from 'vitest';
import { planFetched } from '../../functions/drain/batch.js';
import type { DeadLetter, KafkaRecord } from '../../functions/kernel/records.js';
import { writeBatch } from '../../functions/modes/sink-writer.js';
import type { ErrorTable } from '../../functions/sinks/contracts.js';
import { createMemoryDeadLetters, createMemorySink, record } from '../support/memory-ports.js';

function records(): KafkaRecord[] {
  return [
    record('orders', 0, 0, { id: 'a' }),
    { ...record('orders', 0, 1, {}), value: Buffer.from('{not json') },
    record('orders', 0, 2, { id: 'refused' }),
    record('orders', 0, 3, { id: 'b' }),
  ];
}

const policy = { ingestedAt: new Date('2026-11-29T00:00:00Z'), tombstones: 'skip' as const };

describe('merge mode: the batch writes its dead letters to the error table before they are published', () => {
  test('every dead letter (undecodable, refused by BigQuery) reaches the error table, then Pub/Sub', async () => {
    const events: string[] = [];
    const written: DeadLetter[] = [];
    const errorTable: ErrorTable = {
      async write(letters) {
        events.push('error table');
        written.push(...letters);
      },
    };
    const deadLetters = createMemoryDeadLetters();
    const publish = deadLetters.publish;
    deadLetters.publish = async (letters) => {
      events.push('pub/sub');
      await publish(letters);
    };
    const sink = createMemorySink({
      reject: (row) => (row.row.id === 'refused' ? 'invalid: refused' : undefined),
    });
    const result = await writeBatch(records(), { sink, deadLetters, errorTable }, policy);
    expect(result).toEqual({ rows: 2, deadLetters: 2, tombstones: 0 });
    expect(events).toEqual(['error table', 'pub/sub']);
    expect(written.map((l) => [l.record.offset, l.kind]).sort()).toEqual([
      [1, 'decode'],
      [2, 'rejected'],
    ]);
    expect(deadLetters.letters.map((l) => l.record.offset)).toEqual([1, 2]);
  });

  test('an error table that fails fails the batch: nothing is published, the checkpoint cannot move', async () => {
    const deadLetters = createMemoryDeadLetters();
    const errorTable: ErrorTable = {
      async write() {
        throw new Error('error table down');
      },
    };
    await expect(
      writeBatch(records(), { sink: createMemorySink(), deadLetters, errorTable }, policy),
    ).rejects.toThrow('error table down');
    expect(deadLetters.letters).toEqual([]);
  });

  test('a batch without dead letters does not touch the error table', async () => {
    let calls = 0;
    const errorTable: ErrorTable = {
      async write() {
        calls++;
      },
    };
    const clean = [record('orders', 0, 0, { id: 'a' })];
    await writeBatch(
      clean,
      { sink: createMemorySink(), deadLetters: createMemoryDeadLetters(), errorTable },
      policy,
    );
    expect(calls).toBe(0);
  });
});

describe('planFetched: what a batch of a partition becomes', () => {
  const at = (offsets: number[]) => offsets.map((o) => record('t', 0, o, { o }));

  test('its commit moves the checkpoint past its last record, and on to the end of the fetch', () => {
    const plan = planFetched({ records: at([10, 11, 12, 14]), nextOffset: 17 }, 10, 100);
    expect([plan.batch?.records.map((r) => r.offset), plan.batch?.nextOffset]).toEqual([
      [10, 11, 12, 14],
      17,
    ]);
    expect(plan.skipTo).toBeUndefined();
  });

  test('only what lies between the checkpoint and the end seen at start belongs to the run', () => {
    const plan = planFetched({ records: at([8, 9, 10, 11, 12]), nextOffset: 13 }, 9, 11);
    expect([plan.batch?.records.map((r) => r.offset), plan.batch?.nextOffset]).toEqual([[9, 10], 11]);
  });

  test('a fetch of markers only (no record in range) moves the checkpoint past them, never past the end', () => {
    expect(planFetched({ records: [], nextOffset: 15 }, 10, 100)).toEqual({ skipTo: 15 });
    expect(planFetched({ records: [], nextOffset: 15 }, 10, 12)).toEqual({ skipTo: 12 });
    expect(planFetched({ records: at([8, 9]), nextOffset: 10 }, 10, 100)).toEqual({});
  });
});
