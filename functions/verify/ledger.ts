import type { LedgerEntry } from './reconcile.js';

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
