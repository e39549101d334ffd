import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import type { InfraConfig } from './config.js';

/**
 * Freshness in the console: log-based distributions of the run's freshness (run summaries), each table's
 * and the stalest partitions' (the lines each run logs before its summary), and of latency (p50, p99); a
 * freshness SLO over runs (a request-based distribution cut: a run whose freshness is within the target
 * is a good one); and one alert policy on the SLO's burn rate over a short and a long window.
 */
export interface FreshnessMetrics {
  readonly run: gcp.logging.Metric;
  readonly table: gcp.logging.Metric;
  readonly partition: gcp.logging.Metric;
  readonly latencyP50: gcp.logging.Metric;
  readonly latencyP99: gcp.logging.Metric;
  readonly slo: gcp.monitoring.Slo;
  readonly burnRate: gcp.monitoring.AlertPolicy;
}

/**
 * Bucket bounds in seconds, from a second to a week, with the target one of them: the SLO's cut and the
 * dashboard's line fall on a bound, so that "within the target" is exact.
 */
export function freshnessBounds(targetSeconds: number): number[] {
  const base = [1, 5, 15, 30, 60, 120, 300, 600, 900, 1_800, 3_600, 7_200, 21_600, 86_400, 604_800];
  return [...new Set([0, ...base, targetSeconds, 2 * targetSeconds])].sort((a, b) => a - b);
}

/**
 * The burn-rate windows: the long one catches a steady burn, the short one (within it) says the burn is
 * still on, so that the alert closes soon after the pipeline catches up. Each must hold a few runs.
 */
export function burnRateWindows(periodSeconds: number): { shortSeconds: number; longSeconds: number } {
  const shortSeconds = Math.max(300, 2 * periodSeconds);
  return { shortSeconds, longSeconds: Math.max(3_600, 12 * shortSeconds) };
}

/** Burning this fast, a 28-day budget is gone in under two days (Google's SRE workbook's page threshold). */
export const burnRateThreshold = 14.4;

export function freshnessMonitoring(
  name: string,
  config: InfraConfig,
  logs: pulumi.Output<string>,
  parent: pulumi.Resource,
): FreshnessMetrics {
  const opts = { parent };
  const prefix = `kbd_${config.pipelineId.replaceAll('-', '_')}`;
  const target = config.freshness.targetSeconds;
  const seconds = freshnessBounds(target);
  const distribution = (
    metric: string,
    description: string,
    event: string,
    field: string,
    unit: string,
    bounds: number[],
    labels: Record<string, string> = {},
  ) =>
    new gcp.logging.Metric(
      `${name}-${metric}`,
      {
        name: `${prefix}_${metric}`,
        description,
        filter: pulumi.interpolate`${logs} AND jsonPayload.event="${event}"`,
        valueExtractor: `EXTRACT(jsonPayload.${field})`,
        ...(Object.keys(labels).length === 0 ? {} : { labelExtractors: labels }),
        metricDescriptor: {
          metricKind: 'DELTA',
          valueType: 'DISTRIBUTION',
          unit,
          labels: Object.keys(labels).map((key) => ({ key, valueType: 'STRING' })),
        },
        bucketOptions: { explicitBuckets: { bounds } },
      },
      opts,
    );
  const run = distribution(
    'freshness',
    "age in seconds of the oldest record not yet in BigQuery at each run's end",
    'run_summary',
    'freshnessSeconds',
    's',
    seconds,
  );
  const table = distribution(
    'table_freshness',
    "age in seconds of the oldest record not yet in BigQuery at each run's end, per table",
    'table_freshness',
    'freshnessSeconds',
    's',
    seconds,
    { table: 'EXTRACT(jsonPayload.table)' },
  );
  const partition = distribution(
    'partition_freshness',
    "the stalest partitions' freshness at each run's end (the 20 stalest a run saw)",
    'partition_freshness',
    'freshnessSeconds',
    's',
    seconds,
    { topic: 'EXTRACT(jsonPayload.topic)', partition: 'EXTRACT(jsonPayload.partition)' },
  );
  const millis = seconds.map((s) => s * 1000);
  const latencyP50 = distribution(
    'latency_p50',
    "each run's median latency (commit time minus Kafka timestamp), ms",
    'run_summary',
    'latencyMs.p50',
    'ms',
    millis,
  );
  const latencyP99 = distribution(
    'latency_p99',
    "each run's 99th percentile latency (commit time minus Kafka timestamp), ms",
    'run_summary',
    'latencyMs.p99',
    'ms',
    millis,
  );

  const service = new gcp.monitoring.CustomService(
    `${name}-service`,
    { serviceId: `kbd-${config.pipelineId}`, displayName: `kafka-bigquery-drain: ${config.pipelineId}` },
    opts,
  );
  const slo = new gcp.monitoring.Slo(
    `${name}-freshness-slo`,
    {
      service: service.serviceId,
      sloId: 'freshness',
      displayName: `${config.pipelineId}: runs end with nothing older than ${target} s waiting`,
      goal: config.freshness.goal,
      rollingPeriodDays: 28,
      requestBasedSli: {
        distributionCut: {
          distributionFilter: pulumi.interpolate`metric.type="logging.googleapis.com/user/${run.name}" resource.type="cloud_run_job"`,
          range: { min: 0, max: target },
        },
      },
    },
    opts,
  );
  const { shortSeconds, longSeconds } = burnRateWindows(config.schedulePeriodSeconds);
  const burn = (seconds: number): gcp.types.input.monitoring.AlertPolicyCondition => ({
    displayName: `freshness SLO burn rate over ${seconds} s above ${burnRateThreshold}`,
    conditionThreshold: {
      filter: pulumi.interpolate`select_slo_burn_rate("${slo.name}", "${seconds}s")`,
      comparison: 'COMPARISON_GT',
      thresholdValue: burnRateThreshold,
      duration: '0s',
    },
  });
  const burnRate = new gcp.monitoring.AlertPolicy(
    `${name}-policy-freshness-burn`,
    {
      displayName: `${config.pipelineId}: freshness SLO burning fast`,
      combiner: 'AND',
      conditions: [burn(longSeconds), burn(shortSeconds)],
      notificationChannels: config.notificationChannels,
      documentation: {
        content: `kafka-bigquery-drain pipeline ${config.pipelineId}: runs are ending with records older than ${target} s waiting, fast enough to spend the SLO's 28-day error budget within two days. See docs/operations.md (freshness) in the repository.`,
      },
    },
    opts,
  );
  return { run, table, partition, latencyP50, latencyP99, slo, burnRate };
}
