/**
 * What `verify` and `status` print on a terminal: the columns an operator scans first, a partition with a
 * problem marked `✗` and its problem in words. `--wide` adds every other column; `--json` prints all.
 */
import type { PartitionStatus } from '../status/partition-status.js';
import type { PartitionVerdict } from '../verify/reconcile.js';
import { type Column, textTable } from './text-table.js';

export type TableVerdict = PartitionVerdict & { readonly table: string };

/** What is wrong with a partition, in words (empty when nothing is). */
export function verdictProblems(v: PartitionVerdict): string {
  const problems = [
    v.gaps.length > 0 ? `ledger gaps ${v.gaps.join(' ')}` : '',
    v.missingRows > 0 ? `${v.missingRows} rows missing` : '',
    v.duplicates > 0 ? `${v.duplicates} duplicates` : '',
    v.replayedMissing > 0 ? `${v.replayedMissing} replayed letters missing` : '',
    v.unknownRows > 0 ? `${v.unknownRows} rows not in the ledger` : '',
    (v.errorTableDuplicates ?? 0) > 0 ? `${v.errorTableDuplicates} error-table duplicates` : '',
    (v.beyondCheckpoint ?? 0) > 0 ? `${v.beyondCheckpoint} rows beyond the checkpoint` : '',
  ].filter((p) => p !== '');
  if (problems.length === 0 && !v.ok) problems.push('does not reconcile (see --json)');
  return problems.join('; ');
}

export function verifyLines(verdicts: readonly TableVerdict[], width: number, wide: boolean): string[] {
  const several = new Set(verdicts.map((v) => v.table)).size > 1;
  const columns: Column<TableVerdict>[] = [
    { header: 'partition', value: (v) => `${v.topic}~${v.partition}`, shrink: 'first' },
    ...(several || wide
      ? [{ header: 'table', value: (v: TableVerdict) => v.table, shrink: 'first' as const }]
      : []),
    ...(wide ? [{ header: 'from', value: (v: TableVerdict) => v.from }] : []),
    { header: 'checkpoint', value: (v) => v.checkpoint },
    { header: 'rows', value: (v) => v.ledgerRows },
    { header: 'in table', value: (v) => v.tableRows },
    { header: 'dead letters', value: (v) => v.deadLetters },
    ...(wide
      ? [
          { header: 'commits', value: (v: TableVerdict) => v.commits },
          { header: 'tombstones', value: (v: TableVerdict) => v.tombstones },
          { header: 'filtered', value: (v: TableVerdict) => v.filtered },
          { header: 'skipped', value: (v: TableVerdict) => v.skipped },
          { header: 'lost', value: (v: TableVerdict) => v.lost },
          { header: 'replayed', value: (v: TableVerdict) => v.replayed },
          { header: 'error table', value: (v: TableVerdict) => v.errorTableRows },
        ]
      : []),
    { header: 'problem', value: verdictProblems, shrink: 'last' },
  ];
  return textTable(verdicts, columns, { width, problem: (v) => !v.ok });
}

export function statusLines(partitions: readonly PartitionStatus[], width: number, wide: boolean): string[] {
  const several = new Set(partitions.map((p) => p.table)).size > 1;
  const columns: Column<PartitionStatus>[] = [
    { header: 'partition', value: (p) => `${p.topic}~${p.partition}`, shrink: 'first' },
    ...(several || wide
      ? [{ header: 'table', value: (p: PartitionStatus) => p.table, shrink: 'first' as const }]
      : []),
    { header: 'checkpoint', value: (p) => p.checkpoint },
    ...(wide ? [{ header: 'high', value: (p: PartitionStatus) => p.highWatermark }] : []),
    { header: 'lag', value: (p) => p.lag },
    { header: 'freshness', value: (p) => ageText(p.freshnessSeconds) },
    { header: 'last progress', value: (p) => shortTime(p.lastProgressAt) },
    { header: 'lease holder', value: (p) => p.leaseOwner, shrink: 'first' },
    ...(wide
      ? [
          { header: 'lease expires', value: (p: PartitionStatus) => shortTime(p.leaseExpiresAt) },
          { header: 'log start', value: (p: PartitionStatus) => p.logStart },
          // After a backward seek: the offset the replay runs to (freshness counts from there).
          { header: 'replaying to', value: (p: PartitionStatus) => p.replayUntil },
        ]
      : []),
    { header: 'replayed', value: (p) => p.replayed },
    { header: 'attention', value: attention, shrink: 'last' },
  ];
  return textTable(partitions, columns, { width, problem: (p) => attention(p) !== '' });
}

/** Paused, open alerts: what an operator must look at. */
function attention(p: PartitionStatus): string {
  return [p.paused ? 'paused' : '', ...p.openAlerts].filter((a) => a !== '').join(', ');
}

/** An age for a person: `0 s`, `45 s`, `12 min`, `3.2 h`, `2.1 d`; null when unknown. */
export function ageText(seconds: number | null): string | null {
  if (seconds === null) return null;
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3_600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 86_400) return `${(seconds / 3_600).toFixed(1)} h`;
  return `${(seconds / 86_400).toFixed(1)} d`;
}

/** A latency for a person: `850 ms`, `4.2 s`, then as `ageText`. */
export function durationText(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  return ageText(Math.floor(ms / 1_000))!;
}

/** `2026-12-03T18:01:02.345Z` → `12-03 18:01:02` (UTC, as stored). */
function shortTime(iso: string | null): string | null {
  if (iso === null) return null;
  const match = /^\d{4}-(\d\d-\d\d)T(\d\d:\d\d:\d\d)/.exec(iso);
  return match ? `${match[1]} ${match[2]}` : iso;
}
