import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import type { InfraConfig } from './config.js';
import type { DrainJob } from './drain-job.js';
import { grantAll } from './grants.js';
import { dispatcherGrants, dispatcherRole } from './permissions.js';

/**
 * The dispatcher (`dispatchMaxTasks` set): the `dispatch` function, served by the functions-framework from
 * the drain's image as a private Cloud Run service, run as an account of its own that reads where the
 * pipeline stands and may run the drain job with a task count, nothing more (permissions.ts: a custom role
 * on the job, Firestore read-only, the Kafka secrets). The scheduler calls it every period with an OIDC
 * token (drain-job.ts); only the scheduler's account may invoke it.
 */
export class Dispatcher extends pulumi.ComponentResource {
  readonly service: gcp.cloudrunv2.Service;
  readonly account: gcp.serviceaccount.Account;
  readonly role: gcp.projects.IAMCustomRole;
  readonly invoker: gcp.cloudrunv2.ServiceIamMember;

  constructor(
    name: string,
    config: InfraConfig,
    drain: DrainJob,
    scheduler: pulumi.Input<string>,
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super('kafka-bigquery-drain:index:Dispatcher', name, {}, opts);
    const parent = { parent: this };
    const bounds = config.dispatch!;
    this.account = new gcp.serviceaccount.Account(
      `${name}-sa`,
      {
        accountId: `${config.pipelineId}-disp`.slice(0, 30),
        displayName: `kafka-bigquery-drain ${config.pipelineId}: the dispatcher`,
      },
      parent,
    );
    // One role a pipeline: stacks of several pipelines in one project make theirs side by side.
    this.role = new gcp.projects.IAMCustomRole(
      `${name}-role`,
      {
        project: config.project,
        roleId: `${dispatcherRole.id}_${config.pipelineId.replaceAll('-', '_')}`,
        title: `${dispatcherRole.title} (${config.pipelineId})`,
        permissions: [...dispatcherRole.permissions],
      },
      parent,
    );
    grantAll(
      name,
      config,
      dispatcherGrants,
      pulumi.interpolate`serviceAccount:${this.account.email}`,
      { datasets: [], secrets: drain.secrets, drainJob: { job: drain.job, customRole: this.role.name } },
      parent,
    );
    const container = drain.job.template.template.containers.apply((c) => c![0]!);
    const jobName = pulumi.interpolate`projects/${config.project}/locations/${config.region}/jobs/${drain.job.name}`;
    this.service = new gcp.cloudrunv2.Service(
      `${name}-service`,
      {
        name: `${config.pipelineId}-dispatch`,
        location: config.region,
        deletionProtection: false,
        ingress: 'INGRESS_TRAFFIC_ALL',
        template: {
          serviceAccount: this.account.email,
          // One decision at a time: two at once could both launch for the same backlog.
          scaling: { maxInstanceCount: 1 },
          maxInstanceRequestConcurrency: 1,
          ...(drain.secretVolumes.length === 0 ? {} : { volumes: drain.secretVolumes }),
          ...(drain.vpcAccess === undefined ? {} : { vpcAccess: drain.vpcAccess }),
          containers: [
            {
              image: drain.image.ref,
              commands: ['npx'],
              args: [
                'functions-framework',
                '--source=dist/functions/dispatch/function.js',
                '--target=dispatch',
              ],
              envs: pulumi
                .all([container, jobName])
                .apply(([c, job]) => [
                  ...(c.envs ?? []),
                  { name: 'DISPATCH_MIN_TASKS', value: String(bounds.minTasks) },
                  { name: 'DISPATCH_MAX_TASKS', value: String(bounds.maxTasks) },
                  { name: 'DISPATCH_JOB', value: job },
                ]),
              ...(drain.secretMounts.length === 0 ? {} : { volumeMounts: drain.secretMounts }),
            },
          ],
        },
      },
      parent,
    );
    this.invoker = new gcp.cloudrunv2.ServiceIamMember(
      `${name}-scheduler-invokes`,
      { name: this.service.name, location: config.region, role: 'roles/run.invoker', member: scheduler },
      parent,
    );
    this.registerOutputs({ url: this.service.uri });
  }
}
