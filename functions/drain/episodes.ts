/**
 * Gap alerts as episodes: each condition opens once, is remembered in the partition's state across runs
 * and tasks, and resolves once when it ends. Pure: given what a run saw of a partition, it returns the
 * alerts to send and the state to keep.
 */
import type { Alert, AlertKind, LivenessState, OpenEpisode } from '../kernel/liveness.js';

export type { Alert, AlertKind, LivenessState, OpenEpisode };

export interface Observation {
  pipeline: string;
  topic: string;
  partition: number;
  now: number;
  logStart: number;
  end: number;
  /**
   * Following the log: the end read at the run's end. Only the backlog threshold reads it: a follower
   * always leaves its last linger's records, so growth and stall keep to the end seen at the start.
   */
  liveEnd?: number;
  /** The checkpoint when the run started and when it ended. */
  checkpointBefore: number | null;
  checkpointAfter: number | null;
  /** When the checkpoint last moved (before this run, or now if it moved in this run). */
  lastProgressAt: number | null;
  /** Set when the checkpoint was below the log start at the start of the run. */
  lost?: { from: number; to: number; skipped: boolean };
  /** Why the run held the partition's records back on purpose (a load quota spent): backlog opens. */
  heldBack?: string;
}

export interface Thresholds {
  idleSeconds: number;
  stallSeconds: number;
  backlogRecords: number;
  /** Backlog also opens when the lag grew over this many consecutive runs. */
  backlogGrowingRuns: number;
}

/** The thresholds of a pipeline's settings (IDLE_ALERT_SECONDS, STALL_ALERT_SECONDS, BACKLOG_ALERT_RECORDS). */
export function thresholdsOf(config: {
  readonly idleAlertSeconds: number;
  readonly stallAlertSeconds: number;
  readonly backlogAlertRecords: number;
}): Thresholds {
  return {
    idleSeconds: config.idleAlertSeconds,
    stallSeconds: config.stallAlertSeconds,
    backlogRecords: config.backlogAlertRecords,
    backlogGrowingRuns: 3,
  };
}

export const emptyLiveness: LivenessState = {
  openAlerts: {},
  highWatermark: null,
  highWatermarkChangedAt: null,
  lagHistory: [],
  pendingAlerts: [],
};

export function evaluateEpisodes(
  previous: LivenessState,
  seen: Observation,
  thresholds: Thresholds,
): { state: LivenessState; alerts: Alert[] } {
  const open = { ...previous.openAlerts };
  const alerts: Alert[] = [];
  const iso = (ms: number) => new Date(ms).toISOString();
  const emit = (kind: AlertKind, state: 'open' | 'resolved', episode: OpenEpisode) => {
    alerts.push({
      kind,
      state,
      pipeline: seen.pipeline,
      topic: seen.topic,
      partition: seen.partition,
      detail: episode.detail,
      since: iso(episode.since),
      observedAt: iso(seen.now),
      ...(episode.lostFrom === undefined ? {} : { lostFrom: episode.lostFrom, lostTo: episode.lostTo }),
    });
  };
  const transition = (kind: AlertKind, holds: boolean, episode: () => OpenEpisode) => {
    const current = open[kind];
    if (holds && current === undefined) {
      open[kind] = episode();
      emit(kind, 'open', open[kind]!);
    } else if (!holds && current !== undefined) {
      emit(kind, 'resolved', current);
      delete open[kind];
    }
  };

  const moved = previous.highWatermark === null || seen.end !== previous.highWatermark;
  const highWatermarkChangedAt = moved ? seen.now : (previous.highWatermarkChangedAt ?? seen.now);
  const checkpoint = seen.checkpointAfter ?? seen.logStart;
  const lag = Math.max(0, seen.end - checkpoint);

  // Retention: records deleted before they were drained. Under `skip` the loss is recorded and the run
  // went on, so the episode opens and ends in the same run; under `fail` it stays open until an operator
  // moves the checkpoint.
  if (seen.lost !== undefined) {
    const { from, to, skipped } = seen.lost;
    transition('retention_gap', true, () => ({
      since: seen.now,
      detail: `records [${from}, ${to}) were deleted by retention before they were drained${skipped ? '; skipped' : ''}`,
      lostFrom: from,
      lostTo: to,
    }));
    if (skipped) transition('retention_gap', false, () => open.retention_gap!);
  } else {
    transition('retention_gap', false, () => open.retention_gap!);
  }

  const idleFor = seen.now - highWatermarkChangedAt;
  transition('idle', lag === 0 && idleFor >= thresholds.idleSeconds * 1000, () => ({
    since: highWatermarkChangedAt,
    detail: `no new record for ${Math.round(idleFor / 1000)} s`,
  }));

  const progressed = seen.checkpointAfter !== seen.checkpointBefore;
  const stuckFor = seen.lastProgressAt === null ? 0 : seen.now - seen.lastProgressAt;
  transition('stalled', lag > 0 && !progressed && stuckFor >= thresholds.stallSeconds * 1000, () => ({
    since: seen.lastProgressAt ?? seen.now,
    detail: `${lag} records available, checkpoint ${checkpoint} has not moved for ${Math.round(stuckFor / 1000)} s`,
  }));

  const lagHistory = [...previous.lagHistory, lag].slice(-(thresholds.backlogGrowingRuns + 1));
  const growing =
    lagHistory.length === thresholds.backlogGrowingRuns + 1 &&
    lagHistory.every((l, i) => i === 0 || l > lagHistory[i - 1]!);
  const heldBack = seen.heldBack;
  const liveLag = Math.max(lag, (seen.liveEnd ?? seen.end) - checkpoint);
  transition(
    'backlog',
    liveLag > 0 && (liveLag >= thresholds.backlogRecords || (lag > 0 && (growing || heldBack !== undefined))),
    () => ({
      since: seen.now,
      detail:
        heldBack !== undefined
          ? `${lag} records held back: ${heldBack}`
          : growing
            ? `lag grew over ${thresholds.backlogGrowingRuns} runs to ${lag}`
            : `${liveLag} records left after the run`,
    }),
  );

  return {
    state: {
      openAlerts: open,
      highWatermark: seen.end,
      logStart: seen.logStart,
      highWatermarkChangedAt,
      lagHistory,
      pendingAlerts: [...previous.pendingAlerts, ...alerts],
    },
    alerts,
  };
}
