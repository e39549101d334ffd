import * as gcp from '@pulumi/gcp';
import type * as pulumi from '@pulumi/pulumi';
import type { InfraConfig } from './config.js';
import type { Grant } from './permissions.js';
import type { DatasetRef } from './pipeline-data.js';

/** The resources a table of grants (permissions.ts) names, as this pipeline has them. */
export interface GrantTargets {
  readonly datasets: readonly DatasetRef[];
  readonly deadLetterSubscription?: gcp.pubsub.Subscription;
  readonly secrets: readonly gcp.secretmanager.Secret[];
  /** The drain job, and the role a `custom:` grant on it stands for. */
  readonly drainJob?: { readonly job: gcp.cloudrunv2.Job; readonly customRole: pulumi.Input<string> };
}

/** Grants `member` each of `grants` on the resources they name; what a table names that is not here is an error. */
export function grantAll(
  name: string,
  config: InfraConfig,
  grants: readonly Grant[],
  member: pulumi.Input<string>,
  targets: GrantTargets,
  parent: pulumi.CustomResourceOptions,
): void {
  for (const grant of grants) {
    const key = `${name}-${grant.role.replace(/^(roles\/|custom:)/, '').replaceAll('.', '-')}`;
    switch (grant.on) {
      case 'each dataset':
        for (const [index, dataset] of targets.datasets.entries()) {
          new gcp.bigquery.DatasetIamMember(
            index === 0 ? key : `${key}-${index}`,
            { datasetId: dataset.datasetId, role: grant.role, member },
            parent,
          );
        }
        break;
      case 'project':
        new gcp.projects.IAMMember(key, { project: config.project, role: grant.role, member }, parent);
        break;
      case 'dead-letter subscription':
        if (targets.deadLetterSubscription === undefined)
          throw new Error(`${name}: no subscription to grant`);
        new gcp.pubsub.SubscriptionIAMMember(
          key,
          { subscription: targets.deadLetterSubscription.name, role: grant.role, member },
          parent,
        );
        break;
      case 'each secret':
        for (const [index, secret] of targets.secrets.entries()) {
          new gcp.secretmanager.SecretIamMember(
            `${key}-${index}`,
            { secretId: secret.id, role: grant.role, member },
            parent,
          );
        }
        break;
      case 'managed kafka project':
        if (config.managedKafkaProject !== undefined) {
          new gcp.projects.IAMMember(
            key,
            { project: config.managedKafkaProject, role: grant.role, member },
            parent,
          );
        }
        break;
      case 'drain job':
        if (targets.drainJob === undefined) throw new Error(`${name}: no drain job to grant`);
        new gcp.cloudrunv2.JobIamMember(
          key,
          {
            name: targets.drainJob.job.name,
            location: config.region,
            project: config.project,
            role: grant.role.startsWith('custom:') ? targets.drainJob.customRole : grant.role,
            member,
          },
          parent,
        );
        break;
      default:
        throw new Error(`${name}: nothing is granted on ${grant.on}`);
    }
  }
}
