import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import type { InfraConfig } from './config.js';
import type { DrainJob } from './drain-job.js';
import { grantAll } from './grants.js';
import { operationsGrants } from './permissions.js';
import type { PipelineData } from './pipeline-data.js';

/** An operator command may take this long (a replay of many letters, a verify of a large table). */
export const operationsTimeoutSeconds = 3_600;

/**
 * The operations job: every operator command but `check` (status, verify, seek, pause, resume,
 * dead-letters, replay-dead-letters) run in the cloud as a one-off execution, with the pipeline's image,
 * environment, secrets and network, as an account of its own holding what those commands need and no
 * more (permissions.ts). The drain's account gains nothing. Operators (`operators`) may run it with
 * arguments (`roles/run.developer` on this job: `run.jobs.runWithOverrides`); its result is the
 * execution's exit code, its output is in Cloud Logging.
 */
export class OperationsJob extends pulumi.ComponentResource {
  readonly job: gcp.cloudrunv2.Job;
  readonly account: gcp.serviceaccount.Account;

  constructor(
    name: string,
    config: InfraConfig,
    data: PipelineData,
    drain: DrainJob,
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super('kafka-bigquery-drain:index:OperationsJob', name, {}, opts);
    const parent = { parent: this };

    this.account = new gcp.serviceaccount.Account(
      `${name}-sa`,
      {
        accountId: `${config.pipelineId}-ops`.slice(0, 30),
        displayName: `kafka-bigquery-drain ${config.pipelineId}: operator commands`,
      },
      parent,
    );
    const member = pulumi.interpolate`serviceAccount:${this.account.email}`;
    grantAll(
      name,
      config,
      operationsGrants,
      member,
      {
        datasets: data.datasets,
        deadLetterSubscription: data.deadLetterSubscription,
        secrets: drain.secrets,
      },
      parent,
    );

    // The drain's container as it is (environment, secrets as variables and mounted PEMs, network), run
    // as this account with the CLI's `status` unless an execution says otherwise.
    const container = drain.job.template.template.containers.apply((c) => c![0]!);
    this.job = new gcp.cloudrunv2.Job(
      `${name}-job`,
      {
        name: `${config.pipelineId}-ops`,
        location: config.region,
        deletionProtection: false,
        template: {
          taskCount: 1,
          parallelism: 1,
          template: {
            serviceAccount: this.account.email,
            timeout: `${operationsTimeoutSeconds}s`,
            // An operator reads the result and decides; nothing is run twice behind their back.
            maxRetries: 0,
            containers: [
              {
                image: drain.image.ref,
                args: ['status'],
                envs: container.apply((c) => c.envs ?? []),
                resources: { limits: { cpu: '1', memory: '1Gi' } },
                ...(drain.secretMounts.length === 0 ? {} : { volumeMounts: drain.secretMounts }),
              },
            ],
            ...(drain.secretVolumes.length === 0 ? {} : { volumes: drain.secretVolumes }),
            ...(drain.vpcAccess === undefined ? {} : { vpcAccess: drain.vpcAccess }),
          },
        },
      },
      parent,
    );
    for (const [index, operator] of config.operators.entries()) {
      new gcp.cloudrunv2.JobIamMember(
        `${name}-operator-${index}`,
        {
          name: this.job.name,
          location: config.region,
          project: config.project,
          role: 'roles/run.developer',
          member: operator,
        },
        parent,
      );
    }
    this.registerOutputs({ job: this.job.name });
  }
}

/** An operator command as an execution of the operations job (gcloud splits `--args` on commas). */
export function operationsCommand(
  job: pulumi.Input<string>,
  region: string,
  args: string,
): pulumi.Output<string> {
  return pulumi.interpolate`gcloud run jobs execute ${job} --region ${region} --args=${args} --wait`;
}

/**
 * The command that prints one execution's output (its name is what `gcloud run jobs execute` printed), in
 * order; without `$EXECUTION` set, every execution of the last day.
 */
export function logsCommand(job: pulumi.Input<string>, project: string): pulumi.Output<string> {
  return pulumi.interpolate`gcloud logging read "resource.type=cloud_run_job AND resource.labels.job_name=${job} AND labels.\"run.googleapis.com/execution_name\":\"$EXECUTION\"" --project ${project} --freshness 1d --order asc --format "value(textPayload,jsonPayload.message)"`;
}
