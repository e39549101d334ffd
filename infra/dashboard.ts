/**
 * The pipeline's dashboard, in the order an operator asks: how fresh is it against its target, and how
 * much error budget is left; which tables and partitions are stalest; how long records take; then rows,
 * dead letters, runs, alerts and lag.
 */
export interface DashboardMetrics {
  readonly freshness: string;
  readonly tableFreshness: string;
  readonly partitionFreshness: string;
  readonly latencyP50: string;
  readonly latencyP99: string;
  readonly rows: string;
  readonly deadLetters: string;
  readonly runs: string;
  readonly alerts: string;
  readonly lag: string;
  /** The freshness SLO's full name (`projects/…/services/…/serviceLevelObjectives/freshness`). */
  readonly slo: string;
  /** The dispatcher's decisions, when it is on. */
  readonly dispatchedTasks?: string;
}

export function dashboardJson(pipelineId: string, targetSeconds: number, m: DashboardMetrics): string {
  const user = (metric: string) => `metric.type="logging.googleapis.com/user/${metric}"`;
  return JSON.stringify({
    displayName: `kafka-bigquery-drain: ${pipelineId}`,
    mosaicLayout: {
      columns: 12,
      tiles: [
        tile(0, 0, `freshness at run ends (max; target ${targetSeconds} s)`, user(m.freshness), {
          aligner: 'ALIGN_PERCENTILE_99',
          reducer: 'REDUCE_MAX',
          thresholds: [{ value: targetSeconds, label: 'target', color: 'RED', direction: 'ABOVE' }],
        }),
        tile(6, 0, 'freshness SLO: error budget left', `select_slo_budget_fraction("${m.slo}")`, {}),
        tile(0, 4, 'freshness by table (max)', user(m.tableFreshness), {
          aligner: 'ALIGN_PERCENTILE_99',
          reducer: 'REDUCE_MAX',
          groupBy: 'metric.label.table',
        }),
        tile(6, 4, 'stalest partitions (top 10)', user(m.partitionFreshness), {
          aligner: 'ALIGN_PERCENTILE_99',
          top: 10,
        }),
        tile(0, 8, 'latency p50 (ms)', user(m.latencyP50), {
          aligner: 'ALIGN_PERCENTILE_50',
          reducer: 'REDUCE_MAX',
        }),
        tile(6, 8, 'latency p99 (ms)', user(m.latencyP99), {
          aligner: 'ALIGN_PERCENTILE_99',
          reducer: 'REDUCE_MAX',
        }),
        tile(0, 12, 'rows written', user(m.rows), { aligner: 'ALIGN_DELTA' }),
        tile(6, 12, 'dead letters', user(m.deadLetters), { aligner: 'ALIGN_DELTA' }),
        tile(0, 16, 'runs by stop reason', user(m.runs), {
          aligner: 'ALIGN_SUM',
          reducer: 'REDUCE_SUM',
          groupBy: 'metric.label.stop_reason',
        }),
        tile(6, 16, 'alerts by kind', user(m.alerts), {
          aligner: 'ALIGN_SUM',
          reducer: 'REDUCE_SUM',
          groupBy: 'metric.label.kind',
        }),
        tile(0, 20, 'lag left after runs', user(m.lag), { aligner: 'ALIGN_DELTA' }),
        ...(m.dispatchedTasks === undefined
          ? []
          : [
              tile(6, 20, 'tasks the dispatcher launched', user(m.dispatchedTasks), {
                aligner: 'ALIGN_PERCENTILE_99',
                reducer: 'REDUCE_MAX',
              }),
            ]),
      ],
    },
  });
}

/** What an overview shows of one pipeline. */
export interface OverviewEntry {
  readonly pipelineId: string;
  readonly targetSeconds: number;
  readonly metrics: DashboardMetrics;
}

/**
 * One dashboard across pipelines, freshness first: each pipeline's freshness at run ends against its
 * target, then each one's error budget left, then its dead letters and its runs by stop reason. Each
 * pipeline keeps its own dashboard for the rest.
 */
export function overviewJson(title: string, pipelines: readonly OverviewEntry[]): string {
  const user = (metric: string) => `metric.type="logging.googleapis.com/user/${metric}"`;
  const rows = Math.ceil(pipelines.length / 2) * 4;
  const at = (section: number, i: number): [number, number] => [
    (i % 2) * 6,
    section * rows + Math.floor(i / 2) * 4,
  ];
  return JSON.stringify({
    displayName: title,
    mosaicLayout: {
      columns: 12,
      tiles: [
        ...pipelines.map((p, i) =>
          tile(
            ...at(0, i),
            `${p.pipelineId}: freshness at run ends (max; target ${p.targetSeconds} s)`,
            user(p.metrics.freshness),
            {
              aligner: 'ALIGN_PERCENTILE_99',
              reducer: 'REDUCE_MAX',
              thresholds: [{ value: p.targetSeconds, label: 'target', color: 'RED', direction: 'ABOVE' }],
            },
          ),
        ),
        ...pipelines.map((p, i) =>
          tile(
            ...at(1, i),
            `${p.pipelineId}: freshness SLO error budget left`,
            `select_slo_budget_fraction("${p.metrics.slo}")`,
            {},
          ),
        ),
        ...pipelines.map((p, i) =>
          tile(...at(2, i), `${p.pipelineId}: dead letters`, user(p.metrics.deadLetters), {
            aligner: 'ALIGN_DELTA',
          }),
        ),
        ...pipelines.map((p, i) =>
          tile(...at(3, i), `${p.pipelineId}: runs by stop reason`, user(p.metrics.runs), {
            aligner: 'ALIGN_SUM',
            reducer: 'REDUCE_SUM',
            groupBy: 'metric.label.stop_reason',
          }),
        ),
      ],
    },
  });
}

interface TileOptions {
  readonly aligner?: string;
  readonly reducer?: string;
  readonly groupBy?: string;
  /** Only the `top` series with the highest values (Cloud Monitoring's pickTimeSeriesFilter). */
  readonly top?: number;
  readonly thresholds?: readonly { value: number; label: string; color: string; direction: string }[];
}

function tile(x: number, y: number, title: string, filter: string, o: TileOptions) {
  const aggregation =
    o.aligner === undefined
      ? undefined
      : {
          alignmentPeriod: '300s',
          perSeriesAligner: o.aligner,
          ...(o.reducer === undefined ? {} : { crossSeriesReducer: o.reducer }),
          ...(o.groupBy === undefined ? {} : { groupByFields: [o.groupBy] }),
        };
  return {
    xPos: x,
    yPos: y,
    width: 6,
    height: 4,
    widget: {
      title,
      xyChart: {
        dataSets: [
          {
            timeSeriesQuery: {
              timeSeriesFilter: {
                filter,
                ...(aggregation === undefined ? {} : { aggregation }),
                ...(o.top === undefined
                  ? {}
                  : {
                      pickTimeSeriesFilter: {
                        rankingMethod: 'METHOD_MAX',
                        numTimeSeries: o.top,
                        direction: 'TOP',
                      },
                    }),
              },
            },
            plotType: 'LINE',
          },
        ],
        ...(o.thresholds === undefined
          ? {}
          : { thresholds: o.thresholds.map((t) => ({ ...t, targetAxis: 'Y1' })) }),
      },
    },
  };
}
