/**
 * The dispatcher under Pulumi mocks (`dispatchMaxTasks` set): the scheduler calls a private service with
 * an OIDC token instead of running the job; the service runs the drain's image as the `dispatch` function
 * with the drain's environment and its bounds; its account holds exactly infra/permissions.ts's
 * dispatcherGrants (a role of its own on the drain job, Firestore read-only, the Kafka secrets); the
 * job's parallelism no longer caps the tasks an execution is given; its decisions are a metric and a tile.
 */
import { beforeAll, describe, expect, test } from 'vitest';
import { dispatcherGrants, dispatcherRole } from '../../infra/permissions.js';
import { runProgram } from '../support/pulumi-program.js';

let program: Awaited<ReturnType<typeof runProgram>>;
beforeAll(async () => {
  program = await runProgram({
    'kafka-bigquery-drain:dispatchMaxTasks': '40',
    'kafka-bigquery-drain:dispatchMinTasks': '2',
  });
});

const member = (account: string) => `serviceAccount:${account}@proj.iam.gserviceaccount.com`;
const grantsOf = (account: string) =>
  program.resources
    .filter((r) => /Iam|IAM/.test(r.type) && r.inputs.member === member(account))
    .map(
      (r) => `${r.type.split(':').at(-1)} ${r.inputs.role} ${r.inputs.name ?? r.inputs.project ?? 'secret'}`,
    )
    .sort();

describe('the dispatcher', () => {
  test('the scheduler calls the dispatcher with an OIDC token, not the job', () => {
    const scheduler = program.one('gcp:cloudscheduler/job:Job');
    expect(scheduler.inputs.httpTarget).toEqual({
      httpMethod: 'POST',
      uri: 'https://orders-dispatch.example.run.app',
      oidcToken: {
        serviceAccountEmail: 'orders-sched@proj.iam.gserviceaccount.com',
        audience: 'https://orders-dispatch.example.run.app',
      },
    });
    // It may invoke the dispatcher, and run nothing itself.
    expect(grantsOf('orders-sched')).toEqual(['ServiceIamMember roles/run.invoker orders-dispatch']);
  });

  test("a private service runs the drain's image as the dispatch function, with its bounds and job", () => {
    const services = program.ofType('gcp:cloudrunv2/service:Service');
    const service = services.find((s) => s.inputs.name === 'orders-dispatch')!;
    const drain = program.ofType('gcp:cloudrunv2/job:Job').find((j) => j.inputs.name === 'orders-drain')!;
    const container = service.inputs.template.containers[0];
    const drainContainer = drain.inputs.template.template.containers[0];
    expect(service.inputs.template.serviceAccount).toBe('orders-disp@proj.iam.gserviceaccount.com');
    expect(service.inputs.template.scaling).toEqual({ maxInstanceCount: 1 });
    expect(container.image).toBe(drainContainer.image);
    expect(container.args).toEqual([
      'functions-framework',
      '--source=dist/functions/dispatch/function.js',
      '--target=dispatch',
    ]);
    expect(container.envs).toEqual([
      ...drainContainer.envs,
      { name: 'DISPATCH_MIN_TASKS', value: '2' },
      { name: 'DISPATCH_MAX_TASKS', value: '40' },
      { name: 'DISPATCH_JOB', value: 'projects/proj/locations/europe-west1/jobs/orders-drain' },
    ]);
    expect(service.inputs.template.volumes).toEqual(drain.inputs.template.template.volumes);
    // Nobody but the scheduler may invoke it.
    const invokers = program
      .ofType('gcp:cloudrunv2/serviceIamMember:ServiceIamMember')
      .filter((g) => g.inputs.name === 'orders-dispatch');
    expect(invokers.map((g) => g.inputs.member)).toEqual([member('orders-sched')]);
  });

  test('its account holds exactly the dispatcher grants: its own role on the drain job, nothing to write', () => {
    const role = program.one('gcp:projects/iAMCustomRole:IAMCustomRole');
    expect(role.inputs).toMatchObject({
      project: 'proj',
      roleId: `${dispatcherRole.id}_orders`,
      permissions: ['run.jobs.run', 'run.jobs.runWithOverrides', 'run.executions.list'],
    });
    const secrets = program.ofType('gcp:secretmanager/secret:Secret').length;
    expect(dispatcherGrants.map((g) => `${g.role} ${g.on}`)).toEqual([
      `custom:${dispatcherRole.id} drain job`,
      'roles/datastore.viewer project',
      'roles/secretmanager.secretAccessor each secret',
      'roles/managedkafka.client managed kafka project',
    ]);
    expect(grantsOf('orders-disp')).toEqual(
      [
        `JobIamMember projects/proj/roles/${dispatcherRole.id}_orders orders-drain`,
        'IAMMember roles/datastore.viewer proj',
        ...Array.from({ length: secrets }, () => 'SecretIamMember roles/secretmanager.secretAccessor secret'),
      ].sort(),
    );
  });

  test("the job's parallelism does not cap the tasks an execution is given; its own count stays for runOnce", () => {
    const drain = program.ofType('gcp:cloudrunv2/job:Job').find((j) => j.inputs.name === 'orders-drain')!;
    expect(drain.inputs.template.taskCount).toBe(3);
    expect(drain.inputs.template.parallelism).toBeUndefined();
  });

  test('each decision is counted by a log-based metric, shown on the dashboard', () => {
    const metric = program
      .ofType('gcp:logging/metric:Metric')
      .find((m) => m.inputs.name === 'kbd_orders_dispatched_tasks')!;
    expect(metric.inputs.filter).toBe(
      'resource.type="cloud_run_revision" AND resource.labels.service_name="orders-dispatch" AND jsonPayload.event="dispatch"',
    );
    expect(metric.inputs.valueExtractor).toBe('EXTRACT(jsonPayload.tasks)');
    const dashboard = JSON.parse(program.one('gcp:monitoring/dashboard:Dashboard').inputs.dashboardJson);
    const tile = dashboard.mosaicLayout.tiles.find(
      (t: { widget: { title: string } }) => t.widget.title === 'tasks the dispatcher launched',
    );
    expect(tile.widget.xyChart.dataSets[0].timeSeriesQuery.timeSeriesFilter.filter).toBe(
      'metric.type="logging.googleapis.com/user/kbd_orders_dispatched_tasks"',
    );
  });
});
