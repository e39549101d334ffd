import { ConfigError } from '../kernel/errors.js';
import type { Reader } from './reader.js';

export type SaslMechanism = 'plain' | 'scram-sha-256' | 'scram-sha-512';

/**
 * How the drain authenticates to Kafka: a user name and password (PLAIN, SCRAM), or a bearer token built
 * from the job's own Google credentials (OAUTHBEARER, as Google's Managed Service for Apache Kafka takes
 * it): no secret at all.
 */
export type KafkaSasl =
  | { readonly mechanism: SaslMechanism; readonly username: string; readonly password: string }
  | { readonly mechanism: 'oauthbearer'; readonly provider: 'google' };

/** How the drain reaches the brokers: TLS and its files, and SASL. */
export interface KafkaSecurity {
  readonly ssl: boolean;
  /** PEM files (paths) for TLS to the brokers: a private CA, and a client certificate and key for mTLS. */
  readonly tls: {
    readonly caFile: string | null;
    readonly certFile: string | null;
    readonly keyFile: string | null;
  };
  readonly sasl: KafkaSasl | null;
}

/** SASL and TLS to the brokers, with the rules across them. */
export function kafkaSecurity(read: Reader): KafkaSecurity {
  const mechanism = read.oneOf(
    'KAFKA_SASL_MECHANISM',
    ['plain', 'scram-sha-256', 'scram-sha-512', 'oauthbearer'],
    null,
  );
  const passwordBased = mechanism !== null && mechanism !== 'oauthbearer';
  if (!passwordBased) {
    for (const name of ['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD'] as const) {
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
