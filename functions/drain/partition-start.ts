import type { Watermarks } from '../kernel/records.js';

/**
 * Where a leased partition's drain starts, decided from its checkpoint and the log as seen at the start
 * of the run. Pure, so that each case is unit-tested:
 * - the checkpoint is below the log start: records were deleted by retention before they were drained
 *   (never a silent jump): under `fail` the partition waits for an operator, under `skip` the lost range
 *   is committed as lost and the drain goes on from the log start;
 * - the checkpoint is past the end (a topic deleted and re-created): an error, the partition waits;
 * - a partition never checkpointed has its start position pinned by a first, empty commit, so that
 *   `latest` or a time does not move on the next run;
 * - nothing to read: idle (an idle partition costs a run one lease round trip); otherwise read.
 */
export type StartPlan =
  | {
      readonly action: 'read' | 'idle';
      readonly from: number;
      readonly lost?: LostRange;
      readonly pin: boolean;
    }
  | { readonly action: 'retention-gap-wait'; readonly from: number; readonly lost: LostRange }
  | { readonly action: 'past-end'; readonly from: number };

export interface LostRange {
  readonly from: number;
  readonly to: number;
  readonly skipped: boolean;
}

export function planStart(
  start: number,
  /** The checkpoint the lease found (null: never checkpointed). */
  checkpoint: number | null,
  mark: Watermarks,
  retentionGapPolicy: 'fail' | 'skip',
): StartPlan {
  let from = start;
  let lost: LostRange | undefined;
  if (from < mark.logStart) {
    lost = { from, to: mark.logStart, skipped: retentionGapPolicy === 'skip' };
    if (!lost.skipped) return { action: 'retention-gap-wait', from, lost };
    from = mark.logStart;
  }
  if (from > mark.end) return { action: 'past-end', from };
  // A lost range, committed as such, is a first commit already.
  const pin = checkpoint === null && lost === undefined;
  return {
    action: from >= mark.end ? 'idle' : 'read',
    from,
    pin,
    ...(lost === undefined ? {} : { lost }),
  };
}
