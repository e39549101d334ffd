/**
 * Offsets an operator's forward seek (`seek --allow-forward`) passed over: never drained. A later seek
 * back makes the checkpoint go through them again, and `replayUntil` (what the tables may hold, for
 * storage-write's "not written twice") then spans them, yet they are no replay: their records are new to the
 * tables, their latency counts, and the freshness of a replaying partition is measured from the first of
 * them (issue #78: counted as a replay, they were left out of freshness and the gap was hidden).
 *
 * Kept on the partition's document by the seeks alone (never by a commit): a range is `pending` once a
 * seek back put the checkpoint at or below it, and drained once the checkpoint passed it, which the next
 * seek, or a run at its lease, works out from where the checkpoint stands (`settleUndrained`).
 */
export interface UndrainedRange {
  readonly from: number;
  readonly to: number;
  /** The checkpoint stood at or below `from` since the range was passed over: draining goes through it. */
  readonly pending: boolean;
}

/** The ranges a partition keeps (the oldest dropped first: an operator's forward seeks are rare). */
export const undrainedKept = 20;

/** The ranges as they stand with the checkpoint at `checkpoint`: pending ones it passed were drained. */
export function settleUndrained(ranges: readonly UndrainedRange[], checkpoint: number): UndrainedRange[] {
  const settled: UndrainedRange[] = [];
  for (const range of ranges) {
    if (!range.pending) settled.push(range);
    else if (checkpoint < range.to)
      settled.push(checkpoint > range.from ? { ...range, from: checkpoint } : range);
  }
  return settled;
}

/**
 * An operator's seek from `from` (null: never drained) to `to`, as the ranges record it. `replayUntil`:
 * offsets below it were drained before (a replay's), so a forward seek within a replay passes over only
 * what lies beyond it, and the pending ranges it jumps.
 */
export function seekUndrained(
  ranges: readonly UndrainedRange[],
  from: number | null,
  to: number,
  replayUntil = 0,
): UndrainedRange[] {
  if (from === null || to === from) return [...ranges];
  const settled = settleUndrained(ranges, from);
  if (to > from) {
    const passed: UndrainedRange[] = [];
    for (const r of settled) {
      if (!r.pending || r.from >= to) passed.push(r);
      else {
        passed.push({ from: r.from, to: Math.min(r.to, to), pending: false });
        if (r.to > to) passed.push({ from: to, to: r.to, pending: true });
      }
    }
    const start = Math.max(from, replayUntil);
    if (start < to) passed.push({ from: start, to, pending: false });
    return passed.slice(-undrainedKept);
  }
  const after: UndrainedRange[] = [];
  for (const range of settled) {
    if (range.pending || range.to <= to) after.push(range);
    else if (range.from >= to) after.push({ ...range, pending: true });
    else after.push({ from: range.from, to, pending: false }, { from: to, to: range.to, pending: true });
  }
  return after;
}

/** A partition's line says where its replay ends while it lies ahead of `position` (freshness-phase.ts). */
export function markReplay(
  line: { replayUntil?: number },
  replayUntil: number,
  ranges: readonly UndrainedRange[],
  position: number,
): void {
  const end = replayEnd(replayUntil, ranges, position);
  if (end > position) line.replayUntil = end;
  else delete line.replayUntil;
}

/** Whether the record at `offset` was never drained (a pending range holds it). */
export function neverDrained(ranges: readonly UndrainedRange[], offset: number): boolean {
  return ranges.some((r) => r.pending && r.from <= offset && offset < r.to);
}

/**
 * Where the replay of a partition whose checkpoint stands at `position` ends, for its freshness: at
 * `replayUntil`, or at the first offset from `position` on that was never drained.
 */
export function replayEnd(replayUntil: number, ranges: readonly UndrainedRange[], position: number): number {
  let end = replayUntil;
  for (const r of ranges) if (r.pending && r.to > position) end = Math.min(end, Math.max(r.from, position));
  return end;
}

/** A partition's replay as a run sees it from its lease at `position` (partition-lease.ts). */
export function replayOf(replayUntil: number, ranges: readonly UndrainedRange[], position: number) {
  const pending = settleUndrained(ranges, position);
  return {
    /** The record at `offset` was written before an operator's seek back (left out of latency). */
    replayed: (offset: number) => offset < replayUntil && !neverDrained(pending, offset),
    /** The line's `replayUntil`: where the replay from `from` ends, while it lies ahead. */
    mark: (line: { replayUntil?: number }, from: number) => markReplay(line, replayUntil, pending, from),
    /** Where the replay from `from` ends. */
    endFrom: (from: number) => replayEnd(replayUntil, pending, from),
  };
}
