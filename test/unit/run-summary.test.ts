import { describe, expect, test } from 'vitest';
import {
  freshnessLines,
  partitionsWorthALook,
  stalePartitionsLogged,
  summaryLine,
} from '../../functions/drain/run-summary.js';
import { forEachLimited } from '../../functions/kernel/concurrency.js';
import type { PartitionSummary, RunSummary } from '../../functions/kernel/summary.js';
import { aRunSummary } from '../support/summaries.js';

const partition = (n: number, more: Partial<PartitionSummary> = {}): PartitionSummary => ({
  topic: `topic-${Math.floor(n / 100)}`,
  partition: n % 100,
  from: 0,
  to: 10,
  lag: 0,
  read: 10,
  rowsWritten: 10,
  deadLettered: 0,
  ...more,
});

describe('the run summary line', () => {
  test('up to 50 partitions, all of them are listed', () => {
    const all = Array.from({ length: 50 }, (_, n) => partition(n));
    expect(partitionsWorthALook(all)).toEqual({ listed: all, omitted: 0 });
  });

  test('of 1,000 partitions, errors and fencing first, then the largest lags, then the skipped; the rest counted', () => {
    const all = Array.from({ length: 1_000 }, (_, n) =>
      partition(
        n,
        n % 97 === 0 ? { lag: n } : n === 500 ? { skipped: 'error' } : n === 501 ? { skipped: 'paused' } : {},
      ),
    );
    const { listed, omitted } = partitionsWorthALook(all);
    expect(listed[0]).toMatchObject({ topic: 'topic-5', partition: 0, skipped: 'error' });
    expect(listed[1]!.lag).toBe(970);
    expect(listed.map((p) => p.lag).slice(1, 11)).toEqual([970, 873, 776, 679, 582, 485, 388, 291, 194, 97]);
    expect(listed.at(-1)).toMatchObject({ skipped: 'paused' });
    expect(listed).toHaveLength(12);
    expect(omitted).toBe(988);
  });

  test('a summary of 10,000 partitions is a line of a few KB, with its totals intact', () => {
    const partitions = Array.from({ length: 10_000 }, (_, n) => partition(n, { lag: n % 3 }));
    const summary = {
      event: 'run_summary',
      recordsRead: 100_000,
      partitionCount: 10_000,
      lag: 10_000,
      partitions,
    } as unknown as RunSummary;
    const line = JSON.stringify(summaryLine(summary));
    expect(line.length).toBeLessThan(16 * 1024);
    expect(JSON.parse(line)).toMatchObject({
      recordsRead: 100_000,
      partitionCount: 10_000,
      lag: 10_000,
      partitionsOmitted: 9_950,
    });
  });
});

describe('forEachLimited', () => {
  test('never more than the limit in flight, every item done, the first failure thrown after all settle', async () => {
    let inFlight = 0;
    let most = 0;
    const done: number[] = [];
    const work = async (n: number) => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, n % 3));
      inFlight--;
      if (n === 7) throw new Error('seven');
      done.push(n);
    };
    await expect(
      forEachLimited(
        Array.from({ length: 40 }, (_, n) => n),
        5,
        work,
      ),
    ).rejects.toThrow('seven');
    expect(most).toBe(5);
    expect(done.sort((a, b) => a - b)).toEqual(
      Array.from({ length: 40 }, (_, n) => n).filter((n) => n !== 7),
    );
  });
});

describe('the freshness lines before the summary', () => {
  const summary = (partitions: PartitionSummary[], more: Partial<RunSummary> = {}): RunSummary =>
    aRunSummary({
      stopReason: 'budget',
      partitionCount: partitions.length,
      freshnessSeconds: 3_600,
      latencyMs: { count: 3, p50: 10, p99: 20, max: 20 },
      partitions,
      ...more,
    });

  test('one line for the only table, and one per stale partition, stalest first, at most 20 of 1,000', () => {
    const all = Array.from({ length: 1_000 }, (_, n) =>
      partition(n, { freshnessSeconds: n % 3 === 0 ? n : 0, lag: n % 3 === 0 ? 5 : 0 }),
    );
    const lines = freshnessLines(summary(all), 'd.t');
    expect(lines[0]).toEqual({
      event: 'table_freshness',
      table: 'd.t',
      freshnessSeconds: 3_600,
      latencyMs: { count: 3, p50: 10, p99: 20, max: 20 },
    });
    const stale = lines.slice(1);
    expect(stale).toHaveLength(stalePartitionsLogged);
    expect(stale[0]).toEqual({
      event: 'partition_freshness',
      topic: 'topic-9',
      partition: 99,
      table: 'd.t',
      freshnessSeconds: 999,
      lag: 5,
    });
    expect(stale.map((l) => l.freshnessSeconds)).toEqual(Array.from({ length: 20 }, (_, i) => 999 - 3 * i));
  });

  test('several tables: one line each, from the summary’s table lines; nothing stale, no partition line', () => {
    const lines = freshnessLines(
      summary([partition(1, { freshnessSeconds: 0 }), partition(2, { freshnessSeconds: null })], {
        tables: [
          {
            table: 'd.a',
            stopReason: 'caught_up',
            recordsRead: 0,
            rowsWritten: 0,
            deadLettered: 0,
            lag: 0,
            partitionCount: 1,
            freshnessSeconds: 0,
            latencyMs: { count: 0, p50: null, p99: null, max: null },
          },
          {
            table: 'd.b',
            stopReason: 'budget',
            recordsRead: 0,
            rowsWritten: 0,
            deadLettered: 0,
            lag: 0,
            partitionCount: 1,
            freshnessSeconds: null,
            latencyMs: { count: 0, p50: null, p99: null, max: null },
          },
        ],
      }),
    );
    expect(lines.map((l) => [l.event, l.table, l.freshnessSeconds])).toEqual([
      ['table_freshness', 'd.a', 0],
      ['table_freshness', 'd.b', null],
    ]);
  });
});
