import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import type { InfraConfig } from './config.js';
import { type DashboardMetrics, dashboardJson } from './dashboard.js';
import { type FreshnessMetrics, freshnessMonitoring } from './freshness.js';

/** The alert kinds of DESIGN.md; each gets an alert policy when it opens. */
export const alertKinds = ['idle', 'stalled', 'retention_gap', 'backlog'] as const;

/**
 * What an operator sees in the console without writing a query: log-based metrics from the run
 * summaries and alert logs, alert policies, and a dashboard.
 */
export class PipelineMonitoring extends pulumi.ComponentResource {
  readonly policies: gcp.monitoring.AlertPolicy[] = [];
  readonly freshness: FreshnessMetrics;
  /** The names of the pipeline's metrics and SLO, for its dashboard and an overview across pipelines. */
  readonly metrics: pulumi.Output<DashboardMetrics>;

  constructor(
    name: string,
    config: InfraConfig,
    jobName: pulumi.Input<string>,
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super('kafka-bigquery-drain:index:PipelineMonitoring', name, {}, opts);
    const parent = { parent: this };
    const logs = pulumi.interpolate`resource.type="cloud_run_job" AND resource.labels.job_name="${jobName}"`;
    const summaries = pulumi.interpolate`${logs} AND jsonPayload.event="run_summary"`;
    const prefix = `kbd_${config.pipelineId.replaceAll('-', '_')}`;

    const counter = (metric: string, description: string, field: string) =>
      new gcp.logging.Metric(
        `${name}-${metric}`,
        {
          name: `${prefix}_${metric}`,
          description,
          filter: summaries,
          valueExtractor: `EXTRACT(jsonPayload.${field})`,
          metricDescriptor: { metricKind: 'DELTA', valueType: 'DISTRIBUTION', unit: '1' },
          bucketOptions: { exponentialBuckets: { numFiniteBuckets: 20, growthFactor: 2, scale: 1 } },
        },
        parent,
      );
    const rows = counter('rows_written', 'rows written per run', 'rowsWritten');
    const deadLetters = counter('dead_letters', 'dead letters per run', 'deadLettered');
    const lag = counter('lag', 'records left undrained at the end of a run', 'lag');
    const runs = new gcp.logging.Metric(
      `${name}-runs`,
      {
        name: `${prefix}_runs`,
        description: 'runs, by stop reason',
        filter: summaries,
        labelExtractors: { stop_reason: 'EXTRACT(jsonPayload.stopReason)' },
        metricDescriptor: {
          metricKind: 'DELTA',
          valueType: 'INT64',
          labels: [{ key: 'stop_reason', valueType: 'STRING' }],
        },
      },
      parent,
    );
    const alerts = new gcp.logging.Metric(
      `${name}-alerts`,
      {
        name: `${prefix}_alerts`,
        description: 'gap alerts opened, by kind',
        filter: pulumi.interpolate`${logs} AND jsonPayload.kind=("idle" OR "stalled" OR "retention_gap" OR "backlog")`,
        labelExtractors: { kind: 'EXTRACT(jsonPayload.kind)', state: 'EXTRACT(jsonPayload.state)' },
        metricDescriptor: {
          metricKind: 'DELTA',
          valueType: 'INT64',
          labels: [
            { key: 'kind', valueType: 'STRING' },
            { key: 'state', valueType: 'STRING' },
          ],
        },
      },
      parent,
    );

    const policy = (
      key: string,
      displayName: string,
      condition: gcp.types.input.monitoring.AlertPolicyCondition,
    ) => {
      const created = new gcp.monitoring.AlertPolicy(
        `${name}-policy-${key}`,
        {
          displayName: `${config.pipelineId}: ${displayName}`,
          combiner: 'OR',
          conditions: [condition],
          notificationChannels: config.notificationChannels,
          documentation: {
            content: `kafka-bigquery-drain pipeline ${config.pipelineId}: ${displayName}. See docs/alerts.md and docs/operations.md in the repository.`,
          },
        },
        parent,
      );
      this.policies.push(created);
      return created;
    };
    for (const kind of alertKinds) {
      policy(`alert-${kind}`, `${kind} alert opened`, {
        displayName: `${kind} opened`,
        conditionThreshold: {
          filter: pulumi.interpolate`metric.type="logging.googleapis.com/user/${alerts.name}" AND metric.label.kind="${kind}" AND metric.label.state="open"`,
          comparison: 'COMPARISON_GT',
          thresholdValue: 0,
          duration: '0s',
          aggregations: [{ alignmentPeriod: '300s', perSeriesAligner: 'ALIGN_SUM' }],
        },
      });
    }
    policy('dead-letter-rate', 'dead letters above 100 in 15 minutes', {
      displayName: 'dead-letter rate',
      conditionThreshold: {
        filter: pulumi.interpolate`metric.type="logging.googleapis.com/user/${deadLetters.name}"`,
        comparison: 'COMPARISON_GT',
        thresholdValue: 100,
        duration: '0s',
        aggregations: [
          { alignmentPeriod: '900s', perSeriesAligner: 'ALIGN_DELTA', crossSeriesReducer: 'REDUCE_SUM' },
        ],
      },
    });
    policy('failed-executions', 'a job execution failed', {
      displayName: 'failed executions',
      conditionThreshold: {
        filter: pulumi.interpolate`metric.type="run.googleapis.com/job/completed_execution_count" AND resource.type="cloud_run_job" AND resource.label.job_name="${jobName}" AND metric.label.result="failed"`,
        comparison: 'COMPARISON_GT',
        thresholdValue: 0,
        duration: '0s',
        aggregations: [{ alignmentPeriod: '300s', perSeriesAligner: 'ALIGN_SUM' }],
      },
    });
    // A freshness metric that receives no samples burns no budget: runs that stop happening alert here.
    const period = config.schedulePeriodSeconds;
    policy('no-run', `no run summary for two schedule periods (${2 * period} s)`, {
      displayName: 'no run summary',
      conditionAbsent: {
        filter: pulumi.interpolate`metric.type="logging.googleapis.com/user/${runs.name}"`,
        duration: `${absentSeconds(2 * period)}s`,
        aggregations: [{ alignmentPeriod: '300s', perSeriesAligner: 'ALIGN_SUM' }],
      },
    });
    policy('no-successful-run', `no successful run for three schedule periods (${3 * period} s)`, {
      displayName: 'no successful run',
      conditionAbsent: {
        filter: pulumi.interpolate`metric.type="logging.googleapis.com/user/${runs.name}" AND metric.label.stop_reason!="error"`,
        duration: `${absentSeconds(3 * period)}s`,
        aggregations: [{ alignmentPeriod: '300s', perSeriesAligner: 'ALIGN_SUM' }],
      },
    });

    // The dispatcher's decisions (dispatchMaxTasks set): the tasks each launched, 0 when nothing waited.
    const dispatched =
      config.dispatch === undefined
        ? undefined
        : new gcp.logging.Metric(
            `${name}-dispatched-tasks`,
            {
              name: `${prefix}_dispatched_tasks`,
              description: "tasks each of the dispatcher's decisions launched",
              filter: `resource.type="cloud_run_revision" AND resource.labels.service_name="${config.pipelineId}-dispatch" AND jsonPayload.event="dispatch"`,
              valueExtractor: 'EXTRACT(jsonPayload.tasks)',
              metricDescriptor: { metricKind: 'DELTA', valueType: 'DISTRIBUTION', unit: '1' },
              bucketOptions: { linearBuckets: { numFiniteBuckets: 100, width: 1, offset: 0 } },
            },
            parent,
          );

    const freshness = freshnessMonitoring(name, config, logs, this);
    this.policies.push(freshness.burnRate);
    this.freshness = freshness;
    this.metrics = pulumi
      .all({
        freshness: freshness.run.name,
        tableFreshness: freshness.table.name,
        partitionFreshness: freshness.partition.name,
        latencyP50: freshness.latencyP50.name,
        latencyP99: freshness.latencyP99.name,
        rows: rows.name,
        deadLetters: deadLetters.name,
        runs: runs.name,
        alerts: alerts.name,
        lag: lag.name,
        slo: freshness.slo.name,
        ...(dispatched === undefined ? {} : { dispatchedTasks: dispatched.name }),
      })
      .apply((metrics) => metrics as unknown as DashboardMetrics);
    new gcp.monitoring.Dashboard(
      `${name}-dashboard`,
      {
        dashboardJson: this.metrics.apply((metrics) =>
          dashboardJson(config.pipelineId, config.freshness.targetSeconds, metrics),
        ),
      },
      parent,
    );
    this.registerOutputs({});
  }
}

/** An absence condition's duration: whole minutes, at least the 300 s its alignment needs, at most a day. */
function absentSeconds(seconds: number): number {
  return Math.min(86_400, Math.max(300, Math.ceil(seconds / 60) * 60));
}
