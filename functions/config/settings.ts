/**
 * Every setting the drain reads, in one table: its default, what it means, and its name in a route of
 * ROUTES_FILE where it has one. The parser takes its defaults from here (reader.ts), and
 * docs/configuration.md is made from here (`npm run docs`); test/unit/configuration-page.test.ts fails
 * when the page, this table and the parser disagree.
 */

import { type Setting, type SettingSection, settingSections } from './setting-kinds.js';
import { valueAndWriteSettings } from './settings-values.js';

export { type Setting, type SettingSection, settingSections };

export const settings = {
  PIPELINE_ID: {
    section: 'pipeline',
    shown: 'required',
    meaning:
      "Names the pipeline's state in Firestore (`pipelines/{PIPELINE_ID}/…`). Letters, digits, `_`, `-`.",
  },
  GOOGLE_CLOUD_PROJECT: {
    section: 'pipeline',
    shown: 'required',
    meaning: 'The project of BigQuery, Firestore and Pub/Sub.',
  },
  DEAD_LETTER_TOPIC: {
    section: 'pipeline',
    shown: 'required',
    meaning: 'Pub/Sub topic id for dead letters. See [bad input](bad-input.md).',
  },
  ALERT_TOPIC: {
    section: 'pipeline',
    meaning: 'Pub/Sub topic id for gap alerts; without it alerts are only logged. See [alerts](alerts.md).',
  },
  LOG_LEVEL: {
    section: 'pipeline',
    default: 'info',
    meaning: '`debug`, `info`, `warning` (or `warn`), `error`. The run summary is written at every level.',
  },

  KAFKA_BROKERS: { section: 'kafka', shown: 'required', meaning: '`host:port,host:port`.' },
  KAFKA_TOPICS: {
    section: 'kafka',
    shown: 'required (optional with `ROUTES_FILE`)',
    route: 'topics',
    meaning:
      "Topics to drain, comma separated. With `ROUTES_FILE`, a subset of the routes' topics, each of which must match a route.",
  },
  KAFKA_SASL_MECHANISM: {
    section: 'kafka',
    meaning:
      '`plain`, `scram-sha-256`, `scram-sha-512` (then a user name and password), or `oauthbearer` (with `KAFKA_OAUTH_PROVIDER`).',
  },
  KAFKA_SASL_USERNAME: {
    section: 'kafka',
    shown: 'required with PLAIN and SCRAM',
    meaning:
      'The SASL user. In production from Secret Manager; or a Secret Manager reference (`projects/P/secrets/S/versions/V`).',
  },
  KAFKA_SASL_PASSWORD: {
    section: 'kafka',
    shown: 'required with PLAIN and SCRAM',
    meaning:
      'The SASL password. In production from Secret Manager; or a Secret Manager reference (`projects/P/secrets/S/versions/V`).',
  },
  KAFKA_OAUTH_PROVIDER: {
    section: 'kafka',
    shown: 'required with `oauthbearer`',
    meaning:
      "`google`: Google's Managed Kafka, keyless, tokens from the job's own credentials. TLS is then on and cannot be turned off. See [deploying](deploy.md#googles-managed-kafka).",
  },
  KAFKA_SSL: {
    section: 'kafka',
    shown: '`false` (`true` with a TLS file or `oauthbearer`)',
    meaning: "TLS to the brokers; without `KAFKA_SSL_CA_FILE` the system's CAs are trusted.",
  },
  KAFKA_SSL_CA_FILE: {
    section: 'kafka',
    meaning:
      "PEM file of a private CA that signed the brokers' certificates, or a Secret Manager reference to the PEM.",
  },
  KAFKA_SSL_CERT_FILE: {
    section: 'kafka',
    meaning:
      'PEM client certificate for mTLS (a file or a Secret Manager reference); with `KAFKA_SSL_KEY_FILE`.',
  },
  KAFKA_SSL_KEY_FILE: {
    section: 'kafka',
    meaning: 'PEM client key for mTLS (a file or a Secret Manager reference); with `KAFKA_SSL_CERT_FILE`.',
  },
  START_POSITION: {
    section: 'kafka',
    default: 'earliest',
    meaning:
      'Where a partition with no checkpoint yet starts: `earliest`, `latest`, `timestamp:<ISO-8601>` or `offsets:<topic>:<partition>=<offset>,...`. Never overrides a checkpoint.',
  },
  RETENTION_GAP_POLICY: {
    section: 'kafka',
    default: 'fail',
    meaning:
      'A checkpoint below the log start: `fail` leaves the partition for an operator; `skip` records the loss and goes on. See [alerts](alerts.md).',
  },

  ROUTES_FILE: {
    section: 'tables',
    meaning:
      'A JSON list of routes: several topics into several tables, or one topic into several by `when` (a header, a field, the record name). The variables with a route name are then set per route. See [many topics and tables](routes.md).',
  },
  BQ_DATASET: {
    section: 'tables',
    shown: 'required',
    meaning:
      'The dataset of the table (made if missing). With `ROUTES_FILE`, of routes that name a table alone.',
  },
  BQ_TABLE: {
    section: 'tables',
    shown: 'required (without `ROUTES_FILE`)',
    route: 'table',
    meaning: 'The target table, made if missing. Its error table is `{table}_dead_letters`.',
  },
  BQ_SCHEMA_FILE: {
    section: 'tables',
    shown: 'required with JSON values',
    route: 'schemaFile',
    meaning:
      'A BigQuery JSON schema of the user columns; the `_kafka_*` columns are added. With a registry format the columns may come from the registry.',
  },
  BQ_LOCATION: { section: 'tables', meaning: 'The location of a dataset the drain makes.' },
  BQ_PARTITION_FIELD: {
    section: 'tables',
    default: '_kafka_timestamp',
    route: 'partitioning.field',
    meaning:
      'Time partitioning column of a table the drain makes: the Kafka timestamp or a TIMESTAMP / DATE / DATETIME column.',
  },
  BQ_PARTITION_TYPE: {
    section: 'tables',
    default: 'DAY',
    route: 'partitioning.type',
    meaning: '`HOUR`, `DAY`, `MONTH` or `YEAR`.',
  },
  BQ_PARTITION_EXPIRATION_DAYS: {
    section: 'tables',
    route: 'partitioning.expirationDays',
    meaning: 'Partitions older than this are deleted by BigQuery.',
  },
  BQ_REQUIRE_PARTITION_FILTER: {
    section: 'tables',
    default: false,
    route: 'partitioning.requirePartitionFilter',
    meaning: 'Queries must filter on the partition column. Only with `_kafka_timestamp` partitioning.',
  },
  BQ_CLUSTERING: {
    section: 'tables',
    default: '_kafka_topic,_kafka_partition,_kafka_offset',
    route: 'clustering',
    meaning: 'Up to four top-level columns, comma separated (in a route, a list).',
  },
  BQ_HEADERS_COLUMN: {
    section: 'tables',
    default: false,
    route: 'headersColumn',
    meaning: 'Adds `_kafka_headers`: every Kafka header in order, values as bytes.',
  },
  BQ_KEY_TEXT_COLUMN: {
    section: 'tables',
    default: false,
    route: 'keyTextColumn',
    meaning: 'Adds `_kafka_key_text`: the key as UTF-8 text where it is valid UTF-8, else NULL.',
  },
  ...valueAndWriteSettings,
  DRAIN_BUDGET_SECONDS: {
    section: 'run',
    default: 240,
    meaning: 'The run stops fetching after this long (5 s to 7 days).',
  },
  DRAIN_UNTIL: {
    section: 'run',
    default: 'end',
    meaning:
      '`end`: a run drains each partition up to the end it saw at its start, then stops. `budget`: it follows the log until its budget (or SIGTERM), cutting a batch when full or `FLUSH_LINGER_MS` after its first record: freshness in seconds with runs back to back. `load` mode refuses `budget`.',
  },
  FLUSH_LINGER_MS: {
    section: 'run',
    default: 1_000,
    meaning:
      "With `DRAIN_UNTIL=budget`: how long a batch not yet full waits for more records (10 ms to 10 minutes). In `storage-write` mode at least tables × 2 × tasks × 720 ms (a flush opens a stream on each table and, with dead letters, on its error table), so that a pipeline opens at most 5,000 write streams an hour (half the project's CreateWriteStream quota).",
  },
  BATCH_MAX_RECORDS: {
    section: 'run',
    default: 5_000,
    meaning:
      'Records per batch: one checkpoint commit per batch, each about 5 ms of CPU: keep batches large.',
  },
  BATCH_MAX_BYTES: {
    section: 'run',
    default: 5_242_880,
    meaning:
      "Bytes per batch; a Kafka fetch brings up to this much of a partition, at most 2 MiB. A partition's fetches are joined into batches up to the limits: while records before the end seen at start are to come, a batch waits up to 200 ms for the next fetch.",
  },
  LEASE_TTL_SECONDS: {
    section: 'run',
    shown: 'the smaller of `60` and `DRAIN_BUDGET_SECONDS`',
    meaning: 'A lease not renewed for this long can be taken over. At most `DRAIN_BUDGET_SECONDS`.',
  },
  IDLE_ALERT_SECONDS: {
    section: 'run',
    default: 300,
    meaning: '`idle` opens when a caught-up partition has had no new record for this long.',
  },
  STALL_ALERT_SECONDS: {
    section: 'run',
    default: 900,
    meaning: '`stalled` opens when records wait and the checkpoint has not moved for this long.',
  },
  BACKLOG_ALERT_RECORDS: {
    section: 'run',
    default: 100_000,
    meaning: '`backlog` opens when a run leaves more than this many records in a partition.',
  },
  CLOUD_RUN_EXECUTION: {
    section: 'run',
    default: 'local',
    meaning: "Set by Cloud Run: the execution's name, in leases and the run summary.",
  },
  CLOUD_RUN_TASK_INDEX: {
    section: 'run',
    default: 0,
    meaning: "Set by Cloud Run: this task's index. A task owns the partitions dealt to it, then shares.",
  },
  CLOUD_RUN_TASK_COUNT: {
    section: 'run',
    default: 1,
    meaning: "Set by Cloud Run: the execution's tasks.",
  },
  DISPATCH_MIN_TASKS: {
    section: 'run',
    default: 1,
    meaning:
      'The dispatcher launches at least this many tasks when records wait (never more than the partitions). See [capacity](capacity.md#the-dispatcher).',
  },
  DISPATCH_MAX_TASKS: {
    section: 'run',
    shown: 'unset: no dispatcher',
    meaning:
      'The most tasks the dispatcher launches; set, the schedule calls the dispatcher, which runs the job with the tasks the backlog needs, or none. See [capacity](capacity.md#the-dispatcher).',
  },
  DISPATCH_JOB: {
    section: 'run',
    shown: 'set by the program',
    meaning: 'The drain job the dispatcher runs (`projects/P/locations/R/jobs/J`).',
  },

  BIGQUERY_API_ENDPOINT: {
    section: 'local',
    meaning: "e.g. `http://127.0.0.1:19050`, the BigQuery emulator's REST API.",
  },
  BIGQUERY_STORAGE_ENDPOINT: {
    section: 'local',
    meaning: "`host:port` of the emulator's Storage Write API (plaintext gRPC), e.g. `127.0.0.1:19060`.",
  },
  FIRESTORE_EMULATOR_HOST: { section: 'local', meaning: "`host:port` of Firestore's emulator." },
  PUBSUB_EMULATOR_HOST: { section: 'local', meaning: "`host:port` of Pub/Sub's emulator." },
  CLOUD_RUN_ADMIN_ENDPOINT: {
    section: 'local',
    meaning:
      '`host:port` of a plaintext gRPC Cloud Run Admin API (tests serve its protocol; no emulator exists), for the dispatcher.',
  },
  SECRET_MANAGER_ENDPOINT: {
    section: 'local',
    meaning:
      '`host:port` of a plaintext gRPC Secret Manager (tests serve its protocol; no emulator exists). See [operations](operations.md).',
  },
} as const satisfies Record<string, Setting>;

export type SettingName = keyof typeof settings;

/** The default of a setting as a value of the type asked for; a setting without one is a programming error. */
export function settingDefault<K extends 'string' | 'number' | 'boolean'>(
  name: SettingName,
  kind: K,
): K extends 'string' ? string : K extends 'number' ? number : boolean {
  const value = (settings[name] as Setting).default;
  if (typeof value !== kind) throw new Error(`setting ${name} has no ${kind} default in settings.ts`);
  return value as never;
}

/** The least a pipeline needs to parse, for checking other settings alone (tests, `pulumi preview`). */
export const leastSettings: Readonly<Partial<Record<SettingName, string>>> = {
  PIPELINE_ID: 'p',
  GOOGLE_CLOUD_PROJECT: 'g',
  KAFKA_BROKERS: 'b:1',
  KAFKA_TOPICS: 't',
  BQ_DATASET: 'ds',
  BQ_TABLE: 't',
  BQ_SCHEMA_FILE: 's.json',
  DEAD_LETTER_TOPIC: 'dead',
};
