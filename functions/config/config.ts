import { readFileSync } from 'node:fs';
import { ConfigError } from '../kernel/errors.js';
import { type LogLevel, logLevelNames } from '../kernel/logger.js';
import { type CdcConfig, cdcOf } from './cdc-config.js';
import {
  defaultTableLayout,
  parseRoutes,
  type Route,
  type TableLayout,
  tableLayoutProblem,
  valueFormatNames,
  valueFormatProblem,
} from './routes.js';
import { parseStartPosition, type StartPosition } from './start-position.js';

export type WriteMode = 'insert-all' | 'merge' | 'storage-write' | 'cdc';
export type { CdcConfig } from './cdc-config.js';

export type SaslMechanism = 'plain' | 'scram-sha-256' | 'scram-sha-512';

/**
 * How the drain authenticates to Kafka: a user name and password (PLAIN, SCRAM), or a bearer token built
 * from the job's own Google credentials (OAUTHBEARER, as Google's Managed Service for Apache Kafka takes
 * it): no secret at all.
 */
export type KafkaSasl =
  | { readonly mechanism: SaslMechanism; readonly username: string; readonly password: string }
  | { readonly mechanism: 'oauthbearer'; readonly provider: 'google' };

export interface DrainConfig {
  readonly pipelineId: string;
  readonly project: string;
  readonly kafka: {
    readonly brokers: readonly string[];
    /**
     * KAFKA_TOPICS: the topics to drain, by name. With ROUTES_FILE it may be empty (the routes say which
     * topics, by name or regex); when set, each must match a route.
     */
    readonly topics: readonly string[];
    readonly ssl: boolean;
    /** PEM files (paths) for TLS to the brokers: a private CA, and a client certificate and key for mTLS. */
    readonly tls: {
      readonly caFile: string | null;
      readonly certFile: string | null;
      readonly keyFile: string | null;
    };
    readonly sasl: KafkaSasl | null;
  };
  /** Which topics go to which table (ROUTES_FILE, or the single-table variables as one route). */
  readonly routes: readonly Route[];
  /** ROUTES_FILE, when the routes come from one (errors about a route then name it). */
  readonly routesFile: string | null;
  /** Where Avro / Protobuf / JSON Schema values find their schemas (SCHEMA_REGISTRY_URL); null: nowhere. */
  readonly schemaRegistry: SchemaRegistryConfig | null;
  readonly bigquery: {
    readonly writeMode: WriteMode;
    /** cdc mode's settings; null in the other modes. */
    readonly cdc: CdcConfig | null;
    readonly location: string | null;
    readonly apiEndpoint: string | null;
    /** The Storage Write API's gRPC `host:port` of a local emulator (plaintext); null in production. */
    readonly storageEndpoint: string | null;
  };
  /** Local emulators (host:port); null in production. */
  readonly emulators: { readonly firestore: string | null; readonly pubsub: string | null };
  readonly deadLetterTopic: string;
  readonly alertTopic: string | null;
  readonly budgetSeconds: number;
  readonly batchMaxRecords: number;
  readonly batchMaxBytes: number;
  readonly leaseTtlSeconds: number;
  readonly idleAlertSeconds: number;
  readonly stallAlertSeconds: number;
  readonly backlogAlertRecords: number;
  readonly retentionGapPolicy: 'fail' | 'skip';
  readonly startPosition: StartPosition;
  readonly unknownFields: 'reject' | 'ignore';
  /** What a record with a null value (a tombstone) becomes. */
  readonly tombstones: 'skip' | 'dead-letter';
  readonly logLevel: LogLevel;
  readonly execution: string;
  readonly taskIndex: number;
  readonly taskCount: number;
  /** Test-only: a named point at which the process kills itself (crash tests). Never set in production. */
  readonly faultPoint: string | null;
  /** Test-only: what happens there: `kill` (SIGKILL) or `stop` (SIGSTOP: a zombie, frozen mid-flush). */
  readonly faultAction: 'kill' | 'stop';
}

export interface SchemaRegistryConfig {
  readonly url: string;
  /**
   * basic: SCHEMA_REGISTRY_USERNAME and _PASSWORD (Secret Manager in production); google: a bearer token
   * from the job's own credentials (Google's Managed Kafka schema registry); none.
   */
  readonly auth: 'none' | 'basic' | 'google';
  readonly username: string | null;
  readonly password: string | null;
}

type Env = Readonly<Record<string, string | undefined>>;
export type Reader = ReturnType<typeof reader>;

/**
 * The one place for defaults and checks. Returns a frozen config or throws a ConfigError that names the
 * variable. Takes the environment as a parameter so that it is tested table-driven.
 */
export function parseConfig(
  env: Env,
  readFile: (path: string) => string = (path) => readFileSync(path, 'utf8'),
): DrainConfig {
  const read = reader(env);
  const writeMode = read.oneOf(
    'BQ_WRITE_MODE',
    ['insert-all', 'merge', 'storage-write', 'cdc'],
    'storage-write',
  );

  const { budgetSeconds, leaseTtlSeconds, taskCount, taskIndex } = runShape(read);

  const { sasl, ssl, tls } = kafkaSecurity(read);

  const apiEndpoint = read.optional('BIGQUERY_API_ENDPOINT');
  if (apiEndpoint !== null && !/^https?:\/\/[^/]+/.test(apiEndpoint)) {
    throw new ConfigError('BIGQUERY_API_ENDPOINT', `"${apiEndpoint}" is not an http(s) URL`);
  }

  // The pipeline's identity first: with nothing set, the first error names PIPELINE_ID.
  const pipelineId = read.matching(
    'PIPELINE_ID',
    /^[a-zA-Z0-9_-]{1,100}$/,
    'letters, digits, _ and -, at most 100',
  );
  const project = read.required('GOOGLE_CLOUD_PROJECT');
  const brokers = read.list('KAFKA_BROKERS', /^[^\s:]+:\d{1,5}$/, 'host:port');
  const { routes, routesFile, topics } = routesOf(read, readFile);
  const schemaRegistry = registryOf(read, routes, routesFile);

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
    bigquery: {
      writeMode,
      cdc: writeMode === 'cdc' ? cdcOf(read) : null,
      location: read.optional('BQ_LOCATION'),
      apiEndpoint,
      storageEndpoint: read.matching('BIGQUERY_STORAGE_ENDPOINT', /^[^\s:/]+:\d{1,5}$/, 'host:port', true),
    },
    emulators: {
      firestore: read.matching('FIRESTORE_EMULATOR_HOST', /^[^\s:/]+:\d{1,5}$/, 'host:port', true),
      pubsub: read.matching('PUBSUB_EMULATOR_HOST', /^[^\s:/]+:\d{1,5}$/, 'host:port', true),
    },
    deadLetterTopic: read.matching(
      'DEAD_LETTER_TOPIC',
      /^[a-zA-Z][a-zA-Z0-9._~%+-]{2,254}$/,
      'a Pub/Sub topic id',
    ),
    alertTopic: read.optional('ALERT_TOPIC'),
    budgetSeconds,
    batchMaxRecords: read.integer('BATCH_MAX_RECORDS', 2_000, 1, 50_000),
    batchMaxBytes: read.integer('BATCH_MAX_BYTES', 5 * 1024 * 1024, 1024, 100 * 1024 * 1024),
    leaseTtlSeconds,
    idleAlertSeconds: read.integer('IDLE_ALERT_SECONDS', 300, 1, 30 * 24 * 3600),
    stallAlertSeconds: read.integer('STALL_ALERT_SECONDS', 900, 1, 30 * 24 * 3600),
    backlogAlertRecords: read.integer('BACKLOG_ALERT_RECORDS', 100_000, 1, Number.MAX_SAFE_INTEGER),
    retentionGapPolicy: read.oneOf('RETENTION_GAP_POLICY', ['fail', 'skip'], 'fail'),
    startPosition: parseStartPosition(read.optional('START_POSITION')),
    unknownFields: read.oneOf('UNKNOWN_FIELDS', ['reject', 'ignore'], 'reject'),
    tombstones: read.oneOf('TOMBSTONES', ['skip', 'dead-letter'], 'skip'),
    logLevel: logLevelNames[read.oneOf('LOG_LEVEL', Object.keys(logLevelNames), 'info')]!,
    execution: read.optional('CLOUD_RUN_EXECUTION') ?? 'local',
    taskIndex,
    taskCount,
    faultPoint: read.optional('KBD_FAULT_POINT'),
    faultAction: read.oneOf('KBD_FAULT_ACTION', ['kill', 'stop'], 'kill'),
  };
  return deepFreeze(config);
}

/** The run's budget and lease, and this task's place among the execution's tasks. */
function runShape(read: Reader) {
  const budgetSeconds = read.integer('DRAIN_BUDGET_SECONDS', 240, 5, 7 * 24 * 3600);
  // The default follows a short budget down: a default must never turn a valid budget into an error.
  const leaseTtlSeconds = read.integer('LEASE_TTL_SECONDS', Math.min(60, budgetSeconds), 3, 3600);
  // A crashed run keeps its partitions blocked until its leases expire; a TTL longer than a whole run
  // would make the next scheduled run skip them.
  if (leaseTtlSeconds > budgetSeconds) {
    throw new ConfigError(
      'LEASE_TTL_SECONDS',
      `(${leaseTtlSeconds}) must not exceed DRAIN_BUDGET_SECONDS (${budgetSeconds}): a crashed run would block its partitions past the next run`,
    );
  }

  const taskCount = read.integer('CLOUD_RUN_TASK_COUNT', 1, 1, 10_000);
  const taskIndex = read.integer('CLOUD_RUN_TASK_INDEX', 0, 0, 9_999);
  if (taskIndex >= taskCount) {
    throw new ConfigError(
      'CLOUD_RUN_TASK_INDEX',
      `(${taskIndex}) must be below CLOUD_RUN_TASK_COUNT (${taskCount})`,
    );
  }

  return { budgetSeconds, leaseTtlSeconds, taskCount, taskIndex };
}

/** Where records go: one table (BQ_TABLE, ...) or the routes of ROUTES_FILE, and the topics named. */
function routesOf(read: Reader, readFile: (path: string) => string) {
  const metadata = {
    headers: read.boolean('BQ_HEADERS_COLUMN', false),
    keyText: read.boolean('BQ_KEY_TEXT_COLUMN', false),
  };
  const dataset = read.matching('BQ_DATASET', /^[a-zA-Z0-9_]{1,1024}$/, 'letters, digits and _', true);
  const routesFile = read.optional('ROUTES_FILE');
  const valueFormat = read.oneOf('VALUE_FORMAT', valueFormatNames, 'json');
  const layout = layoutOf(read);
  let routes: Route[];
  let topics: string[];
  const topicList = (optional: boolean) =>
    optional && read.optional('KAFKA_TOPICS') === null
      ? []
      : read.list('KAFKA_TOPICS', /^[a-zA-Z0-9._-]{1,249}$/, 'a Kafka topic name');
  if (routesFile === null) {
    topics = topicList(false);
    const schemaFile = read.optional('BQ_SCHEMA_FILE');
    const valueSchemaFile = read.optional('VALUE_SCHEMA_FILE');
    const problem = valueFormatProblem(valueFormat, schemaFile !== null, valueSchemaFile !== null);
    if (problem !== undefined) {
      throw new ConfigError(
        schemaFile === null && valueFormat === 'json' ? 'BQ_SCHEMA_FILE' : 'VALUE_SCHEMA_FILE',
        problem
          .replace('"schemaFile"', 'BQ_SCHEMA_FILE')
          .replace('"valueSchemaFile"', 'VALUE_SCHEMA_FILE')
          .replace('valueFormat', 'VALUE_FORMAT='),
      );
    }
    routes = [
      {
        topics: topics.map((name) => ({ kind: 'name', name })),
        dataset: dataset ?? read.required('BQ_DATASET'),
        table: read.matching('BQ_TABLE', /^[a-zA-Z0-9_]{1,1024}$/, 'letters, digits and _'),
        schemaFile,
        rulesModule: read.optional('RULES_MODULE'),
        metadata,
        valueFormat,
        valueSchemaFile,
        valueSubject: read.optional('VALUE_SUBJECT'),
        layout,
      },
    ];
  } else {
    // One way to say where records go: the routes, each with its own table, schema and rules.
    for (const name of ['BQ_TABLE', 'BQ_SCHEMA_FILE', 'RULES_MODULE', 'VALUE_SCHEMA_FILE', 'VALUE_SUBJECT']) {
      if (read.optional(name) !== null) {
        throw new ConfigError(name, 'is set with ROUTES_FILE: set the table, schema and rules in each route');
      }
    }
    let text: string;
    try {
      text = readFile(routesFile);
    } catch (error) {
      throw new ConfigError('ROUTES_FILE', `(${routesFile}) cannot be read: ${(error as Error).message}`);
    }
    routes = parseRoutes(text, routesFile, { dataset, metadata, valueFormat, layout });
    topics = topicList(true);
  }

  return { routes, routesFile, topics };
}

/** The table layout: BQ_PARTITION_FIELD, _TYPE, _EXPIRATION_DAYS, BQ_REQUIRE_PARTITION_FILTER, BQ_CLUSTERING. */
function layoutOf(read: Reader): TableLayout {
  const expiration = read.optional('BQ_PARTITION_EXPIRATION_DAYS');
  const clustering = read.optional('BQ_CLUSTERING');
  const layout: TableLayout = {
    partitionField: read.optional('BQ_PARTITION_FIELD') ?? defaultTableLayout.partitionField,
    partitionType: read.oneOf('BQ_PARTITION_TYPE', ['DAY', 'HOUR', 'MONTH', 'YEAR'], 'DAY'),
    partitionExpirationDays:
      expiration === null ? null : read.integer('BQ_PARTITION_EXPIRATION_DAYS', 0, 1, 100_000),
    requirePartitionFilter: read.boolean('BQ_REQUIRE_PARTITION_FILTER', false),
    clustering:
      clustering === null
        ? defaultTableLayout.clustering
        : clustering
            .split(',')
            .map((c) => c.trim())
            .filter((c) => c !== ''),
  };
  const problem = tableLayoutProblem(layout);
  if (problem !== undefined) {
    const variable = /clustering/.test(problem)
      ? 'BQ_CLUSTERING'
      : /required partition filter/.test(problem)
        ? 'BQ_REQUIRE_PARTITION_FILTER'
        : /expiration/.test(problem)
          ? 'BQ_PARTITION_EXPIRATION_DAYS'
          : 'BQ_PARTITION_FIELD';
    throw new ConfigError(variable, problem);
  }
  return layout;
}

/** The registry, required when a route reads the wire format; its credentials go together. */
function registryOf(
  read: Reader,
  routes: readonly Route[],
  routesFile: string | null,
): SchemaRegistryConfig | null {
  const url = read.matching('SCHEMA_REGISTRY_URL', /^https?:\/\/[^/\s]+/, 'an http(s) URL', true);
  const needing = routes.find((r) => r.valueFormat !== 'json' && r.valueSchemaFile === null);
  if (url === null) {
    if (needing !== undefined)
      throw new ConfigError(
        'SCHEMA_REGISTRY_URL',
        `is required: ${routesFile === null ? `VALUE_FORMAT=${needing.valueFormat}` : `the route of ${needing.dataset}.${needing.table} (valueFormat ${needing.valueFormat})`} reads Confluent's wire format, whose schemas are in a registry`,
      );
    for (const name of ['SCHEMA_REGISTRY_USERNAME', 'SCHEMA_REGISTRY_PASSWORD', 'SCHEMA_REGISTRY_AUTH'])
      if (read.optional(name) !== null) throw new ConfigError(name, 'is set but SCHEMA_REGISTRY_URL is not');
    return null;
  }
  const username = read.optional('SCHEMA_REGISTRY_USERNAME');
  const password = read.optional('SCHEMA_REGISTRY_PASSWORD');
  const byDefault =
    username !== null ? 'basic' : /\.googleapis\.com(:\d+)?(\/|$)/.test(url) ? 'google' : 'none';
  const auth = read.oneOf('SCHEMA_REGISTRY_AUTH', ['none', 'basic', 'google'], byDefault);
  if (auth === 'basic' && (username === null || password === null))
    throw new ConfigError(
      username === null ? 'SCHEMA_REGISTRY_USERNAME' : 'SCHEMA_REGISTRY_PASSWORD',
      'is required with basic auth to the schema registry (both go together)',
    );
  if (auth !== 'basic' && (username !== null || password !== null))
    throw new ConfigError(
      username !== null ? 'SCHEMA_REGISTRY_USERNAME' : 'SCHEMA_REGISTRY_PASSWORD',
      `is set with SCHEMA_REGISTRY_AUTH=${auth}, which sends no password`,
    );
  return { url, auth, username, password };
}

/** SASL and TLS to the brokers, with the rules across them. */
function kafkaSecurity(read: Reader): Pick<DrainConfig['kafka'], 'sasl' | 'ssl' | 'tls'> {
  const mechanism = read.oneOf(
    'KAFKA_SASL_MECHANISM',
    ['plain', 'scram-sha-256', 'scram-sha-512', 'oauthbearer'],
    null,
  );
  const passwordBased = mechanism !== null && mechanism !== 'oauthbearer';
  if (!passwordBased) {
    for (const name of ['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD']) {
      if (read.optional(name) !== null) {
        throw new ConfigError(
          name,
          mechanism === null
            ? 'is set but KAFKA_SASL_MECHANISM is not'
            : 'is set with KAFKA_SASL_MECHANISM=oauthbearer, which sends a token and no password',
        );
      }
    }
  }
  const provider = read.oneOf('KAFKA_OAUTH_PROVIDER', ['google'], null);
  if (mechanism === 'oauthbearer' && provider === null) {
    throw new ConfigError(
      'KAFKA_OAUTH_PROVIDER',
      'is required with KAFKA_SASL_MECHANISM=oauthbearer (google)',
    );
  }
  if (mechanism !== 'oauthbearer' && provider !== null) {
    throw new ConfigError('KAFKA_OAUTH_PROVIDER', 'is set but KAFKA_SASL_MECHANISM is not oauthbearer');
  }
  const sasl: KafkaSasl | null =
    mechanism === null
      ? null
      : mechanism === 'oauthbearer'
        ? { mechanism, provider: 'google' }
        : {
            mechanism,
            username: read.required('KAFKA_SASL_USERNAME'),
            password: read.required('KAFKA_SASL_PASSWORD'),
          };

  const tls = {
    caFile: read.optional('KAFKA_SSL_CA_FILE'),
    certFile: read.optional('KAFKA_SSL_CERT_FILE'),
    keyFile: read.optional('KAFKA_SSL_KEY_FILE'),
  };
  if ((tls.certFile === null) !== (tls.keyFile === null)) {
    const missing = tls.certFile === null ? 'KAFKA_SSL_CERT_FILE' : 'KAFKA_SSL_KEY_FILE';
    throw new ConfigError(missing, 'is required with the other half of the client certificate (mTLS)');
  }
  const tlsFileSet = Object.values(tls).some((file) => file !== null);
  // A bearer token is as good as a password to whoever reads it: it never travels in clear.
  const ssl = read.boolean('KAFKA_SSL', tlsFileSet || mechanism === 'oauthbearer');
  if (!ssl && tlsFileSet) {
    throw new ConfigError('KAFKA_SSL', 'is false but KAFKA_SSL_CA_FILE or a client certificate is set');
  }
  if (!ssl && mechanism === 'oauthbearer') {
    throw new ConfigError(
      'KAFKA_SSL',
      'is false with KAFKA_SASL_MECHANISM=oauthbearer: the token would travel in clear',
    );
  }
  return { sasl, ssl, tls };
}

function reader(env: Env) {
  function optional(name: string): string | null {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? null : value;
  }
  function required(name: string): string {
    const value = optional(name);
    if (value === null) throw new ConfigError(name, 'is required');
    return value;
  }
  return {
    optional,
    required,
    matching<O extends boolean = false>(
      name: string,
      pattern: RegExp,
      what: string,
      isOptional?: O,
    ): O extends true ? string | null : string {
      type Result = O extends true ? string | null : string;
      const value = isOptional ? optional(name) : required(name);
      if (value === null) return null as Result;
      if (!pattern.test(value)) throw new ConfigError(name, `"${value}" is not valid (${what})`);
      return value as Result;
    },
    list(name: string, pattern: RegExp, what: string): string[] {
      const items = required(name)
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
      if (items.length === 0) throw new ConfigError(name, 'is required');
      for (const item of items) {
        if (!pattern.test(item)) throw new ConfigError(name, `"${item}" is not valid (${what})`);
      }
      if (new Set(items).size !== items.length) throw new ConfigError(name, 'lists an entry twice');
      return items;
    },
    integer(name: string, fallback: number, min: number, max: number): number {
      const raw = optional(name);
      if (raw === null) return fallback;
      if (!/^-?\d+$/.test(raw)) throw new ConfigError(name, `"${raw}" is not a whole number`);
      const value = Number(raw);
      if (value < min || value > max)
        throw new ConfigError(name, `(${value}) must be between ${min} and ${max}`);
      return value;
    },
    boolean(name: string, fallback: boolean): boolean {
      const raw = optional(name)?.toLowerCase() ?? null;
      if (raw === null) return fallback;
      if (['true', '1', 'yes'].includes(raw)) return true;
      if (['false', '0', 'no'].includes(raw)) return false;
      throw new ConfigError(name, `"${raw}" is not true or false`);
    },
    oneOf<T extends string, D extends T | null>(name: string, allowed: readonly T[], fallback: D): T | D {
      const raw = optional(name);
      if (raw === null) return fallback;
      if (!(allowed as readonly string[]).includes(raw)) {
        throw new ConfigError(name, `"${raw}" is not one of ${allowed.join(', ')}`);
      }
      return raw as T;
    },
  };
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !(value instanceof RegExp)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
