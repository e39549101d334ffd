import { describe, expect, test } from 'vitest';
import { checkpointLines, deadLetterLines, summaryLines, tableLines } from '../../demo/demo-tables.js';
import {
  ageText,
  durationText,
  statusLines,
  type TableVerdict,
  verifyLines,
} from '../../functions/cli/human-tables.js';
import { terminalWidth, textTable } from '../../functions/cli/text-table.js';
import type { RunSummary } from '../../functions/kernel/summary.js';
import type { PartitionStatus } from '../../functions/status/partition-status.js';

// Worst cases an operator meets: long topic and table names, big numbers, many gaps, long holders.
const topic = `orders.eu-west.${'x'.repeat(60)}`;
const verdict = (
  partition: number,
  bad: boolean,
  table = 'analytics_prod.orders_enriched_v2',
): TableVerdict => ({
  table,
  topic,
  partition,
  from: 0,
  checkpoint: 123_456_789_012,
  commits: 98_765,
  ledgerRows: 123_456_000_000,
  deadLetters: 456_789,
  tombstones: 12,
  filtered: 7,
  skipped: 3,
  lost: 0,
  tableRows: bad ? 123_455_999_000 : 123_456_000_000,
  duplicates: bad ? 17 : 0,
  missingRows: bad ? 1_017 : 0,
  replayed: 4,
  replayedMissing: 0,
  unknownRows: 0,
  gaps: bad ? Array.from({ length: 30 }, (_, i) => `[${i * 1000}, ${i * 1000 + 5})`) : [],
  errorTableRows: 456_789,
  errorTableDuplicates: 0,
  ok: !bad,
});
const status = (partition: number, alerts: string[], paused = false): PartitionStatus => ({
  topic,
  table: partition % 2 === 0 ? 'analytics_prod.orders_enriched_v2' : 'analytics_prod.payments',
  partition,
  checkpoint: 123_456_789_012,
  highWatermark: 123_456_799_012,
  logStart: 1_000,
  lag: 10_000,
  freshnessSeconds: 3_725,
  replayUntil: null,
  paused,
  leaseOwner: 'orders-drain-x8k2p/run-mx6e1zm7-4f2a/task-17',
  leaseExpiresAt: '2026-12-03T18:01:02.345Z',
  lastProgressAt: '2026-12-03T18:00:02.345Z',
  openAlerts: alerts,
  replayed: 12,
});

function expectFits(lines: string[], width: number) {
  expect(lines.length).toBeGreaterThan(1);
  for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(width);
}

describe('human tables fit a 120-column terminal', () => {
  test('verify: at most 120 wide, the bad partition marked with its problems in words', () => {
    const lines = verifyLines([verdict(0, false), verdict(1, true, 'analytics_prod.payments')], 120, false);
    expectFits(lines, 120);
    expect(lines[0]).toMatch(/^ {2}partition +table +checkpoint +rows +in table +dead letters +problem$/);
    expect(lines[1]).toMatch(/^ {2}orders/);
    expect(lines[2]).toMatch(/^✗ orders.*1,017 rows missing; 17 dup…$|^✗ orders.*ledger gaps/);
    expect(lines[2]).toContain('123,455,999,000');
    expect(lines.join('\n')).not.toContain('(index)');
    expect(lines.join('\n')).not.toContain("'");
  });

  test('verify --wide shows every column, uncut', () => {
    const lines = verifyLines([verdict(1, true)], terminalWidth(true), true);
    for (const header of ['from', 'commits', 'tombstones', 'skipped', 'lost', 'replayed', 'error table'])
      expect(lines[0]).toContain(header);
    expect(lines[1]).toContain('[29000, 29005)');
    expect(lines[1]).not.toContain('…');
  });

  test('status: at most 120 wide, paused and alerting partitions marked', () => {
    const lines = statusLines(
      [status(0, []), status(1, ['stalled', 'backlog']), status(2, [], true)],
      120,
      false,
    );
    expectFits(lines, 120);
    expect(lines[0]).toMatch(
      /^ {2}partition +table +checkpoint +lag +freshness +last progress +lease holder +replayed/,
    );
    expect(lines[1]).toContain('1.0 h');
    expect(lines[1]).toMatch(/^ {2}/);
    expect(lines[2]).toMatch(/^✗ .*stalled, backlog$/);
    expect(lines[3]).toMatch(/^✗ .*paused$/);
    expect(lines[1]).toContain('12-03 18:00:02');
  });

  test('latencies for a person', () => {
    expect([0, 850.4, 4_200, 59_999, 60_000, 3_600_000].map(durationText)).toEqual([
      '0 ms',
      '850 ms',
      '4.2 s',
      '60.0 s',
      '1 min',
      '1.0 h',
    ]);
  });

  test('ages for a person', () => {
    expect([null, 0, 59, 60, 3_599, 3_600, 86_399, 86_400 * 2.5].map(ageText)).toEqual([
      null,
      '0 s',
      '59 s',
      '1 min',
      '59 min',
      '1.0 h',
      '24.0 h',
      '2.5 d',
    ]);
  });

  test('demo: the run, the table, the dead letters and the checkpoints', () => {
    const summary = {
      stopReason: 'caught_up',
      durationMs: 5_912,
      recordsRead: 600,
      rowsWritten: 594,
      deadLettered: 6,
      commits: 4,
      partitions: [0, 1, 2, 3].map((partition) => ({
        topic,
        partition,
        from: 0,
        to: 150,
        lag: 0,
        read: 150,
        rowsWritten: 148,
        deadLettered: 2,
        ...(partition === 3
          ? { waiting: `a flush recorded by an earlier run ${'that BigQuery will not commit '.repeat(4)}` }
          : {}),
      })),
    } as unknown as RunSummary;
    const reason = `order.items[3].price: ${'a long reason from BigQuery '.repeat(10)}`;
    for (const lines of [
      summaryLines(summary, 120),
      tableLines(
        'demo.orders',
        [{ kafka_partition: 0, rows_in_table: 148, min_offset: 0, max_offset: 149 }],
        120,
      ),
      deadLetterLines('demo-dead-letters', [{ partition: '3', offset: '150', kind: 'schema', reason }], 120),
      checkpointLines(
        'pipelines/demo/partitions',
        [{ partition: `${topic}~0`, nextOffset: 150, rowsWritten: 148, deadLettered: 2 }],
        120,
      ),
    ])
      expectFits(lines, 120);
  });
});

describe('textTable', () => {
  test('numbers right-aligned, text left-aligned, nulls as -, no mark column without a problem test', () => {
    const lines = textTable(
      [
        { name: 'a', n: 5 },
        { name: 'longer', n: 12_345 },
        { name: 'c', n: null },
      ],
      [
        { header: 'name', value: (r) => r.name },
        { header: 'n', value: (r) => r.n },
      ],
      { width: 120 },
    );
    expect(lines).toEqual(['name         n', 'a            5', 'longer  12,345', 'c            -']);
  });

  test('only shrinkable columns are cut, and never below their header', () => {
    const lines = textTable(
      [{ a: 'x'.repeat(50), b: 'y'.repeat(50) }],
      [
        { header: 'a', value: (r) => r.a, shrink: 'first' },
        { header: 'b', value: (r) => r.b },
      ],
      { width: 70 },
    );
    expect(lines[1]).toBe(`${'x'.repeat(17)}…  ${'y'.repeat(50)}`);
    expect(lines[1]!.length).toBe(70);
  });

  test('the width of a terminal, else 120; none with --wide', () => {
    expect(terminalWidth(false, 120)).toBe(120);
    expect(terminalWidth(false, 200)).toBe(200);
    expect(terminalWidth(false, undefined)).toBe(120);
    expect(terminalWidth(true, 80)).toBe(Number.POSITIVE_INFINITY);
  });
});
