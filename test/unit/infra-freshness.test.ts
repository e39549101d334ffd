import { beforeAll, describe, expect, test } from 'vitest';
import { burnRateWindows, freshnessBounds } from '../../infra/freshness.js';
import { schedulePeriodSeconds } from '../../infra/schedule.js';
import { runProgram } from '../support/pulumi-program.js';

let program: Awaited<ReturnType<typeof runProgram>>;
beforeAll(async () => {
  // Every 5 minutes, a budget of 240 s: the default target is 300 + 240 + 60 = 600 s.
  program = await runProgram({ 'kafka-bigquery-drain:schedule': '*/5 * * * *' });
});
const metric = (name: string) =>
  program.ofType('gcp:logging/metric:Metric').find((m) => m.inputs.name === name)!;
const slo = 'projects/proj/services/kbd-orders/serviceLevelObjectives/freshness';

describe('freshness in the console', () => {
  test('log-based distributions of freshness (run, table, stalest partitions) and latency, bounds through the target', () => {
    const run = metric('kbd_orders_freshness');
    expect(run.inputs.filter).toContain('jsonPayload.event="run_summary"');
    expect(run.inputs.valueExtractor).toBe('EXTRACT(jsonPayload.freshnessSeconds)');
    expect(run.inputs.metricDescriptor).toMatchObject({ valueType: 'DISTRIBUTION', unit: 's' });
    expect(run.inputs.bucketOptions.explicitBuckets.bounds).toContain(600);

    const table = metric('kbd_orders_table_freshness');
    expect(table.inputs.filter).toContain('jsonPayload.event="table_freshness"');
    expect(table.inputs.labelExtractors).toEqual({ table: 'EXTRACT(jsonPayload.table)' });
    const partition = metric('kbd_orders_partition_freshness');
    expect(partition.inputs.filter).toContain('jsonPayload.event="partition_freshness"');
    expect(Object.keys(partition.inputs.labelExtractors).sort()).toEqual(['partition', 'topic']);

    for (const [name, field] of [
      ['kbd_orders_latency_p50', 'p50'],
      ['kbd_orders_latency_p99', 'p99'],
    ] as const) {
      const latency = metric(name);
      expect(latency.inputs.valueExtractor).toBe(`EXTRACT(jsonPayload.latencyMs.${field})`);
      expect(latency.inputs.metricDescriptor.unit).toBe('ms');
      expect(latency.inputs.bucketOptions.explicitBuckets.bounds).toContain(600_000);
    }
  });

  test('a freshness SLO over runs: a request-based distribution cut at the target, 99% over 28 days', () => {
    const service = program.one('gcp:monitoring/customService:CustomService');
    const objective = program.one('gcp:monitoring/slo:Slo');
    expect(objective.inputs).toMatchObject({
      service: service.inputs.serviceId,
      sloId: 'freshness',
      goal: 0.99,
      rollingPeriodDays: 28,
      requestBasedSli: {
        distributionCut: {
          distributionFilter:
            'metric.type="logging.googleapis.com/user/kbd_orders_freshness" resource.type="cloud_run_job"',
          range: { min: 0, max: 600 },
        },
      },
    });
  });

  test('one alert policy on the burn rate, over a long and a short window together', () => {
    const policy = program
      .ofType('gcp:monitoring/alertPolicy:AlertPolicy')
      .find((p) => p.inputs.displayName === 'orders: freshness SLO burning fast')!;
    expect(policy.inputs.combiner).toBe('AND');
    expect(policy.inputs.conditions.map((c: any) => c.conditionThreshold)).toEqual([
      expect.objectContaining({
        filter: `select_slo_burn_rate("${slo}", "7200s")`,
        comparison: 'COMPARISON_GT',
        thresholdValue: 14.4,
      }),
      expect.objectContaining({ filter: `select_slo_burn_rate("${slo}", "600s")`, thresholdValue: 14.4 }),
    ]);
  });

  test('runs that stop happening still alert: no run summary within two periods', () => {
    const policy = program
      .ofType('gcp:monitoring/alertPolicy:AlertPolicy')
      .find((p) => p.inputs.displayName === 'orders: no run summary for two schedule periods (600 s)')!;
    expect(policy.inputs.conditions[0].conditionAbsent).toMatchObject({
      filter: 'metric.type="logging.googleapis.com/user/kbd_orders_runs"',
      duration: '600s',
    });
  });

  test('the dashboard leads with freshness against its target and the error budget, then tables and partitions, then latency', () => {
    const dashboard = JSON.parse(program.one('gcp:monitoring/dashboard:Dashboard').inputs.dashboardJson);
    const tiles = dashboard.mosaicLayout.tiles as any[];
    const at = (x: number, y: number) => tiles.find((t) => t.xPos === x && t.yPos === y).widget;
    const filterOf = (widget: any) => widget.xyChart.dataSets[0].timeSeriesQuery.timeSeriesFilter;

    expect(at(0, 0).title).toBe('freshness at run ends (max; target 600 s)');
    expect(filterOf(at(0, 0)).filter).toBe('metric.type="logging.googleapis.com/user/kbd_orders_freshness"');
    expect(at(0, 0).xyChart.thresholds).toEqual([expect.objectContaining({ value: 600 })]);
    expect(filterOf(at(6, 0)).filter).toBe(`select_slo_budget_fraction("${slo}")`);
    expect(filterOf(at(0, 4)).aggregation.groupByFields).toEqual(['metric.label.table']);
    expect(filterOf(at(6, 4)).pickTimeSeriesFilter).toEqual({
      rankingMethod: 'METHOD_MAX',
      numTimeSeries: 10,
      direction: 'TOP',
    });
    expect(filterOf(at(0, 8)).filter).toContain('kbd_orders_latency_p50');
    expect(filterOf(at(6, 8)).filter).toContain('kbd_orders_latency_p99');
    // The tiles that were there before follow.
    expect(tiles.map((t) => t.widget.title)).toEqual(
      expect.arrayContaining(['rows written', 'dead letters', 'runs by stop reason', 'alerts by kind']),
    );
    expect(Math.min(...tiles.filter((t) => t.widget.title === 'rows written').map((t) => t.yPos))).toBe(12);
  });
});

describe('the schedule and the target', () => {
  test('the period is the longest gap between two runs', () => {
    expect(schedulePeriodSeconds('*/5 * * * *')).toBe(300);
    expect(schedulePeriodSeconds('* * * * *')).toBe(60);
    expect(schedulePeriodSeconds('0 * * * *')).toBe(3_600);
    expect(schedulePeriodSeconds('0,10,40 * * * *')).toBe(1_800);
    expect(schedulePeriodSeconds('15 */6 * * *')).toBe(21_600);
    expect(schedulePeriodSeconds('0 9-17 * * *')).toBe(16 * 3_600);
    expect(() => schedulePeriodSeconds('0 9 * * 1-5')).toThrow(/set freshnessTargetSeconds/);
    expect(() => schedulePeriodSeconds('*/5 * * *')).toThrow(/five-field/);
    expect(() => schedulePeriodSeconds('61 * * * *')).toThrow(/minute out of range/);
  });

  test('bucket bounds hold the target and its double; burn-rate windows hold a few runs', () => {
    expect(freshnessBounds(600)).toEqual(expect.arrayContaining([0, 600, 1_200]));
    expect(freshnessBounds(777)).toContain(777);
    const bounds = freshnessBounds(777);
    expect([...bounds].sort((a, b) => a - b)).toEqual(bounds);
    expect(burnRateWindows(60)).toEqual({ shortSeconds: 300, longSeconds: 3_600 });
    expect(burnRateWindows(3_600)).toEqual({ shortSeconds: 7_200, longSeconds: 86_400 });
  });
});
