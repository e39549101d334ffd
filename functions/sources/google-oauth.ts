/**
 * SASL/OAUTHBEARER with the job's own Google credentials, as Google's Managed Service for Apache Kafka takes
 * it: no key, no secret. The bearer token is three base64url parts joined by dots, as in Google's reference
 * clients (googleapis/managedkafka: the Java `GcpLoginCallbackHandler` and the Python
 * `kafka-auth-local-server`): a header `{"typ":"JWT","alg":"GOOG_OAUTH2_TOKEN"}`, the claims
 * `{exp, iat, iss: "Google", scope: "kafka", sub: <principal email>}`, and the OAuth2 access token itself.
 * Nothing is signed: the broker checks the access token with Google.
 */
import kafkajs, { type AuthenticationProviderArgs, type Authenticator } from 'kafkajs';
import { onceUntilFailure } from '../kernel/once.js';

/** kafkajs's own error for a refused authentication: not retriable, so the run fails at once. */
const authError = (message: string): Error =>
  new (kafkajs.KafkaJSSASLAuthenticationError as unknown as new (message: string) => Error)(message);

/** An access token of the job's credentials, and until when it is good (epoch ms). */
export interface AccessToken {
  readonly token: string;
  readonly expiresAt: number;
}

/** What the Kafka token is built from: Application Default Credentials in production, a double in tests. */
export interface GoogleCredentials {
  accessToken(): Promise<AccessToken>;
  /** The principal's email (a service account's, on Cloud Run). */
  principal(): Promise<string>;
}

export interface KafkaToken {
  readonly value: string;
  /** The access token's expiry (epoch ms): the broker ends the session then unless the client re-authenticates. */
  readonly expiresAt: number;
}

const header = JSON.stringify({ typ: 'JWT', alg: 'GOOG_OAUTH2_TOKEN' });
const base64url = (text: string) => Buffer.from(text, 'utf8').toString('base64url');

/** The bearer token Managed Kafka expects, for one access token. */
export function managedKafkaToken(access: AccessToken, principal: string, nowMs: number): string {
  const claims = JSON.stringify({
    exp: Math.floor(access.expiresAt / 1000),
    iat: Math.floor(nowMs / 1000),
    iss: 'Google',
    scope: 'kafka',
    sub: principal,
  });
  return [base64url(header), base64url(claims), base64url(access.token)].join('.');
}

/**
 * Tokens for each (re-)authentication: the last one while it has more than `refreshMarginMs` left, else one
 * built from a fresh access token. The margin matches google-auth-library's eager refresh (5 minutes), so
 * asking inside it gets a new access token, and it exceeds kafkajs's re-authentication threshold (10 s), so
 * a session re-authenticated before it ends always gets a token that outlives it.
 */
export function createKafkaTokenSource(options: {
  credentials: GoogleCredentials;
  now?: () => number;
  refreshMarginMs?: number;
}): () => Promise<KafkaToken> {
  const now = options.now ?? Date.now;
  const margin = options.refreshMarginMs ?? 5 * 60_000;
  let last: KafkaToken | undefined;
  let fetching: Promise<KafkaToken> | undefined;
  // Asked once; again at the next authentication if it failed.
  const principal = onceUntilFailure(() => options.credentials.principal().then(checkedPrincipal));
  const fetchToken = async (): Promise<KafkaToken> => {
    const [email, access] = await Promise.all([principal(), options.credentials.accessToken()]);
    last = { value: managedKafkaToken(access, email, now()), expiresAt: access.expiresAt };
    return last;
  };
  return () => {
    if (last !== undefined && last.expiresAt - now() > margin) return Promise.resolve(last);
    // Connections that authenticate at once share one fetch.
    fetching ??= fetchToken().finally(() => {
      fetching = undefined;
    });
    return fetching;
  };
}

function checkedPrincipal(email: string | null | undefined): string {
  if (typeof email !== 'string' || !/^[^@\s]+@[^@\s]+$/.test(email)) {
    throw new Error(
      `the credentials name no principal email (${JSON.stringify(email ?? null)}); run as a service account`,
    );
  }
  return email;
}

/** Application Default Credentials through google-auth-library (the metadata server on Cloud Run). */
export async function applicationDefaultCredentials(): Promise<GoogleCredentials> {
  const { GoogleAuth } = await import('google-auth-library');
  const auth = new GoogleAuth({ scopes: ['https://www.googleapis.com/auth/cloud-platform'] });
  return {
    async accessToken() {
      const client = await auth.getClient();
      const { token } = await client.getAccessToken();
      const expiresAt = client.credentials.expiry_date;
      if (!token) throw new Error('Application Default Credentials gave no access token');
      // An access token whose expiry is not known is taken for its usual hour.
      return { token, expiresAt: typeof expiresAt === 'number' ? expiresAt : Date.now() + 3_600_000 };
    },
    async principal() {
      return (await auth.getCredentials()).client_email ?? '';
    },
  };
}

const SOH = '\u0001';

/** Kafka's length-prefixed SASL bytes, as kafkajs frames them. */
function framed(text: string): Buffer {
  const payload = Buffer.from(text, 'utf8');
  const out = Buffer.alloc(4 + payload.length);
  out.writeInt32BE(payload.length, 0);
  payload.copy(out, 4);
  return out;
}
const rawResponse = {
  decode: async (bytes: Buffer) => {
    const size = bytes.length >= 4 ? bytes.readInt32BE(0) : -1;
    return size <= 0 ? Buffer.alloc(0) : bytes.subarray(4, 4 + size);
  },
  parse: (bytes: Buffer) => bytes,
};

/**
 * kafkajs's OAUTHBEARER exchange, with RFC 7628's error path, which kafkajs's own skips: a broker that
 * refuses a token may answer with an error challenge (`{"status":"invalid_token"}`, what Kafka's own
 * validators do) instead of an error code; the client must then send %x01 and the server fails the
 * exchange. kafkajs takes the challenge for success and the broker drops the connection at the next
 * request, which kafkajs retries until "retries exceeded". Here both refusals fail the run at once with
 * the broker's reason.
 */
export function oauthBearerAuthenticator(
  tokens: () => Promise<KafkaToken>,
): (args: AuthenticationProviderArgs) => Authenticator {
  return ({ host, port, saslAuthenticate }) => ({
    async authenticate() {
      const broker = `${host}:${port}`;
      let token: KafkaToken;
      try {
        token = await tokens();
      } catch (error) {
        throw authError(
          `SASL OAUTHBEARER: no token from Google credentials (KAFKA_OAUTH_PROVIDER=google): ${(error as Error).message}`,
        );
      }
      let challenge: Buffer | undefined;
      try {
        challenge = await saslAuthenticate<Buffer>({
          request: { encode: async () => framed(`n,,${SOH}auth=Bearer ${token.value}${SOH}${SOH}`) },
          response: rawResponse,
        }).then((answer) => answer ?? undefined);
      } catch (error) {
        throw authError(`SASL OAUTHBEARER authentication failed at ${broker}: ${(error as Error).message}`);
      }
      if (challenge === undefined || challenge.length === 0) return;
      await saslAuthenticate({ request: { encode: async () => framed(SOH) }, response: rawResponse }).catch(
        () => {},
      );
      throw authError(
        `SASL OAUTHBEARER authentication failed at ${broker}: the broker refused the token (${challenge.toString('utf8')})`,
      );
    },
  });
}
