/**
 * Reconciliation of one partition: what the continuity ledger says was committed against what the target
 * table holds. Pure, so that every verdict is unit-tested.
 */
import type { LedgerEntry } from '../checkpoints/ledger-entry.js';
import type { TableStats } from '../sinks/table-stats.js';

export interface PartitionVerdict {
  topic: string;
  partition: number;
  from: number | null;
  checkpoint: number | null;
  commits: number;
  ledgerRows: number;
  deadLetters: number;
  tombstones: number;
  /** Records the route's transform dropped: in the ledger, not in the table. */
  filtered: number;
  skipped: number;
  lost: number;
  tableRows: number;
  duplicates: number;
  /** Rows the ledger says were written that the table does not have. */
  missingRows: number;
  /** Dead letters an operator's replay wrote into the table (the replay log), and how many it lacks. */
  replayed: number;
  replayedMissing: number;
  /** Offsets the table holds that were neither committed as rows nor replayed. */
  unknownRows: number;
  /** Offset ranges the ledger does not cover between its start and the checkpoint. */
  gaps: string[];
  /** storage-write mode: rows of the error table in the range, and how many of them repeat an offset. */
  errorTableRows?: number;
  errorTableDuplicates?: number;
  /** cdc mode: rows whose last change lies at or beyond the checkpoint (written, never committed). */
  beyondCheckpoint?: number;
  ok: boolean;
}

export function reconcile(
  partition: { topic: string; partition: number; checkpoint: number | null },
  ledger: readonly LedgerEntry[],
  table: TableStats,
  /** The error table's stats, where it holds each dead letter once (storage-write mode). */
  errorTable?: TableStats,
  /**
   * cdc mode: the table holds each key's last change, not a row per offset, so rows cannot be counted
   * against the ledger; instead no two rows may come from one offset, and none from beyond the checkpoint.
   */
  changes?: { readonly beyondCheckpoint: number },
  /**
   * The dead letters of the range that a replay wrote into the table (the replay log), and how many of
   * them the table holds: rows besides the committed ones, each once. Their letters stay in the error
   * table, each once, as the record of what failed.
   */
  replays: { readonly count: number; readonly held: number } = { count: 0, held: 0 },
): PartitionVerdict {
  // Entries are in commit order; after an operator's reset only what follows it is reconciled.
  const lastReset = ledger.findLastIndex((e) => e.reset === true);
  const sorted = ledger.slice(lastReset + 1).filter((e) => e.to > e.from || e.records > 0);
  if (lastReset >= 0) sorted.unshift({ ...ledger[lastReset]!, from: ledger[lastReset]!.to, reset: false });
  const gaps: string[] = sorted.flatMap((e) => [...(e.gaps ?? [])]);
  for (let i = 1; i < sorted.length; i++) {
    const previous = sorted[i - 1]!;
    const entry = sorted[i]!;
    if (entry.from > previous.to) gaps.push(`[${previous.to}, ${entry.from})`);
    if (entry.from < previous.to) gaps.push(`overlap [${entry.from}, ${previous.to})`);
  }
  const last = sorted.at(-1);
  if (last !== undefined && partition.checkpoint !== null && last.to !== partition.checkpoint) {
    gaps.push(`ledger ends at ${last.to}, checkpoint is ${partition.checkpoint}`);
  }
  const sum = (pick: (e: LedgerEntry) => number) => sorted.reduce((n, e) => n + pick(e), 0);
  const ledgerRows = sum((e) => e.rows);
  const duplicates = table.rows - table.distinctOffsets;
  // The table's offsets less the replayed ones it holds: what the ledger's rows must account for.
  const committedOffsets = table.distinctOffsets - replays.held;
  const missingRows = changes === undefined ? Math.max(0, ledgerRows - committedOffsets) : 0;
  const unknownRows = changes === undefined ? Math.max(0, committedOffsets - ledgerRows) : 0;
  const replayedMissing = replays.count - replays.held;
  const lost = sum((e) => (e.lost ? e.to - e.from : (e.lostOffsets ?? 0)));
  const deadLetters = sum((e) => e.deadLetters);
  const lettersOk =
    errorTable === undefined ||
    (errorTable.rows === errorTable.distinctOffsets && errorTable.distinctOffsets === deadLetters);
  return {
    topic: partition.topic,
    partition: partition.partition,
    from: sorted[0]?.from ?? null,
    checkpoint: partition.checkpoint,
    commits: sum((e) => e.commits ?? 1),
    ledgerRows,
    deadLetters,
    tombstones: sum((e) => e.tombstones),
    filtered: sum((e) => e.filtered),
    skipped: sum((e) =>
      e.lost ? 0 : e.to - e.from - e.records - (e.lostOffsets ?? 0) - (e.holeOffsets ?? 0),
    ),
    lost,
    tableRows: table.rows,
    duplicates,
    missingRows,
    replayed: replays.count,
    replayedMissing,
    unknownRows,
    gaps,
    ...(errorTable === undefined
      ? {}
      : {
          errorTableRows: errorTable.rows,
          errorTableDuplicates: errorTable.rows - errorTable.distinctOffsets,
        }),
    ...(changes === undefined ? {} : { beyondCheckpoint: changes.beyondCheckpoint }),
    ok:
      gaps.length === 0 &&
      duplicates === 0 &&
      missingRows === 0 &&
      replayedMissing === 0 &&
      (changes === undefined
        ? committedOffsets === ledgerRows
        : table.distinctOffsets <= ledgerRows && changes.beyondCheckpoint === 0) &&
      lettersOk,
  };
}
