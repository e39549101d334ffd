import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import type { InfraConfig } from './config.js';
import type { DrainJob } from './drain-job.js';

/**
 * The `status` function, served by the functions-framework from the job's own image as a private Cloud
 * Run service (what a 2nd-gen Cloud Function is): no public invoker, only the configured principals. It
 * runs as the job's account, which can read Firestore; it needs no write access, but a separate read-only
 * account would need its own Kafka credentials too.
 */
export class StatusService extends pulumi.ComponentResource {
  readonly service: gcp.cloudrunv2.Service;

  constructor(name: string, config: InfraConfig, drain: DrainJob, opts?: pulumi.ComponentResourceOptions) {
    super('kafka-bigquery-drain:index:StatusService', name, {}, opts);
    const parent = { parent: this };
    // The job's task as it is: the same environment, the same mounted PEM files (KAFKA_SSL_CA_FILE names
    // one), the same way to the brokers (Direct VPC egress), the same account (a Managed Kafka principal).
    const container = drain.job.template.template.containers.apply((c) => c![0]!);
    this.service = new gcp.cloudrunv2.Service(
      `${name}-status`,
      {
        name: `${config.pipelineId}-status`,
        location: config.region,
        deletionProtection: false,
        ingress: 'INGRESS_TRAFFIC_ALL',
        template: {
          serviceAccount: drain.jobAccount.email,
          scaling: { maxInstanceCount: 2 },
          ...(drain.secretVolumes.length === 0 ? {} : { volumes: drain.secretVolumes }),
          ...(drain.vpcAccess === undefined ? {} : { vpcAccess: drain.vpcAccess }),
          containers: [
            {
              image: drain.image.ref,
              commands: ['npx'],
              args: ['functions-framework', '--source=dist/functions/status/function.js', '--target=status'],
              envs: container.apply((c) => c.envs ?? []),
              ...(drain.secretMounts.length === 0 ? {} : { volumeMounts: drain.secretMounts }),
            },
          ],
        },
      },
      parent,
    );
    for (const [i, member] of config.statusInvokers.entries()) {
      new gcp.cloudrunv2.ServiceIamMember(
        `${name}-status-invoker-${i}`,
        { name: this.service.name, location: config.region, role: 'roles/run.invoker', member },
        parent,
      );
    }
    this.registerOutputs({ url: this.service.uri });
  }
}
