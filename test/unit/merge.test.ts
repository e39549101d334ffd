import { describe, expect, test } from 'vitest';
import type { RowToWrite } from '../../functions/kernel/records.js';
import {
  batchId,
  mergeStatement,
  offsetRanges,
  stagingTableName,
  timestampDays,
} from '../../functions/modes/merge/merge-statements.js';
import { toRow } from '../../functions/records/records.js';
import { record } from '../support/memory-ports.js';

function rows(spec: [string, number, number][]): RowToWrite[] {
  return spec.map(([t, p, o]) => toRow(record(t, p, o, { n: o }), new Date()) as RowToWrite);
}

const target = {
  dataset: 'ds',
  table: 'events',
  columns: ['n', '_kafka_topic', '_kafka_partition', '_kafka_offset'],
};

describe('merge mode', () => {
  test('batch ids are deterministic in run, attempt and offset ranges, whatever the row order', () => {
    const a = rows([
      ['t', 0, 5],
      ['t', 0, 6],
      ['t', 1, 9],
    ]);
    const b = rows([
      ['t', 1, 9],
      ['t', 0, 6],
      ['t', 0, 5],
    ]);
    expect(offsetRanges(a)).toEqual(['t:0:5-6', 't:1:9-9']);
    expect(batchId('run-1', 1, a)).toBe(batchId('run-1', 1, b));
    expect(batchId('run-1', 1, a)).toMatch(/^[0-9a-f]{24}$/);
    expect(batchId('run-2', 1, a)).not.toBe(batchId('run-1', 1, a));
    expect(batchId('run-1', 2, a)).not.toBe(batchId('run-1', 1, a));
    expect(
      batchId(
        'run-1',
        1,
        rows([
          ['t', 0, 5],
          ['t', 0, 7],
        ]),
      ),
    ).not.toBe(batchId('run-1', 1, a));
  });

  test("a run's staging table is named after the pipeline, the task and the run", () => {
    expect(stagingTableName('orders-eu', 3, 'exec-1-t3-abc')).toMatch(
      /^_kbd_staging_orders_eu_t3_[0-9a-f]{12}$/,
    );
    expect(stagingTableName('orders-eu', 3, 'exec-1-t3-abc')).toBe(
      stagingTableName('orders-eu', 3, 'exec-1-t3-abc'),
    );
    expect(stagingTableName('orders-eu', 3, 'exec-2-t3-abc')).not.toBe(
      stagingTableName('orders-eu', 3, 'exec-1-t3-abc'),
    );
  });

  test('a retried batch produces the same MERGE, pruned to the days of its Kafka timestamps', () => {
    const batch = rows([
      ['t', 0, 1],
      ['t', 0, 2],
    ]);
    const first = mergeStatement(target, 'stage', batchId('r', 1, batch), timestampDays(batch));
    const retried = mergeStatement(
      target,
      'stage',
      batchId('r', 1, [...batch].reverse()),
      timestampDays([...batch].reverse()),
    );
    expect(retried).toBe(first);
    const day = new Date(batch[0]!.record.timestamp).toISOString().slice(0, 10);
    expect(first).toContain(`T._kafka_timestamp >= TIMESTAMP('${day}T00:00:00.000Z')`);
    expect(first).toContain(`WHEN NOT MATCHED BY TARGET AND S._kbd_batch = '${batchId('r', 1, batch)}' THEN`);
    expect(first).toContain(
      'INSERT (`n`, `_kafka_topic`, `_kafka_partition`, `_kafka_offset`) VALUES (S.`n`,',
    );
    expect(first).not.toContain('WHEN MATCHED');
  });

  test('a batch id that is not a hex digest is never put into SQL', () => {
    expect(() => mergeStatement(target, 'stage', "x' OR TRUE --", { from: 'a', to: 'b' })).toThrow(
      RangeError,
    );
  });

  test('the day range covers every record and ends on the next midnight', () => {
    const [one, two] = rows([
      ['t', 0, 1],
      ['t', 0, 2],
    ]);
    const days = timestampDays([
      { ...one!, record: { ...one!.record, timestamp: Date.parse('2026-03-01T23:59:59Z') } },
      { ...two!, record: { ...two!.record, timestamp: Date.parse('2026-03-03T00:00:01Z') } },
    ]);
    expect(days).toEqual({ from: '2026-03-01T00:00:00.000Z', to: '2026-03-04T00:00:00.000Z' });
  });
});
