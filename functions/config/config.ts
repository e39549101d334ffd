import { readFileSync } from 'node:fs';
import { ConfigError } from '../kernel/errors.js';
import type { LogLevel } from '../kernel/logger.js';
import { logLevelNames } from '../kernel/logger.js';
import { type BigQueryConfig, bigqueryOf, whenRefusal, whenWriteModes, writeModeOf } from './bigquery.js';
import { type DispatchConfig, dispatchOf } from './dispatch.js';
import { type KafkaSecurity, kafkaSecurity } from './kafka.js';
import { deepFreeze, type Env, reader } from './reader.js';
import type { Route } from './routes.js';
import { followOf, runShape } from './run.js';
import { secretManagerEndpoint } from './secret-manager-endpoint.js';
import { parseStartPosition, type StartPosition } from './start-position.js';
import { registryOf, routesOf, type SchemaRegistryConfig } from './tables.js';

export type { BigQueryConfig, WriteMode } from './bigquery.js';
export type { CdcConfig } from './cdc-config.js';
export type { KafkaSasl, SaslMechanism } from './kafka.js';
export type { Reader } from './reader.js';
export type { SchemaRegistryConfig } from './tables.js';

/**
 * The drain's configuration, parsed from the environment in one place (parseConfig), one file a section:
 * run.ts (budget, lease, tasks), kafka.ts (security), tables.ts (routes, layout, registry), bigquery.ts
 * (write mode and its settings), cdc-config.ts.
 */
export interface DrainConfig {
  readonly pipelineId: string;
  readonly project: string;
  readonly kafka: KafkaSecurity & {
    readonly brokers: readonly string[];
    /**
     * KAFKA_TOPICS: the topics to drain, by name. With ROUTES_FILE it may be empty (the routes say which
     * topics, by name or regex); when set, each must match a route.
     */
    readonly topics: readonly string[];
  };
  /** Which topics go to which table (ROUTES_FILE, or the single-table variables as one route). */
  readonly routes: readonly Route[];
  /** ROUTES_FILE, when the routes come from one (errors about a route then name it). */
  readonly routesFile: string | null;
  /** Where Avro / Protobuf / JSON Schema values find their schemas (SCHEMA_REGISTRY_URL); null: nowhere. */
  readonly schemaRegistry: SchemaRegistryConfig | null;
  readonly bigquery: BigQueryConfig;
  /** Local emulators (host:port); null in production. */
  readonly emulators: {
    readonly firestore: string | null;
    readonly pubsub: string | null;
    /** Where secret references were resolved (resolved before parsing: secret-references.ts). */
    readonly secretManager: string | null;
  };
  readonly deadLetterTopic: string;
  readonly alertTopic: string | null;
  readonly budgetSeconds: number;
  /** DRAIN_UNTIL=budget: the run follows the log until its budget, a batch cut after `lingerMs`. */
  readonly follow: { readonly lingerMs: number } | null;
  readonly batchMaxRecords: number;
  readonly batchMaxBytes: number;
  readonly leaseTtlSeconds: number;
  readonly idleAlertSeconds: number;
  readonly stallAlertSeconds: number;
  readonly backlogAlertRecords: number;
  readonly retentionGapPolicy: 'fail' | 'skip';
  readonly startPosition: StartPosition;
  /** The pipeline's UNKNOWN_FIELDS and FIELD_NAMES: each route's (`route.unknownFields`) unless it says its own. */
  readonly unknownFields: 'reject' | 'ignore' | 'json' | 'evolve';
  /** UNKNOWN_FIELDS=evolve: columns a route may add in one run, and the table's top-level columns at most. */
  readonly evolveColumns: { readonly perRun: number; readonly max: number };
  readonly fieldNames: 'strict' | 'sanitize';
  /** What a record with a null value (a tombstone) becomes. */
  readonly tombstones: 'skip' | 'dead-letter';
  readonly logLevel: LogLevel;
  readonly execution: string;
  readonly taskIndex: number;
  readonly taskCount: number;
  /** The dispatcher's bounds and job (functions/dispatch/). */
  readonly dispatch: DispatchConfig;
}

/**
 * The one place for defaults and checks. Returns a frozen config or throws a ConfigError that names the
 * variable. Takes the environment as a parameter so that it is tested table-driven.
 */
export function parseConfig(
  env: Env,
  readFile: (path: string) => string = (path) => readFileSync(path, 'utf8'),
): DrainConfig {
  const read = reader(env);
  const writeMode = writeModeOf(read);

  const { budgetSeconds, leaseTtlSeconds, taskCount, taskIndex } = runShape(read);

  const { sasl, ssl, tls } = kafkaSecurity(read);

  // The pipeline's identity first: with nothing set, the first error names PIPELINE_ID.
  const pipelineId = read.matching(
    'PIPELINE_ID',
    /^[a-zA-Z0-9_-]{1,100}$/,
    'letters, digits, _ and -, at most 100',
  );
  const project = read.required('GOOGLE_CLOUD_PROJECT');
  const brokers = read.list('KAFKA_BROKERS', /^[^\s:]+:\d{1,5}$/, 'host:port');
  const { routes, routesFile, topics, unknownFields, fieldNames } = routesOf(read, readFile);
  const schemaRegistry = registryOf(read, routes, routesFile);
  if (routes.some((r) => r.when !== null) && !whenWriteModes.includes(writeMode))
    throw new ConfigError('ROUTES_FILE', whenRefusal(writeMode));

  const bigquery = bigqueryOf(read, writeMode, taskCount);
  const load = bigquery.load;
  const config: DrainConfig = {
    pipelineId,
    project,
    kafka: {
      brokers,
      topics,
      ssl,
      tls,
      sasl,
    },
    routes,
    routesFile,
    schemaRegistry,
    bigquery,
    emulators: {
      firestore: read.matching('FIRESTORE_EMULATOR_HOST', /^[^\s:/]+:\d{1,5}$/, 'host:port', true),
      pubsub: read.matching('PUBSUB_EMULATOR_HOST', /^[^\s:/]+:\d{1,5}$/, 'host:port', true),
      secretManager: secretManagerEndpoint(read),
    },
    deadLetterTopic: read.matching(
      'DEAD_LETTER_TOPIC',
      /^[a-zA-Z][a-zA-Z0-9._~%+-]{2,254}$/,
      'a Pub/Sub topic id',
    ),
    alertTopic: read.optional('ALERT_TOPIC'),
    budgetSeconds,
    follow: followOf(read, writeMode, new Set(routes.map((r) => `${r.dataset}.${r.table}`)).size, taskCount),
    batchMaxRecords: read.integer('BATCH_MAX_RECORDS', 1, 50_000),
    batchMaxBytes: read.integer('BATCH_MAX_BYTES', 1024, 100 * 1024 * 1024),
    leaseTtlSeconds,
    idleAlertSeconds: read.integer('IDLE_ALERT_SECONDS', 1, 30 * 24 * 3600),
    stallAlertSeconds: read.integer('STALL_ALERT_SECONDS', 1, 30 * 24 * 3600),
    backlogAlertRecords: read.integer('BACKLOG_ALERT_RECORDS', 1, Number.MAX_SAFE_INTEGER),
    retentionGapPolicy: read.oneOf('RETENTION_GAP_POLICY', ['fail', 'skip'] as const),
    startPosition: parseStartPosition(read.text('START_POSITION')),
    unknownFields,
    evolveColumns: {
      perRun: read.integer('EVOLVE_COLUMNS_PER_RUN', 1, 1000),
      max: read.integer('EVOLVE_COLUMNS_MAX', 1, 10_000),
    },
    fieldNames,
    tombstones: read.oneOf('TOMBSTONES', ['skip', 'dead-letter'] as const),
    logLevel: logLevelNames[read.oneOf('LOG_LEVEL', Object.keys(logLevelNames))]!,
    execution: read.text('CLOUD_RUN_EXECUTION'),
    taskIndex,
    taskCount,
    dispatch: dispatchOf(
      read,
      load === null ? null : { perDay: load.jobsPerTablePerDay, periodSeconds: load.schedulePeriodSeconds },
    ),
  };
  return deepFreeze(config);
}
