/**
 * Every setting the drain reads (functions/config/settings.ts), and how a deployment sets it: its Pulumi
 * config key, or why it is not one. The type makes every setting appear here; `passed` settings go to the
 * job's environment as they are, the others the program reads and turns into what the job needs (a PEM
 * into Secret Manager and a mounted file, a schema file into the image and a table). docs/deploy.md's
 * reference is made from this table (`npm run docs`), and test/unit/infra-settings.test.ts fails when a
 * key is not read by the program or a passed setting does not reach the job.
 */
import type { SettingName } from '../functions/config/settings.js';

export type Deployed =
  | {
      /** The Pulumi config key (`pulumi config set <key>`); the variable's name in camelCase unless a key existed. */
      readonly pulumi: string;
      /** Given to the job's environment as it is, when set. */
      readonly passed?: true;
      /** Kept in Secret Manager (`pulumi config set --secret`). */
      readonly secret?: true;
    }
  | { readonly notDeployable: string };

const localOnly = { notDeployable: 'local emulators and tests only' } as const;
const byCloudRun = { notDeployable: 'set by Cloud Run for each task' } as const;
const inRoutes = {
  notDeployable:
    'a file the image must carry: name it in a route of `routesFile`, whose folder is built into the image',
} as const;

export const deployedSettings = {
  PIPELINE_ID: { pulumi: 'pipelineId' },
  GOOGLE_CLOUD_PROJECT: { pulumi: 'gcp:project' },
  DEAD_LETTER_TOPIC: { notDeployable: 'made by the program: `{pipelineId}-dead-letters`' },
  ALERT_TOPIC: { notDeployable: 'made by the program: `{pipelineId}-alerts`' },
  LOG_LEVEL: { pulumi: 'logLevel', passed: true },

  KAFKA_BROKERS: { pulumi: 'kafkaBrokers' },
  KAFKA_TOPICS: { pulumi: 'kafkaTopics' },
  KAFKA_SASL_MECHANISM: { pulumi: 'kafkaSaslMechanism' },
  KAFKA_SASL_USERNAME: { pulumi: 'kafkaSaslUsername', secret: true },
  KAFKA_SASL_PASSWORD: { pulumi: 'kafkaSaslPassword', secret: true },
  KAFKA_OAUTH_PROVIDER: { pulumi: 'kafkaOauthProvider' },
  KAFKA_SSL: { pulumi: 'kafkaSsl' },
  KAFKA_SSL_CA_FILE: { pulumi: 'kafkaSslCa', secret: true },
  KAFKA_SSL_CERT_FILE: { pulumi: 'kafkaSslClientCert', secret: true },
  KAFKA_SSL_KEY_FILE: { pulumi: 'kafkaSslClientKey', secret: true },
  START_POSITION: { pulumi: 'startPosition', passed: true },
  RETENTION_GAP_POLICY: { pulumi: 'retentionGapPolicy', passed: true },

  ROUTES_FILE: { pulumi: 'routesFile' },
  BQ_DATASET: { pulumi: 'dataset' },
  BQ_TABLE: { pulumi: 'table' },
  BQ_SCHEMA_FILE: { pulumi: 'schemaFile' },
  BQ_LOCATION: { pulumi: 'gcp:region' },
  BQ_PARTITION_FIELD: { pulumi: 'partitionField' },
  BQ_PARTITION_TYPE: { pulumi: 'partitionType' },
  BQ_PARTITION_EXPIRATION_DAYS: { pulumi: 'partitionExpirationDays' },
  BQ_REQUIRE_PARTITION_FILTER: { pulumi: 'requirePartitionFilter' },
  BQ_CLUSTERING: { pulumi: 'clustering' },
  BQ_HEADERS_COLUMN: { pulumi: 'headersColumn' },
  BQ_KEY_TEXT_COLUMN: { pulumi: 'keyTextColumn' },

  DRAIN_BUDGET_SECONDS: { pulumi: 'budgetSeconds' },
  DRAIN_UNTIL: { pulumi: 'drainUntil', passed: true },
  FLUSH_LINGER_MS: { pulumi: 'flushLingerMs', passed: true },
  BATCH_MAX_RECORDS: { pulumi: 'batchMaxRecords', passed: true },
  BATCH_MAX_BYTES: { pulumi: 'batchMaxBytes', passed: true },
  LEASE_TTL_SECONDS: { pulumi: 'leaseTtlSeconds' },
  IDLE_ALERT_SECONDS: { pulumi: 'idleAlertSeconds' },
  STALL_ALERT_SECONDS: { pulumi: 'stallAlertSeconds', passed: true },
  BACKLOG_ALERT_RECORDS: { pulumi: 'backlogAlertRecords', passed: true },
  CLOUD_RUN_EXECUTION: byCloudRun,
  CLOUD_RUN_TASK_INDEX: byCloudRun,
  CLOUD_RUN_TASK_COUNT: {
    notDeployable: 'set by Cloud Run from `taskCount`, or by the dispatcher for each execution',
  },
  DISPATCH_MIN_TASKS: { pulumi: 'dispatchMinTasks' },
  DISPATCH_MAX_TASKS: { pulumi: 'dispatchMaxTasks' },
  DISPATCH_JOB: { notDeployable: 'made by the program: the drain job' },

  BIGQUERY_API_ENDPOINT: localOnly,
  BIGQUERY_STORAGE_ENDPOINT: localOnly,
  FIRESTORE_EMULATOR_HOST: localOnly,
  PUBSUB_EMULATOR_HOST: localOnly,
  SECRET_MANAGER_ENDPOINT: localOnly,
  CLOUD_RUN_ADMIN_ENDPOINT: localOnly,

  VALUE_FORMAT: { pulumi: 'valueFormat' },
  SCHEMA_REGISTRY_URL: { pulumi: 'schemaRegistryUrl' },
  SCHEMA_REGISTRY_USERNAME: { pulumi: 'schemaRegistryUsername', secret: true },
  SCHEMA_REGISTRY_PASSWORD: { pulumi: 'schemaRegistryPassword', secret: true },
  SCHEMA_REGISTRY_AUTH: { pulumi: 'schemaRegistryAuth', passed: true },
  VALUE_SUBJECT: { pulumi: 'valueSubject' },
  VALUE_SCHEMA_FILE: inRoutes,
  UNKNOWN_FIELDS: { pulumi: 'unknownFields' },
  EVOLVE_COLUMNS_PER_RUN: { pulumi: 'evolveColumnsPerRun' },
  EVOLVE_COLUMNS_MAX: { pulumi: 'evolveColumnsMax' },
  FIELD_NAMES: { pulumi: 'fieldNames' },
  TOMBSTONES: { pulumi: 'tombstones', passed: true },
  TRANSFORM_MODULE: inRoutes,
  RULES_MODULE: inRoutes,

  BQ_WRITE_MODE: { pulumi: 'writeMode' },
  CHANGE_FORMAT: { pulumi: 'changeFormat' },
  BQ_PRIMARY_KEY: { pulumi: 'primaryKey' },
  BQ_MAX_STALENESS: { pulumi: 'maxStaleness' },
  CDC_SOURCE_COLUMNS: { pulumi: 'cdcSourceColumns' },
  LOAD_JOBS_PER_TABLE_PER_DAY: { pulumi: 'loadJobsPerTablePerDay' },
  SCHEDULE_PERIOD_SECONDS: { notDeployable: 'derived from `schedule`' },
} as const satisfies Readonly<Record<SettingName, Deployed>>;

/** Every Pulumi key a setting has (`gcp:` ones aside: a component takes `project` and `region`). */
export type SettingKey = Exclude<
  {
    [K in SettingName]: (typeof deployedSettings)[K] extends { readonly pulumi: infer P extends string }
      ? P
      : never;
  }[SettingName],
  `gcp:${string}`
>;

/** The keys the program reads that are no setting of the drain: where and how it runs. */
export const infraKeys = [
  'region',
  'schedule',
  'timeZone',
  'taskCount',
  'maxRetries',
  'image',
  'statusInvokers',
  'operators',
  'notificationChannels',
  'network',
  'subnetwork',
  'networkTags',
  'vpcEgress',
  'managedKafkaProject',
  'freshnessTargetSeconds',
  'freshnessGoal',
  'firestoreDatabase',
  'existingDatasets',
] as const;

/** The settings the program gives the job as they are: variable → Pulumi key. */
export const passedSettings: readonly { variable: SettingName; key: string }[] = (
  Object.entries(deployedSettings as Readonly<Record<SettingName, Deployed>>) as [SettingName, Deployed][]
).flatMap(([variable, d]) => ('passed' in d && d.passed ? [{ variable, key: d.pulumi }] : []));
