/** What the drain remembers of a partition's health between runs, and the alerts it raises (see drain/episodes.ts). */
export type AlertKind = 'idle' | 'stalled' | 'retention_gap' | 'backlog';

export interface Alert {
  kind: AlertKind;
  state: 'open' | 'resolved';
  pipeline: string;
  topic: string;
  partition: number;
  detail: string;
  /** When the episode began (ISO-8601). */
  since: string;
  observedAt: string;
  lostFrom?: number;
  lostTo?: number;
}

export interface OpenEpisode {
  since: number;
  detail: string;
  lostFrom?: number;
  lostTo?: number;
}

/** What is kept in the partition's document between runs. */
export interface LivenessState {
  openAlerts: Partial<Record<AlertKind, OpenEpisode>>;
  highWatermark: number | null;
  /** The earliest offset still in the log when last seen. */
  logStart?: number | null;
  /** When the high watermark was last seen to move: the last time a record arrived, as far as we know. */
  highWatermarkChangedAt: number | null;
  /** Lag left after the last runs, newest last (at most a few). */
  lagHistory: number[];
  /** Alerts decided but not yet acknowledged by Pub/Sub: sent again by the next run. */
  pendingAlerts: Alert[];
}
