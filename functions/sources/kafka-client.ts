import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { type ConnectionOptions, connect as tlsConnect } from 'node:tls';
import kafkajs, { type Admin, type Kafka, type KafkaConfig } from 'kafkajs';
import type { DrainConfig, KafkaSasl } from '../config/config.js';
import { ConfigError, DrainError } from '../kernel/errors.js';
import type { Logger } from '../kernel/logger.js';
import { backoffDelay, type RetryPolicy } from '../kernel/retry.js';
import { sleep } from '../kernel/timers.js';
import {
  applicationDefaultCredentials,
  createKafkaTokenSource,
  type GoogleCredentials,
  type KafkaToken,
  oauthBearerAuthenticator,
} from './google-oauth.js';
// kafkajs's request queue, without its poll every millisecond (see the patch).
import './kafkajs-patch.js';

const { logLevel } = kafkajs;

/** Kafka errors worth another try (kafkajs marks its own retriable errors); the rest are fatal. */
export function kafkaError(error: unknown, what: string): DrainError {
  if (error instanceof DrainError) return error;
  const retriable = (error as { retriable?: unknown }).retriable === true;
  const message = error instanceof Error ? error.message : String(error);
  return new DrainError(`kafka ${what}: ${message}`, {
    retriable,
    code: (error as { type?: string }).type,
    cause: error,
  });
}

/**
 * The kafkajs client options our settings produce; pure but for reading the PEM files (passed in), so
 * that the SASL/TLS wiring is unit-tested.
 */
export function kafkaClientOptions(
  config: Pick<DrainConfig, 'kafka'>,
  clientId: string,
  readFile: (path: string) => string = (path) => readFileSync(path, 'utf8'),
  googleTokens: () => Promise<KafkaToken> = createKafkaTokenSource({
    credentials: lazily(applicationDefaultCredentials),
  }),
): KafkaConfig {
  const { sasl, ssl, tls, brokers } = config.kafka;
  return {
    clientId,
    brokers: [...brokers],
    ssl: ssl ? tlsOptions(tls, readFile) : false,
    ...(sasl === null ? {} : { sasl: saslOptions(sasl, googleTokens) }),
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5_000,
    retry: { retries: 5, initialRetryTime: 200, maxRetryTime: 5_000 },
  };
}

function saslOptions(sasl: KafkaSasl, googleTokens: () => Promise<KafkaToken>): KafkaConfig['sasl'] {
  if (sasl.mechanism === 'oauthbearer') {
    return { mechanism: 'oauthbearer', authenticationProvider: oauthBearerAuthenticator(googleTokens) };
  }
  return {
    mechanism: sasl.mechanism,
    username: sasl.username,
    password: sasl.password,
  } as KafkaConfig['sasl'];
}

/** Credentials made at their first use: a client that never authenticates never looks for them. */
function lazily(make: () => Promise<GoogleCredentials>): GoogleCredentials {
  let made: Promise<GoogleCredentials> | undefined;
  const get = () => {
    made ??= make();
    return made;
  };
  return {
    accessToken: async () => (await get()).accessToken(),
    principal: async () => (await get()).principal(),
  };
}

function tlsOptions(
  tls: DrainConfig['kafka']['tls'],
  readFile: (path: string) => string,
): ConnectionOptions | true {
  const pem = (variable: string, path: string | null): string | undefined => {
    if (path === null) return undefined;
    // A Secret Manager reference was resolved at start to the PEM itself (secret-references.ts).
    if (path.startsWith('-----BEGIN ')) return path;
    try {
      return readFile(path);
    } catch (error) {
      throw new ConfigError(variable, `"${path}" cannot be read: ${(error as Error).message}`);
    }
  };
  const ca = pem('KAFKA_SSL_CA_FILE', tls.caFile);
  const cert = pem('KAFKA_SSL_CERT_FILE', tls.certFile);
  const key = pem('KAFKA_SSL_KEY_FILE', tls.keyFile);
  if (ca === undefined && cert === undefined) return true; // the system's CAs, no client certificate
  return { ...(ca === undefined ? {} : { ca: [ca] }), ...(cert === undefined ? {} : { cert, key }) };
}

/** Node's codes for a certificate the client does not accept: retrying cannot help. */
const untrustedCertificate = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'INVALID_CA',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * One TLS handshake with the first broker, as kafkajs would make it, before kafkajs is let loose: kafkajs
 * calls every socket error retriable, so an untrusted certificate would cost a run its connection retries
 * and end in "number of retries exceeded". This fails at once and says which setting to look at. Any
 * other outcome (trusted, refused, unreachable) is left to kafkajs and its retries.
 */
export async function checkBrokerCertificate(options: KafkaConfig, timeoutMs = 5_000): Promise<void> {
  if (!options.ssl) return;
  const first = (Array.isArray(options.brokers) ? options.brokers : [])[0];
  if (first === undefined) return;
  const at = first.lastIndexOf(':');
  const host = first.slice(0, at);
  const port = Number(first.slice(at + 1));
  const ssl = options.ssl === true ? {} : options.ssl;
  const failure = await new Promise<Error | undefined>((resolve) => {
    const socket = tlsConnect({ host, port, ...(isIP(host) ? {} : { servername: host }), ...ssl });
    const done = (error?: Error): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(error);
    };
    const timer = setTimeout(() => done(), timeoutMs);
    // In TLS 1.3 a broker checks the client's certificate after the client's handshake is done: one
    // ApiVersions request (which every listener answers before SASL) hears its verdict.
    socket.once('secureConnect', () => socket.write(apiVersionsRequest));
    socket.once('data', () => done());
    socket.once('error', (error) => done(error));
  });
  const code = (failure as { code?: string } | undefined)?.code;
  if (failure !== undefined && code !== undefined && untrustedCertificate.has(code)) {
    throw new DrainError(
      `kafka TLS: broker ${first} presented a certificate this client does not trust (${code}: ${failure.message}); ` +
        'set KAFKA_SSL_CA_FILE to the CA that signed it',
      { retriable: false, code },
    );
  }
  if (failure !== undefined && code !== undefined && refusedClientCertificate.has(code)) {
    const offered = ssl.cert !== undefined;
    throw new DrainError(
      `kafka TLS: broker ${first} refused the connection for its client certificate (${code}): ` +
        (offered
          ? 'it does not accept the one in KAFKA_SSL_CERT_FILE (signed by a CA it does not trust, or expired)'
          : 'it requires one (mTLS): set KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE'),
      { retriable: false, code },
    );
  }
}

/** Kafka's ApiVersions v0, correlation id 1, no client id: the smallest request a broker answers. */
const apiVersionsRequest = Buffer.from([0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff]);

/** OpenSSL's alerts for a client certificate the broker wants and did not get, or does not accept. */
const refusedClientCertificate = new Set([
  'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE',
  'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED',
  'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA',
  'ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED',
  'ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN',
]);

/** The broker's topics (Kafka's internal ones included; routes leave those out). */
export async function listTopics(kafka: Kafka): Promise<string[]> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    return await admin.listTopics();
  } catch (error) {
    throw kafkaError(error, 'list topics');
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

/** Kafka's answers while a partition's leader moves (a broker restarts, a topic was just created). */
const leaderMoving = new Set(['NOT_LEADER_FOR_PARTITION', 'LEADER_NOT_AVAILABLE']);

/** A leader move outlasts kafkajs' own retries: about 12 s of attempts in all. */
export const leaderMoveRetry: RetryPolicy = { attempts: 6, initialDelayMs: 500, maxDelayMs: 5_000 };

/**
 * Runs an admin call on a new admin client, again while a partition's leader is moving. kafkajs' admin
 * gives up on NOT_LEADER_FOR_PARTITION at once and keeps its stale metadata, so only a new client (new
 * metadata) can succeed; every other error is its own answer.
 */
export async function onNewAdmin<T>(
  kafka: Pick<Kafka, 'admin'>,
  what: string,
  logger: Logger,
  call: (admin: Admin) => Promise<T>,
  policy: RetryPolicy = leaderMoveRetry,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const admin = kafka.admin();
    try {
      await admin.connect();
      return await call(admin);
    } catch (thrown) {
      const error = kafkaError(thrown, what);
      if (!leaderMoving.has(error.code ?? '') || attempt >= policy.attempts) throw error;
      const delayMs = backoffDelay(policy, attempt);
      logger.warn(`kafka ${what}: a partition's leader is moving; trying again`, { attempt, delayMs, error });
      await sleep(delayMs);
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }
}
