import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import type { InfraConfig } from './config.js';
import { filesUnder, PipelineImage } from './image.js';
import type { PipelineData } from './pipeline-data.js';

/** Where the image keeps the target table's schema (the Dockerfile copies `BQ_SCHEMA_FILE` there). */
export const schemaPathInImage = '/app/schema/target.schema.json';
/** Where the schema file is mounted when the job runs a configured image (which carries none of ours). */
export const schemaMountDir = '/config/bq-schema-file';
/** Where a routes file's folder is mounted when the job runs a configured image. */
export const routesMountDir = '/config/routes';
/** Where the image keeps the routes file's folder (the Dockerfile copies `ROUTES_DIR` there). */
export const routesPathInImage = '/app/routes';
/** Cloud Run gives a task about 10 s after SIGTERM; the drain settles its batch within 6 s of it. */
export const shutdownMarginSeconds = 60;

/** A PEM file from Secret Manager as a volume (one shape for the job and the status service). */
interface SecretVolume {
  name: string;
  secret: { secret: pulumi.Input<string>; items: { version: pulumi.Input<string>; path: string }[] };
}
interface VpcAccess {
  egress: 'PRIVATE_RANGES_ONLY' | 'ALL_TRAFFIC';
  networkInterfaces: { network?: string; subnetwork?: string; tags?: string[] }[];
}

/**
 * The Cloud Run Job that drains, its service account with the least it needs, the Kafka credentials in
 * Secret Manager, and the Cloud Scheduler job (with an account of its own that may only run this job).
 */
export class DrainJob extends pulumi.ComponentResource {
  readonly job: gcp.cloudrunv2.Job;
  readonly jobAccount: gcp.serviceaccount.Account;
  readonly schedulerAccount: gcp.serviceaccount.Account;
  readonly scheduler: gcp.cloudscheduler.Job;
  /** The PEM files from Secret Manager and where the container finds them (the status service mounts them too). */
  readonly secretVolumes: SecretVolume[];
  readonly secretMounts: { name: string; mountPath: string }[];
  /** Direct VPC egress to private brokers, when a network is configured. */
  readonly vpcAccess: VpcAccess | undefined;
  /** Where the image is pushed: `{region}-docker.pkg.dev/{project}/{pipeline}-drain`. */
  readonly imageRepository: pulumi.Output<string>;
  /** The image the job and the status service run, pinned by digest (image.ts). */
  readonly image: PipelineImage;
  /** The pipeline's secrets in Secret Manager (`{pipeline}-kafka-sasl-password` and alike). */
  readonly secrets: gcp.secretmanager.Secret[] = [];

  /**
   * `dispatch`: with the dispatcher (`dispatchMaxTasks`), what makes it once the job exists (dispatcher.ts):
   * the URL the scheduler calls with an OIDC token as `scheduler`, and the grant that lets it.
   */
  constructor(
    name: string,
    config: InfraConfig,
    data: PipelineData,
    opts?: pulumi.ComponentResourceOptions,
    dispatch?: (
      drain: DrainJob,
      scheduler: pulumi.Output<string>,
    ) => { readonly url: pulumi.Output<string>; readonly invoker: pulumi.Resource },
  ) {
    super('kafka-bigquery-drain:index:DrainJob', name, {}, opts);
    const parent = { parent: this };

    const repository = new gcp.artifactregistry.Repository(
      `${name}-images`,
      {
        repositoryId: `${config.pipelineId}-drain`,
        location: config.region,
        format: 'DOCKER',
        description: 'kafka-bigquery-drain images',
      },
      parent,
    );
    this.imageRepository = pulumi.interpolate`${config.region}-docker.pkg.dev/${config.project}/${repository.repositoryId}`;
    this.image = new PipelineImage(
      `${name}-image`,
      config,
      { repositoryId: repository.repositoryId, url: this.imageRepository },
      parent,
    );

    this.jobAccount = new gcp.serviceaccount.Account(
      `${name}-job-sa`,
      {
        accountId: `${config.pipelineId}-drain`.slice(0, 30),
        displayName: `kafka-bigquery-drain ${config.pipelineId}: the job`,
      },
      parent,
    );
    const jobMember = pulumi.interpolate`serviceAccount:${this.jobAccount.email}`;

    // Least privilege: edit the target dataset only, run BigQuery jobs (no resource-level grant exists for
    // that), use Firestore (likewise project level), publish to its two topics, read its own secrets.
    for (const [index, dataset] of data.datasets.entries()) {
      new gcp.bigquery.DatasetIamMember(
        index === 0 ? `${name}-job-dataset-editor` : `${name}-job-dataset-editor-${index}`,
        { datasetId: dataset.datasetId, role: 'roles/bigquery.dataEditor', member: jobMember },
        parent,
      );
    }
    new gcp.projects.IAMMember(
      `${name}-job-bigquery-jobs`,
      { project: config.project, role: 'roles/bigquery.jobUser', member: jobMember },
      parent,
    );
    new gcp.projects.IAMMember(
      `${name}-job-firestore`,
      { project: config.project, role: 'roles/datastore.user', member: jobMember },
      parent,
    );
    // Managed Kafka: the job's own account is its Kafka principal (OAUTHBEARER), allowed by this role.
    if (config.managedKafkaProject !== undefined) {
      new gcp.projects.IAMMember(
        `${name}-job-managed-kafka-client`,
        { project: config.managedKafkaProject, role: 'roles/managedkafka.client', member: jobMember },
        parent,
      );
    }
    for (const [key, topic] of [
      ['dead-letters', data.deadLetterTopic],
      ['alerts', data.alertTopic],
    ] as const) {
      new gcp.pubsub.TopicIAMMember(
        `${name}-job-publishes-${key}`,
        { topic: topic.name, role: 'roles/pubsub.publisher', member: jobMember },
        parent,
      );
      // `check` looks each topic up (pubsub.topics.get), which the publisher role does not hold.
      new gcp.pubsub.TopicIAMMember(
        `${name}-job-views-${key}`,
        { topic: topic.name, role: 'roles/pubsub.viewer', member: jobMember },
        parent,
      );
    }

    // Each secret: a Secret Manager secret, its version, and read access for the job's account only.
    const secret = (variable: string, value: pulumi.Output<string>) => {
      const id = `${config.pipelineId}-${variable.toLowerCase().replaceAll('_', '-')}`;
      const made = new gcp.secretmanager.Secret(
        `${name}-${variable}`,
        { secretId: id, replication: { auto: {} } },
        parent,
      );
      const version = new gcp.secretmanager.SecretVersion(
        `${name}-${variable}-v`,
        { secret: made.id, secretData: value },
        parent,
      );
      this.secrets.push(made);
      new gcp.secretmanager.SecretIamMember(
        `${name}-job-reads-${variable}`,
        { secretId: made.id, role: 'roles/secretmanager.secretAccessor', member: jobMember },
        parent,
      );
      return { secretId: made.secretId, version: version.version };
    };

    const secretEnv: gcp.types.input.cloudrunv2.JobTemplateTemplateContainerEnv[] = [];
    const { values } = config;
    if (values.registryUsername !== undefined && values.registryPassword !== undefined) {
      for (const [variable, value] of [
        ['SCHEMA_REGISTRY_USERNAME', values.registryUsername],
        ['SCHEMA_REGISTRY_PASSWORD', values.registryPassword],
      ] as const) {
        const { secretId, version } = secret(variable, value);
        secretEnv.push({ name: variable, valueSource: { secretKeyRef: { secret: secretId, version } } });
      }
    }
    if (config.kafkaSaslUsername !== undefined && config.kafkaSaslPassword !== undefined) {
      for (const [variable, value] of [
        ['KAFKA_SASL_USERNAME', config.kafkaSaslUsername!],
        ['KAFKA_SASL_PASSWORD', config.kafkaSaslPassword!],
      ] as const) {
        const { secretId, version } = secret(variable, value);
        secretEnv.push({ name: variable, valueSource: { secretKeyRef: { secret: secretId, version } } });
      }
    }
    // PEM files (the CA, the client certificate and key) are mounted from Secret Manager as files, each
    // in a volume of its own; the job is told where they are.
    const volumes: SecretVolume[] = [];
    const volumeMounts: { name: string; mountPath: string }[] = [];
    const fileEnv: Record<string, string> = {};
    for (const [variable, value] of [
      ['KAFKA_SSL_CA_FILE', config.kafkaSslCa],
      ['KAFKA_SSL_CERT_FILE', config.kafkaSslClientCert],
      ['KAFKA_SSL_KEY_FILE', config.kafkaSslClientKey],
    ] as const) {
      if (value === undefined) continue;
      const { secretId, version } = secret(variable, value);
      const volume = variable.toLowerCase().replaceAll('_', '-');
      volumes.push({ name: volume, secret: { secret: secretId, items: [{ version, path: 'pem' }] } });
      volumeMounts.push({ name: volume, mountPath: `/secrets/${volume}` });
      fileEnv[variable] = `/secrets/${volume}/pem`;
    }
    // A configured image carries no schema of this pipeline's (one image may serve many): the schema
    // file goes in mounted (Cloud Run mounts files from Secret Manager), so the job reads exactly the
    // schema the table was made with. Built here, the image carries it (image.ts).
    const schemaFile = config.routesFile === undefined ? config.routes[0]!.schemaFile : null;
    if (config.image !== undefined && schemaFile !== null) {
      const text = readFileSync(schemaFile, 'utf8');
      if (Buffer.byteLength(text) > 65_536)
        throw new Error(
          `schemaFile (${schemaFile}) is over 64 KiB, more than a mounted file holds: leave image unset`,
        );
      const { secretId, version } = secret('BQ_SCHEMA_FILE', pulumi.output(text));
      volumes.push({
        name: 'bq-schema-file',
        secret: { secret: secretId, items: [{ version, path: 'schema.json' }] },
      });
      volumeMounts.push({ name: 'bq-schema-file', mountPath: schemaMountDir });
      fileEnv.BQ_SCHEMA_FILE = `${schemaMountDir}/schema.json`;
    }
    // Likewise a routes file's folder (its schemas and modules): every file one version of one secret,
    // mounted together at their relative paths.
    if (config.image !== undefined && config.routesFile !== undefined) {
      const routes = mountedRoutes(name, config, jobMember, parent);
      this.secrets.push(routes.secret);
      volumes.push(routes.volume);
      volumeMounts.push({ name: routes.volume.name, mountPath: routesMountDir });
      fileEnv.ROUTES_FILE = `${routesMountDir}/${config.routesFile.name}`;
    }

    const plainEnv: Record<string, pulumi.Input<string>> = {
      PIPELINE_ID: config.pipelineId,
      GOOGLE_CLOUD_PROJECT: config.project,
      KAFKA_BROKERS: config.kafkaBrokers,
      ...(config.kafkaTopics === '' ? {} : { KAFKA_TOPICS: config.kafkaTopics }),
      KAFKA_SSL: String(config.kafkaSsl),
      BQ_DATASET: data.dataset.datasetId,
      // The routes file and its schemas are baked into the image (ROUTES_DIR); else the one table's.
      ...(config.routesFile === undefined
        ? {
            BQ_TABLE: data.targetTable.tableId,
            ...(config.routes[0]!.schemaFile === null ? {} : { BQ_SCHEMA_FILE: schemaPathInImage }),
            ...layoutEnv(config.routes[0]!.layout),
          }
        : { ROUTES_FILE: `${routesPathInImage}/${config.routesFile.name}` }),
      VALUE_FORMAT: values.format,
      ...(values.subject === undefined ? {} : { VALUE_SUBJECT: values.subject }),
      ...(values.registryUrl === undefined ? {} : { SCHEMA_REGISTRY_URL: values.registryUrl }),
      BQ_WRITE_MODE: config.writeMode,
      ...(config.cdc === undefined
        ? {}
        : {
            CHANGE_FORMAT: config.cdc.changeFormat,
            BQ_PRIMARY_KEY: config.cdc.primaryKey.join(','),
            BQ_MAX_STALENESS: config.cdc.maxStaleness,
            CDC_SOURCE_COLUMNS: String(config.cdc.sourceColumns),
          }),
      ...(config.loadJobsPerTablePerDay === undefined
        ? {}
        : {
            LOAD_JOBS_PER_TABLE_PER_DAY: String(config.loadJobsPerTablePerDay),
            SCHEDULE_PERIOD_SECONDS: String(config.schedulePeriodSeconds),
          }),
      BQ_LOCATION: config.region,
      BQ_HEADERS_COLUMN: String(config.metadataColumns.headers),
      BQ_KEY_TEXT_COLUMN: String(config.metadataColumns.keyText),
      DEAD_LETTER_TOPIC: data.deadLetterTopic.name,
      ALERT_TOPIC: data.alertTopic.name,
      DRAIN_BUDGET_SECONDS: String(config.budgetSeconds),
      LEASE_TTL_SECONDS: String(config.leaseTtlSeconds),
      IDLE_ALERT_SECONDS: String(config.idleAlertSeconds),
      UNKNOWN_FIELDS: config.unknownFields,
      ...(config.routes.some((r) => r.unknownFields === 'evolve')
        ? {
            EVOLVE_COLUMNS_PER_RUN: String(config.evolveColumns.perRun),
            EVOLVE_COLUMNS_MAX: String(config.evolveColumns.max),
          }
        : {}),
      FIELD_NAMES: config.fieldNames,
      ...(config.kafkaSaslMechanism === undefined ? {} : { KAFKA_SASL_MECHANISM: config.kafkaSaslMechanism }),
      ...(config.kafkaOauthProvider === undefined ? {} : { KAFKA_OAUTH_PROVIDER: config.kafkaOauthProvider }),
      ...fileEnv,
      // The settings given as they are (LOG_LEVEL, BATCH_MAX_RECORDS, START_POSITION, ...: settings-map.ts).
      ...config.passed,
    };

    this.secretVolumes = volumes;
    this.secretMounts = volumeMounts;
    this.vpcAccess =
      config.vpc === undefined
        ? undefined
        : {
            egress: config.vpc.egress,
            networkInterfaces: [
              {
                ...(config.vpc.network === undefined ? {} : { network: config.vpc.network }),
                ...(config.vpc.subnetwork === undefined ? {} : { subnetwork: config.vpc.subnetwork }),
                ...(config.vpc.tags.length === 0 ? {} : { tags: [...config.vpc.tags] }),
              },
            ],
          };
    this.job = new gcp.cloudrunv2.Job(
      `${name}-job`,
      {
        name: `${config.pipelineId}-drain`,
        location: config.region,
        deletionProtection: false,
        template: {
          taskCount: config.taskCount,
          // With the dispatcher an execution takes the tasks it chose (`overrides.taskCount`); a parallelism
          // of the job's own count would run the rest after them. Unset, Cloud Run runs them all at once.
          ...(config.dispatch === undefined ? { parallelism: config.taskCount } : {}),
          template: {
            serviceAccount: this.jobAccount.email,
            // The drain stops at its budget; the task timeout leaves room to settle and release leases.
            timeout: `${config.budgetSeconds + shutdownMarginSeconds}s`,
            maxRetries: config.maxRetries,
            containers: [
              {
                image: this.image.ref,
                envs: [
                  ...Object.entries(plainEnv).map(([envName, value]) => ({ name: envName, value })),
                  ...secretEnv,
                ],
                resources: { limits: { cpu: '1', memory: '1Gi' } },
                ...(volumeMounts.length === 0 ? {} : { volumeMounts }),
              },
            ],
            ...(volumes.length === 0 ? {} : { volumes }),
            ...(this.vpcAccess === undefined ? {} : { vpcAccess: this.vpcAccess }),
          },
        },
      },
      parent,
    );

    this.schedulerAccount = new gcp.serviceaccount.Account(
      `${name}-scheduler-sa`,
      {
        accountId: `${config.pipelineId}-sched`.slice(0, 30),
        displayName: `kafka-bigquery-drain ${config.pipelineId}: the scheduler`,
      },
      parent,
    );
    const member = pulumi.interpolate`serviceAccount:${this.schedulerAccount.email}`;
    const dispatcher = dispatch?.(this, member);
    // Without the dispatcher the scheduler may run this one job, nothing else; with it, it may only call
    // the dispatcher (OIDC), which runs the job.
    const invoker =
      dispatcher?.invoker ??
      new gcp.cloudrunv2.JobIamMember(
        `${name}-scheduler-runs-job`,
        {
          name: this.job.name,
          location: config.region,
          project: config.project,
          role: 'roles/run.invoker',
          member,
        },
        parent,
      );
    this.scheduler = new gcp.cloudscheduler.Job(
      `${name}-schedule`,
      {
        name: `${config.pipelineId}-drain-schedule`,
        region: config.region,
        schedule: config.schedule,
        timeZone: config.timeZone,
        attemptDeadline: '60s',
        httpTarget:
          dispatcher === undefined
            ? {
                httpMethod: 'POST',
                uri: pulumi.interpolate`https://run.googleapis.com/v2/projects/${config.project}/locations/${config.region}/jobs/${this.job.name}:run`,
                oauthToken: {
                  serviceAccountEmail: this.schedulerAccount.email,
                  scope: 'https://www.googleapis.com/auth/cloud-platform',
                },
              }
            : {
                httpMethod: 'POST',
                uri: dispatcher.url,
                oidcToken: { serviceAccountEmail: this.schedulerAccount.email, audience: dispatcher.url },
              },
      },
      { ...parent, dependsOn: [invoker] },
    );
    this.registerOutputs({ job: this.job.name });
  }
}

/** The single table's layout as the drain reads it (a routes file carries its own). */
function layoutEnv(layout: InfraConfig['routes'][number]['layout']): Record<string, string> {
  return {
    BQ_PARTITION_FIELD: layout.partitionField,
    BQ_PARTITION_TYPE: layout.partitionType,
    ...(layout.partitionExpirationDays === null
      ? {}
      : { BQ_PARTITION_EXPIRATION_DAYS: String(layout.partitionExpirationDays) }),
    BQ_REQUIRE_PARTITION_FILTER: String(layout.requirePartitionFilter),
    BQ_CLUSTERING: layout.clustering.join(','),
  };
}

/** A mounted file is one secret version: Secret Manager holds 64 KiB a version. */
const mountedFileBytes = 65_536;

/**
 * The routes file's folder in Secret Manager for a job that runs a configured image: one secret
 * (`{pipeline}-routes`), each file a version of it, the job's account its reader, and the volume that
 * mounts every version at the file's path relative to the folder.
 */
function mountedRoutes(
  name: string,
  config: InfraConfig,
  member: pulumi.Output<string>,
  parent: pulumi.CustomResourceOptions,
): { secret: gcp.secretmanager.Secret; volume: SecretVolume } {
  const dir = config.routesFile!.dir;
  const files = filesUnder(dir)
    .map((file) => ({ file, path: relative(dir, file) }))
    .sort((a, b) => a.path.localeCompare(b.path));
  const secret = new gcp.secretmanager.Secret(
    `${name}-routes`,
    { secretId: `${config.pipelineId}-routes`, replication: { auto: {} } },
    parent,
  );
  new gcp.secretmanager.SecretIamMember(
    `${name}-job-reads-routes`,
    { secretId: secret.id, role: 'roles/secretmanager.secretAccessor', member },
    parent,
  );
  const items = files.map(({ file, path }) => {
    const text = readFileSync(file, 'utf8');
    if (Buffer.byteLength(text) > mountedFileBytes)
      throw new Error(
        `routesFile's folder: ${path} is over 64 KiB, more than a mounted file holds: leave image unset`,
      );
    const version = new gcp.secretmanager.SecretVersion(
      `${name}-routes-${path.replaceAll(/[^A-Za-z0-9]+/g, '-')}`,
      { secret: secret.id, secretData: text },
      parent,
    );
    return { version: version.version, path };
  });
  return { secret, volume: { name: 'routes', secret: { secret: secret.secretId, items } } };
}
