/**
 * The continuity ledger's entries as they are read back (verify) and rolled up (the checkpoints adapter):
 * one shape, one roll-up.
 */
export interface LedgerEntry {
  readonly from: number;
  readonly to: number;
  readonly records: number;
  readonly rows: number;
  readonly deadLetters: number;
  /** Tombstones skipped under TOMBSTONES=skip. */
  readonly tombstones: number;
  /** Records the route's transform dropped. */
  readonly filtered: number;
  readonly lost: boolean;
  /** An operator moved the checkpoint here (seek): history is reconciled from its `to` on. */
  readonly reset?: boolean;
  /** A roll-up of older entries (see rollUpLedger): their sums, and what was wrong among them. */
  readonly rollup?: boolean;
  /** How many commits the entry stands for (a roll-up: many; otherwise one). */
  readonly commits?: number;
  /** Offsets lost to retention inside the range (a roll-up; a single entry says `lost` instead). */
  readonly lostOffsets?: number;
  /** Holes and overlaps found among the entries a roll-up folded, and how many offsets the holes span. */
  readonly gaps?: readonly string[];
  readonly holeOffsets?: number;
}

/**
 * Folds ledger entries (in commit order, an earlier roll-up first if any) into one: the range they cover,
 * their sums, and the holes and overlaps among them, so that history stays checkable after its entries
 * are gone. Entries before an operator's reset no longer count (verify reconciles from the reset on).
 */
export function rollUpLedger(entries: readonly LedgerEntry[]): LedgerEntry {
  const lastReset = entries.findLastIndex((e) => e.reset === true);
  const kept = entries.slice(lastReset + 1).filter((e) => e.to > e.from || e.records > 0 || e.rollup);
  const start = lastReset >= 0 ? entries[lastReset]!.to : (kept[0]?.from ?? 0);
  const gaps: string[] = [];
  let at = start;
  let holeOffsets = 0;
  for (const e of kept) {
    gaps.push(...(e.gaps ?? []));
    holeOffsets += e.holeOffsets ?? 0;
    if (e.from > at) {
      gaps.push(`[${at}, ${e.from})`);
      holeOffsets += e.from - at;
    }
    if (e.from < at) gaps.push(`overlap [${e.from}, ${at})`);
    at = Math.max(at, e.to);
  }
  const sum = (pick: (e: LedgerEntry) => number) => kept.reduce((n, e) => n + pick(e), 0);
  return {
    from: start,
    to: at,
    records: sum((e) => e.records),
    rows: sum((e) => e.rows),
    deadLetters: sum((e) => e.deadLetters),
    tombstones: sum((e) => e.tombstones),
    filtered: sum((e) => e.filtered),
    lost: false,
    lostOffsets: sum((e) => (e.lost ? e.to - e.from : (e.lostOffsets ?? 0))),
    commits: sum((e) => e.commits ?? 1),
    gaps,
    holeOffsets,
    rollup: true,
  };
}

/** A ledger document (a commit, a reset, or the roll-up of older ones) as reconcile reads it. */
export function ledgerEntryOf(d: FirebaseFirestore.DocumentSnapshot): LedgerEntry {
  const from = d.get('from') as number;
  const to = d.get('to') as number;
  return {
    from,
    to,
    records: (d.get('records') as number | undefined) ?? to - from,
    rows: d.get('rows') as number,
    deadLetters: d.get('deadLetters') as number,
    tombstones: (d.get('tombstones') as number | undefined) ?? 0,
    filtered: (d.get('filtered') as number | undefined) ?? 0,
    lost: d.get('lost') === true,
    reset: d.get('reset') === true,
    ...(d.get('rollup') === true
      ? {
          rollup: true,
          commits: d.get('commits') as number,
          lostOffsets: (d.get('lostOffsets') as number | undefined) ?? 0,
          gaps: (d.get('gaps') as string[] | undefined) ?? [],
          holeOffsets: (d.get('holeOffsets') as number | undefined) ?? 0,
        }
      : {}),
  };
}
