import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import * as time from '@pulumiverse/time';
import type { InfraConfig } from './config.js';

/**
 * Google says an API enabled a moment ago may still refuse calls for a while ("enabling an API can take
 * a few minutes to propagate"): everything waits this long after the last one is enabled.
 */
export const propagationWait = '60s';

/** The Google APIs a pipeline with these settings uses, and why. */
export function requiredApis(config: InfraConfig): Record<string, string> {
  const secrets =
    config.kafkaSaslUsername !== undefined ||
    config.kafkaSslCa !== undefined ||
    config.kafkaSslClientCert !== undefined ||
    config.values.registryUsername !== undefined;
  return {
    'run.googleapis.com': 'the drain job and the status service',
    'cloudscheduler.googleapis.com': 'the schedule',
    'firestore.googleapis.com': 'checkpoints, leases, the ledger',
    'bigquery.googleapis.com': 'the tables and their queries',
    'pubsub.googleapis.com': 'dead letters and alerts',
    'artifactregistry.googleapis.com': 'the image repository',
    'monitoring.googleapis.com': 'the dashboard and alert policies',
    'logging.googleapis.com': 'the log-based metrics',
    'iam.googleapis.com': 'the service accounts',
    'cloudresourcemanager.googleapis.com': 'project-level role grants',
    ...(config.writeMode === 'storage-write' || config.writeMode === 'cdc'
      ? { 'bigquerystorage.googleapis.com': 'the Storage Write API' }
      : {}),
    ...(secrets ? { 'secretmanager.googleapis.com': 'the Kafka and registry credentials' } : {}),
    ...(config.image === undefined ? { 'cloudbuild.googleapis.com': 'building the image' } : {}),
    ...(config.kafkaOauthProvider === 'google'
      ? { 'managedkafka.googleapis.com': "Google's Managed Kafka" }
      : {}),
  };
}

/**
 * The APIs enabled (never disabled by `pulumi destroy`: other things in the project may use them), and a
 * `gcp` provider that exists only once they are and their enablement has propagated. Every other resource
 * is made through that provider, so it waits for them.
 */
export class ProjectApis extends pulumi.ComponentResource {
  readonly services: gcp.projects.Service[];
  readonly provider: gcp.Provider;

  constructor(name: string, config: InfraConfig, opts?: pulumi.ComponentResourceOptions) {
    super('kafka-bigquery-drain:index:ProjectApis', name, {}, opts);
    const parent = { parent: this };
    this.services = Object.keys(requiredApis(config)).map(
      (service) =>
        new gcp.projects.Service(
          `${name}-${service.split('.')[0]}`,
          { project: config.project, service, disableOnDestroy: false, disableDependentServices: false },
          parent,
        ),
    );
    const propagated = new time.Sleep(
      `${name}-propagation`,
      {
        createDuration: propagationWait,
        triggers: { services: Object.keys(requiredApis(config)).join(',') },
      },
      { ...parent, dependsOn: this.services },
    );
    this.provider = new gcp.Provider(
      `${name}-ready`,
      { project: propagated.id.apply(() => config.project), region: config.region },
      parent,
    );
    this.registerOutputs({});
  }
}
