import { describe, expect, test } from 'vitest';
import { parseConfig } from '../../functions/config/config.js';
import { ConfigError } from '../../functions/kernel/errors.js';
import { kafkaClientOptions } from '../../functions/sources/kafka-client.js';

const base = {
  PIPELINE_ID: 'orders',
  GOOGLE_CLOUD_PROJECT: 'proj',
  KAFKA_BROKERS: 'b1:9092, b2:9092',
  KAFKA_TOPICS: 'orders,refunds',
  BQ_DATASET: 'ds',
  BQ_TABLE: 'orders',
  BQ_SCHEMA_FILE: '/schema.json',
  DEAD_LETTER_TOPIC: 'orders-dead-letters',
};

describe('parseConfig', () => {
  test('defaults', () => {
    const config = parseConfig(base);
    expect(config).toMatchObject({
      pipelineId: 'orders',
      kafka: { brokers: ['b1:9092', 'b2:9092'], topics: ['orders', 'refunds'], ssl: false, sasl: null },
      bigquery: { writeMode: 'storage-write', apiEndpoint: null, location: null, storageEndpoint: null },
      budgetSeconds: 240,
      follow: null,
      batchMaxRecords: 5000,
      batchMaxBytes: 5 * 1024 * 1024,
      leaseTtlSeconds: 60,
      idleAlertSeconds: 300,
      retentionGapPolicy: 'fail',
      logLevel: 'info',
      execution: 'local',
      taskIndex: 0,
      taskCount: 1,
      emulators: { firestore: null, pubsub: null },
    });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.kafka.brokers)).toBe(true);
  });

  test('reads every setting it knows', () => {
    const config = parseConfig({
      ...base,
      KAFKA_SASL_MECHANISM: 'scram-sha-512',
      KAFKA_SASL_USERNAME: 'u',
      KAFKA_SASL_PASSWORD: 'p',
      KAFKA_SSL: 'true',
      BQ_LOCATION: 'EU',
      BIGQUERY_API_ENDPOINT: 'http://127.0.0.1:9050',
      FIRESTORE_EMULATOR_HOST: '127.0.0.1:8080',
      PUBSUB_EMULATOR_HOST: 'localhost:8085',
      ALERT_TOPIC: 'alerts',
      DRAIN_BUDGET_SECONDS: '600',
      BATCH_MAX_RECORDS: '1000',
      BATCH_MAX_BYTES: '2048',
      LEASE_TTL_SECONDS: '30',
      IDLE_ALERT_SECONDS: '60',
      RETENTION_GAP_POLICY: 'skip',
      LOG_LEVEL: 'debug',
      CLOUD_RUN_EXECUTION: 'exec-1',
      CLOUD_RUN_TASK_INDEX: '3',
      CLOUD_RUN_TASK_COUNT: '4',
    });
    expect(config).toMatchObject({
      kafka: { ssl: true, sasl: { mechanism: 'scram-sha-512', username: 'u', password: 'p' } },
      bigquery: { location: 'EU', apiEndpoint: 'http://127.0.0.1:9050' },
      emulators: { firestore: '127.0.0.1:8080', pubsub: 'localhost:8085' },
      alertTopic: 'alerts',
      budgetSeconds: 600,
      batchMaxRecords: 1000,
      batchMaxBytes: 2048,
      leaseTtlSeconds: 30,
      idleAlertSeconds: 60,
      retentionGapPolicy: 'skip',
      logLevel: 'debug',
      execution: 'exec-1',
      taskIndex: 3,
      taskCount: 4,
    });
  });

  test.each([
    [{ PIPELINE_ID: '' }, 'PIPELINE_ID', 'is required'],
    [{ PIPELINE_ID: 'has space' }, 'PIPELINE_ID', 'is not valid'],
    [{ GOOGLE_CLOUD_PROJECT: undefined }, 'GOOGLE_CLOUD_PROJECT', 'is required'],
    [{ KAFKA_BROKERS: 'nohostport' }, 'KAFKA_BROKERS', '"nohostport" is not valid'],
    [{ KAFKA_BROKERS: ' , ' }, 'KAFKA_BROKERS', 'is required'],
    [{ KAFKA_TOPICS: 'a,a' }, 'KAFKA_TOPICS', 'twice'],
    [{ KAFKA_TOPICS: 'bad topic' }, 'KAFKA_TOPICS', 'is not valid'],
    [{ KAFKA_SSL: 'maybe' }, 'KAFKA_SSL', 'not true or false'],
    [{ BQ_HEADERS_COLUMN: 'on' }, 'BQ_HEADERS_COLUMN', 'not true or false'],
    [{ BQ_KEY_TEXT_COLUMN: 'si' }, 'BQ_KEY_TEXT_COLUMN', 'not true or false'],
    [{ KAFKA_SASL_MECHANISM: 'gssapi' }, 'KAFKA_SASL_MECHANISM', 'is not one of'],
    [{ KAFKA_SASL_MECHANISM: 'plain' }, 'KAFKA_SASL_USERNAME', 'is required'],
    [{ KAFKA_SASL_USERNAME: 'u' }, 'KAFKA_SASL_USERNAME', 'KAFKA_SASL_MECHANISM is not'],
    [{ BQ_WRITE_MODE: 'upsert' }, 'BQ_WRITE_MODE', 'is not one of'],
    [{ BQ_WRITE_MODE: 'cdc' }, 'CHANGE_FORMAT', 'is required with BQ_WRITE_MODE=cdc'],
    [{ BQ_WRITE_MODE: 'cdc', CHANGE_FORMAT: 'maxwell' }, 'CHANGE_FORMAT', 'is not one of'],
    [
      { BQ_WRITE_MODE: 'cdc', CHANGE_FORMAT: 'upsert' },
      'BQ_PRIMARY_KEY',
      'is required with CHANGE_FORMAT=upsert',
    ],
    [
      { BQ_WRITE_MODE: 'cdc', CHANGE_FORMAT: 'debezium', BQ_PRIMARY_KEY: 'a,b-c' },
      'BQ_PRIMARY_KEY',
      'is not valid',
    ],
    [
      {
        BQ_WRITE_MODE: 'cdc',
        CHANGE_FORMAT: 'debezium',
        BQ_PRIMARY_KEY: Array.from({ length: 17 }, (_, i) => `c${i}`).join(','),
      },
      'BQ_PRIMARY_KEY',
      'at most 16',
    ],
    [
      { BQ_WRITE_MODE: 'cdc', CHANGE_FORMAT: 'debezium', BQ_MAX_STALENESS: '15 minutes' },
      'BQ_MAX_STALENESS',
      'not a duration',
    ],
    [
      { BQ_WRITE_MODE: 'cdc', CHANGE_FORMAT: 'debezium', BQ_MAX_STALENESS: '25h' },
      'BQ_MAX_STALENESS',
      'at most 24h',
    ],
    [
      { BQ_WRITE_MODE: 'cdc', CHANGE_FORMAT: 'debezium', CDC_SOURCE_COLUMNS: 'yes' },
      'CDC_SOURCE_COLUMNS',
      'is not one of',
    ],
    [{ BQ_DATASET: 'my-ds' }, 'BQ_DATASET', 'is not valid'],
    [{ BIGQUERY_API_ENDPOINT: '127.0.0.1:9050' }, 'BIGQUERY_API_ENDPOINT', 'not an http(s) URL'],
    [{ FIRESTORE_EMULATOR_HOST: 'http://x:1' }, 'FIRESTORE_EMULATOR_HOST', 'is not valid'],
    [{ DEAD_LETTER_TOPIC: undefined }, 'DEAD_LETTER_TOPIC', 'is required'],
    [{ DRAIN_BUDGET_SECONDS: '1.5' }, 'DRAIN_BUDGET_SECONDS', 'not a whole number'],
    [{ DRAIN_BUDGET_SECONDS: '2' }, 'DRAIN_BUDGET_SECONDS', 'between 5 and'],
    [{ BATCH_MAX_RECORDS: '0' }, 'BATCH_MAX_RECORDS', 'between 1 and'],
    [{ BATCH_MAX_BYTES: '10' }, 'BATCH_MAX_BYTES', 'between 1024 and'],
    [
      { LEASE_TTL_SECONDS: '300', DRAIN_BUDGET_SECONDS: '120' },
      'LEASE_TTL_SECONDS',
      'must not exceed DRAIN_BUDGET_SECONDS',
    ],
    [{ CLOUD_RUN_TASK_INDEX: '2', CLOUD_RUN_TASK_COUNT: '2' }, 'CLOUD_RUN_TASK_INDEX', 'must be below'],
    [{ RETENTION_GAP_POLICY: 'earliest' }, 'RETENTION_GAP_POLICY', 'is not one of'],
    [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL', 'is not one of'],
    [{ TOMBSTONES: 'drop' }, 'TOMBSTONES', 'is not one of'],
    [{ KAFKA_SSL_CERT_FILE: '/c.pem' }, 'KAFKA_SSL_KEY_FILE', 'client certificate'],
    [{ KAFKA_SSL_KEY_FILE: '/k.pem' }, 'KAFKA_SSL_CERT_FILE', 'client certificate'],
    [{ KAFKA_SSL_CA_FILE: '/ca.pem', KAFKA_SSL: 'false' }, 'KAFKA_SSL', 'KAFKA_SSL_CA_FILE'],
    [{ KAFKA_SASL_MECHANISM: 'oauthbearer' }, 'KAFKA_OAUTH_PROVIDER', 'is required'],
    [
      { KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_OAUTH_PROVIDER: 'okta' },
      'KAFKA_OAUTH_PROVIDER',
      'is not one of',
    ],
    [{ KAFKA_OAUTH_PROVIDER: 'google' }, 'KAFKA_OAUTH_PROVIDER', 'is not oauthbearer'],
    [
      {
        KAFKA_SASL_MECHANISM: 'scram-sha-512',
        KAFKA_SASL_USERNAME: 'u',
        KAFKA_SASL_PASSWORD: 'p',
        KAFKA_OAUTH_PROVIDER: 'google',
      },
      'KAFKA_OAUTH_PROVIDER',
      'is not oauthbearer',
    ],
    [
      { KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_OAUTH_PROVIDER: 'google', KAFKA_SASL_PASSWORD: 'p' },
      'KAFKA_SASL_PASSWORD',
      'sends a token and no password',
    ],
    [
      { KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_OAUTH_PROVIDER: 'google', KAFKA_SSL: 'false' },
      'KAFKA_SSL',
      'in clear',
    ],
  ])('%o is refused naming %s', (override, variable, fragment) => {
    let thrown: unknown;
    try {
      parseConfig({ ...base, ...override });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).variable).toBe(variable);
    expect((thrown as ConfigError).message).toContain(variable);
    expect((thrown as ConfigError).message).toContain(fragment);
  });
});

describe('cdc mode', () => {
  test('the defaults: the key from the records (Debezium), 15 minutes of staleness, no source columns', () => {
    expect(parseConfig({ ...base, BQ_WRITE_MODE: 'cdc', CHANGE_FORMAT: 'debezium' }).bigquery.cdc).toEqual({
      changeFormat: 'debezium',
      primaryKey: [],
      maxStaleness: '0-0 0 0:15:0',
      sourceColumns: false,
    });
    expect(parseConfig(base).bigquery.cdc).toBeNull();
  });
  test.each([
    ['0', null],
    ['90s', '0-0 0 0:1:30'],
    ['2h', '0-0 0 2:0:0'],
    ['24h', '0-0 0 24:0:0'],
    ['45', '0-0 0 0:0:45'],
  ])('BQ_MAX_STALENESS=%s is %s', (text, interval) => {
    const config = parseConfig({
      ...base,
      BQ_WRITE_MODE: 'cdc',
      CHANGE_FORMAT: 'upsert',
      BQ_PRIMARY_KEY: 'tenant, id',
      BQ_MAX_STALENESS: text,
    });
    expect(config.bigquery.cdc).toMatchObject({ primaryKey: ['tenant', 'id'], maxStaleness: interval });
  });
});

describe('settings that depend on each other', () => {
  test('LEASE_TTL_SECONDS defaults to the smaller of 60 and the budget', () => {
    expect(parseConfig({ ...base, DRAIN_BUDGET_SECONDS: '30' }).leaseTtlSeconds).toBe(30);
    expect(parseConfig({ ...base, DRAIN_BUDGET_SECONDS: '600' }).leaseTtlSeconds).toBe(60);
    expect(
      parseConfig({ ...base, DRAIN_BUDGET_SECONDS: '30', LEASE_TTL_SECONDS: '10' }).leaseTtlSeconds,
    ).toBe(10);
  });

  test.each([
    ['warn', 'warning'],
    ['warning', 'warning'],
    ['debug', 'debug'],
    ['error', 'error'],
    [undefined, 'info'],
  ])('LOG_LEVEL=%s is %s', (value, level) => {
    expect(parseConfig({ ...base, LOG_LEVEL: value }).logLevel).toBe(level);
  });

  test('TOMBSTONES defaults to skip', () => {
    expect(parseConfig(base).tombstones).toBe('skip');
    expect(parseConfig({ ...base, TOMBSTONES: 'dead-letter' }).tombstones).toBe('dead-letter');
  });

  test('a CA file or a client certificate turns TLS on', () => {
    expect(parseConfig({ ...base, KAFKA_SSL_CA_FILE: '/ca.pem' }).kafka).toMatchObject({
      ssl: true,
      tls: { caFile: '/ca.pem', certFile: null, keyFile: null },
    });
  });
});

describe('kafkaClientOptions', () => {
  test('the PEM files are read and handed to kafkajs', () => {
    const config = parseConfig({
      ...base,
      KAFKA_SSL_CA_FILE: '/ca.pem',
      KAFKA_SSL_CERT_FILE: '/c.pem',
      KAFKA_SSL_KEY_FILE: '/k.pem',
    });
    const options = kafkaClientOptions(config, 'id', (path) => `pem of ${path}`);
    expect(options.ssl).toEqual({ ca: ['pem of /ca.pem'], cert: 'pem of /c.pem', key: 'pem of /k.pem' });
  });

  test('an unreadable PEM file is a configuration error naming its variable', () => {
    const config = parseConfig({ ...base, KAFKA_SSL_CA_FILE: '/nowhere/ca.pem' });
    expect(() => kafkaClientOptions(config, 'id')).toThrow(/KAFKA_SSL_CA_FILE.*\/nowhere\/ca.pem/);
  });

  test('SASL and SSL settings reach kafkajs', () => {
    const config = parseConfig({
      ...base,
      KAFKA_SASL_MECHANISM: 'plain',
      KAFKA_SASL_USERNAME: 'user',
      KAFKA_SASL_PASSWORD: 'secret',
      KAFKA_SSL: 'true',
    });
    expect(kafkaClientOptions(config, 'id')).toMatchObject({
      clientId: 'id',
      brokers: ['b1:9092', 'b2:9092'],
      ssl: true,
      sasl: { mechanism: 'plain', username: 'user', password: 'secret' },
    });
  });

  test('OAUTHBEARER with Google credentials: TLS on by default, tokens from the token source', async () => {
    const config = parseConfig({
      ...base,
      KAFKA_SASL_MECHANISM: 'oauthbearer',
      KAFKA_OAUTH_PROVIDER: 'google',
    });
    expect(config.kafka).toMatchObject({ ssl: true, sasl: { mechanism: 'oauthbearer', provider: 'google' } });
    let asked = 0;
    const options = kafkaClientOptions(config, 'id', undefined, async () => {
      asked++;
      return { value: 'the-token', expiresAt: 0 };
    });
    expect(options.ssl).toBe(true);
    const sasl = options.sasl as { mechanism: string; authenticationProvider: unknown; password?: unknown };
    expect(sasl.mechanism).toBe('oauthbearer');
    expect(sasl.password).toBeUndefined();
    // Nothing is asked for until a connection authenticates.
    expect(asked).toBe(0);
    expect(typeof sasl.authenticationProvider).toBe('function');
  });

  test('without SASL no credentials are sent', () => {
    const options = kafkaClientOptions(parseConfig(base), 'id');
    expect(options.ssl).toBe(false);
    expect(options.sasl).toBeUndefined();
  });
});

describe('START_POSITION', () => {
  test.each([
    [undefined, { kind: 'earliest' }],
    ['earliest', { kind: 'earliest' }],
    ['latest', { kind: 'latest' }],
    ['timestamp:2026-01-31T12:00:00Z', { kind: 'timestamp', timestamp: Date.parse('2026-01-31T12:00:00Z') }],
    [
      'offsets:orders:0=5,orders:3=17',
      {
        kind: 'offsets',
        offsets: new Map([
          ['orders:0', 5],
          ['orders:3', 17],
        ]),
      },
    ],
  ])('%s', (value, expected) => {
    expect(parseConfig({ ...base, START_POSITION: value }).startPosition).toEqual(expected);
  });

  test.each([
    'newest',
    'timestamp:yesterday',
    'timestamp:2026-13-45T00:00:00Z',
    'offsets:orders=5',
    'offsets:orders:x=1',
  ])('%s is refused', (value) => {
    expect(() => parseConfig({ ...base, START_POSITION: value })).toThrow(/START_POSITION/);
  });
});

describe('value formats and the schema registry', () => {
  const { BQ_SCHEMA_FILE: _file, ...noSchemaFile } = base;

  test('JSON by default; Avro from the registry needs no schema file', () => {
    expect(parseConfig(base).routes[0]).toMatchObject({
      valueFormat: 'json',
      valueSchemaFile: null,
      valueSubject: null,
    });
    expect(parseConfig(base).schemaRegistry).toBeNull();
    const config = parseConfig({
      ...noSchemaFile,
      VALUE_FORMAT: 'avro',
      SCHEMA_REGISTRY_URL: 'https://registry.example:8081',
      SCHEMA_REGISTRY_USERNAME: 'key',
      SCHEMA_REGISTRY_PASSWORD: 'secret',
      VALUE_SUBJECT: 'shop.Order',
    });
    expect(config.routes[0]).toMatchObject({
      valueFormat: 'avro',
      schemaFile: null,
      valueSubject: 'shop.Order',
    });
    expect(config.schemaRegistry).toEqual({
      url: 'https://registry.example:8081',
      auth: 'basic',
      username: 'key',
      password: 'secret',
    });
  });

  test("Google's registry takes the job's own token: no password", () => {
    const url = 'https://managedkafka.googleapis.com/v1/projects/p/locations/r/schemaRegistries/reg';
    const config = parseConfig({ ...noSchemaFile, VALUE_FORMAT: 'protobuf', SCHEMA_REGISTRY_URL: url });
    expect(config.schemaRegistry).toMatchObject({ auth: 'google', username: null });
  });

  test('raw Avro with a schema file needs no registry', () => {
    const config = parseConfig({ ...noSchemaFile, VALUE_FORMAT: 'avro', VALUE_SCHEMA_FILE: '/v.avsc' });
    expect(config.routes[0]).toMatchObject({
      valueFormat: 'avro',
      valueSchemaFile: '/v.avsc',
      schemaFile: null,
    });
  });

  test.each([
    ['VALUE_FORMAT', { ...base, VALUE_FORMAT: 'xml' }],
    ['BQ_SCHEMA_FILE', noSchemaFile],
    ['SCHEMA_REGISTRY_URL', { ...noSchemaFile, VALUE_FORMAT: 'avro' }],
    ['SCHEMA_REGISTRY_URL', { ...base, VALUE_FORMAT: 'json-schema', SCHEMA_REGISTRY_URL: 'registry:8081' }],
    [
      'SCHEMA_REGISTRY_PASSWORD',
      { ...base, VALUE_FORMAT: 'avro', SCHEMA_REGISTRY_URL: 'http://r', SCHEMA_REGISTRY_USERNAME: 'u' },
    ],
    ['SCHEMA_REGISTRY_USERNAME', { ...base, SCHEMA_REGISTRY_USERNAME: 'u' }],
    [
      'VALUE_SCHEMA_FILE',
      { ...base, VALUE_FORMAT: 'protobuf', VALUE_SCHEMA_FILE: '/v.proto', SCHEMA_REGISTRY_URL: 'http://r' },
    ],
  ])('a bad combination names %s', (variable, env) => {
    expect(() => parseConfig(env)).toThrow(ConfigError);
    try {
      parseConfig(env);
    } catch (error) {
      expect((error as ConfigError).variable).toBe(variable);
    }
  });
});

describe('table layout', () => {
  test("today's layout by default: day partitions of the Kafka timestamp, clustered by origin", () => {
    expect(parseConfig(base).routes[0]!.layout).toEqual({
      partitionField: '_kafka_timestamp',
      partitionType: 'DAY',
      partitionExpirationDays: null,
      requirePartitionFilter: false,
      clustering: ['_kafka_topic', '_kafka_partition', '_kafka_offset'],
    });
  });

  test('a user column, hourly, expiring, clustered by user columns', () => {
    const config = parseConfig({
      ...base,
      BQ_PARTITION_FIELD: 'created_at',
      BQ_PARTITION_TYPE: 'HOUR',
      BQ_PARTITION_EXPIRATION_DAYS: '30',
      BQ_CLUSTERING: 'customer_id, country',
    });
    expect(config.routes[0]!.layout).toEqual({
      partitionField: 'created_at',
      partitionType: 'HOUR',
      partitionExpirationDays: 30,
      requirePartitionFilter: false,
      clustering: ['customer_id', 'country'],
    });
  });

  test.each([
    ['BQ_PARTITION_TYPE', { BQ_PARTITION_TYPE: 'WEEK' }],
    ['BQ_CLUSTERING', { BQ_CLUSTERING: 'a,b,c,d,e' }],
    ['BQ_PARTITION_EXPIRATION_DAYS', { BQ_PARTITION_EXPIRATION_DAYS: '0' }],
    [
      'BQ_REQUIRE_PARTITION_FILTER',
      { BQ_PARTITION_FIELD: 'created_at', BQ_REQUIRE_PARTITION_FILTER: 'true' },
    ],
    ['BQ_PARTITION_FIELD', { BQ_PARTITION_FIELD: 'not a name' }],
  ])('a bad layout names %s', (variable, env) => {
    try {
      parseConfig({ ...base, ...env });
      throw new Error('expected a ConfigError');
    } catch (error) {
      expect((error as ConfigError).variable).toBe(variable);
    }
  });
});

describe('DRAIN_UNTIL', () => {
  test("budget follows the log with FLUSH_LINGER_MS, held to a pipeline's share of write streams in storage-write", () => {
    // A flush opens its table's stream and, with dead letters, its error table's: 2 × 720 ms a table.
    expect(parseConfig({ ...base, DRAIN_UNTIL: 'budget' }).follow).toEqual({ lingerMs: 1_440 });
    expect(parseConfig({ ...base, DRAIN_UNTIL: 'budget', FLUSH_LINGER_MS: '2000' }).follow).toEqual({
      lingerMs: 2_000,
    });
    expect(parseConfig({ ...base, DRAIN_UNTIL: 'budget', FLUSH_LINGER_MS: '200' }).follow).toEqual({
      lingerMs: 1_440,
    });
    // 4 tasks of one table: 4 × 2 × 720 ms; insert-all opens no stream, so its linger is as set.
    const tasks = { ...base, DRAIN_UNTIL: 'budget', FLUSH_LINGER_MS: '200', CLOUD_RUN_TASK_COUNT: '4' };
    expect(parseConfig(tasks).follow).toEqual({ lingerMs: 5_760 });
    expect(parseConfig({ ...tasks, BQ_WRITE_MODE: 'insert-all' }).follow).toEqual({ lingerMs: 200 });
  });

  test('load mode refuses budget, naming DRAIN_UNTIL; a value it does not know is refused', () => {
    const load = { ...base, BQ_WRITE_MODE: 'load', DRAIN_UNTIL: 'budget' };
    expect(() => parseConfig(load)).toThrow(ConfigError);
    expect(() => parseConfig(load)).toThrow(/DRAIN_UNTIL.*load/);
    expect(() => parseConfig({ ...base, DRAIN_UNTIL: 'forever' })).toThrow(/DRAIN_UNTIL/);
    expect(() => parseConfig({ ...base, DRAIN_UNTIL: 'budget', FLUSH_LINGER_MS: '5' })).toThrow(
      /FLUSH_LINGER_MS/,
    );
  });
});
