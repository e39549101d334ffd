import { describe, expect, test } from 'vitest';
import { parseConfig } from '../../functions/drain/config.js';
import { ConfigError } from '../../functions/drain/errors.js';
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
      batchMaxRecords: 500,
      batchMaxBytes: 5 * 1024 * 1024,
      leaseTtlSeconds: 60,
      idleAlertSeconds: 300,
      retentionGapPolicy: 'fail',
      logLevel: 'info',
      execution: 'local',
      taskIndex: 0,
      taskCount: 1,
      emulators: { firestore: null, pubsub: null },
      faultPoint: null,
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
