/**
 * The local broker's OAUTHBEARER listener (stack/kafka/oauth/GoogleTokenValidator.java), proven on its own:
 * what it takes and what it refuses, each refusal's message as a client sees it, and that it ends a
 * session whose token expired instead of letting it run on. Tokens are built by hand here, so that each
 * check is met or broken on purpose.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import { describe, expect, test } from 'vitest';
import {
  type KafkaToken,
  managedKafkaToken,
  oauthBearerAuthenticator,
} from '../../functions/sources/google-oauth.js';
import { metadataServerForFile } from '../support/metadata-server.js';
import { stackEnv } from '../support/stack.js';

const stack = stackEnv() as unknown as Record<string, string>;
const principal = stack.KBD_OAUTH_PRINCIPAL!;
const metadata = metadataServerForFile();

/** An access token from the stand-in, as a job on Cloud Run would get one. */
async function accessToken(lifetimeSeconds = 3600): Promise<{ token: string; expiresAt: number }> {
  metadata.lifetimeSeconds = lifetimeSeconds;
  const response = await fetch(
    `http://${stack.KBD_METADATA_HOST}/computeMetadata/v1/instance/service-accounts/default/token`,
    { headers: { 'Metadata-Flavor': 'Google' } },
  );
  const body = (await response.json()) as { access_token: string; expires_in: number };
  return { token: body.access_token, expiresAt: Date.now() + body.expires_in * 1000 };
}

const b64 = (value: unknown) =>
  Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

/** Lists the topics over the OAUTHBEARER listener with the tokens given; the error's message if refused. */
async function listTopicsWith(tokens: () => Promise<KafkaToken>): Promise<string> {
  const kafka = new kafkajs.Kafka({
    brokers: [stack.KBD_KAFKA_OAUTH_BROKERS!],
    ssl: { ca: [readFileSync(join(stack.KBD_TLS_DIR!, 'ca.pem'), 'utf8')] },
    sasl: { mechanism: 'oauthbearer', authenticationProvider: oauthBearerAuthenticator(tokens) },
    logLevel: kafkajs.logLevel.NOTHING,
    retry: { retries: 0 },
  });
  const admin = kafka.admin();
  try {
    await admin.connect();
    await admin.listTopics();
    return 'accepted';
  } catch (error) {
    return (error as Error).message;
  } finally {
    await admin.disconnect();
  }
}
const fixed = (value: string) => async (): Promise<KafkaToken> => ({
  value,
  expiresAt: Date.now() + 3_600_000,
});

describe('the OAUTHBEARER listener', () => {
  test('takes the token Google’s clients build, from an access token its issuer knows', async () => {
    const token = managedKafkaToken(await accessToken(), principal, Date.now());
    expect(await listTopicsWith(fixed(token))).toBe('accepted');
  });

  test('takes the Python reference client’s claims too (iss, no scope)', async () => {
    const access = await accessToken();
    const now = Math.floor(Date.now() / 1000);
    const claims = { exp: Math.floor(access.expiresAt / 1000), iss: 'Google', iat: now, sub: principal };
    const token = [b64({ typ: 'JWT', alg: 'GOOG_OAUTH2_TOKEN' }), b64(claims), b64(access.token)].join('.');
    expect(await listTopicsWith(fixed(token))).toBe('accepted');
  });

  test.each([
    ['two parts', async () => 'a.b', /malformed token: 2 parts, not 3/],
    [
      'a signed JWT header',
      async () => `${b64({ typ: 'JWT', alg: 'RS256' })}.${b64({ sub: principal })}.${b64('x')}`,
      /malformed token: the header is not/,
    ],
    [
      'claims that are not JSON',
      async () => `${b64({ typ: 'JWT', alg: 'GOOG_OAUTH2_TOKEN' })}.${b64('{nope')}.${b64('x')}`,
      /malformed token: the claims is not a JSON object/,
    ],
    [
      'an exp in the past',
      async () => {
        const access = await accessToken();
        return managedKafkaToken({ ...access, expiresAt: Date.now() - 60_000 }, principal, Date.now());
      },
      /expired token: exp .* is past/,
    ],
    [
      'an access token its issuer says expired',
      async () => {
        const access = await accessToken(1);
        await new Promise((resolve) => setTimeout(resolve, 1_100));
        return managedKafkaToken({ ...access, expiresAt: Date.now() + 3_600_000 }, principal, Date.now());
      },
      /access token was refused by its issuer: Token expired/,
    ],
    [
      'an access token no one issued',
      async () =>
        managedKafkaToken({ token: 'ya29.forged', expiresAt: Date.now() + 3_600_000 }, principal, Date.now()),
      /access token was refused by its issuer: Invalid Value/,
    ],
    [
      'someone else’s access token',
      async () => managedKafkaToken(await accessToken(), 'someone@else.iam.gserviceaccount.com', Date.now()),
      /the access token belongs to kbd-drain@.*, not to sub someone@else/,
    ],
    [
      'a principal without the role',
      async () => {
        metadata.email = 'intruder@elsewhere.iam.gserviceaccount.com';
        try {
          return managedKafkaToken(await accessToken(), metadata.email, Date.now());
        } finally {
          metadata.email = principal;
        }
      },
      /principal intruder@elsewhere\.iam\.gserviceaccount\.com may not use this cluster/,
    ],
  ])('refuses %s, saying why', async (_, make, why) => {
    const token = await make();
    const message = await listTopicsWith(fixed(token));
    expect(message).toMatch(
      /SASL OAUTHBEARER authentication failed at 127\.0\.0\.1:\d+: OAUTHBEARER token refused/,
    );
    expect(message).toMatch(why);
  });

  test('a session that is not re-authenticated ends when its token expires', async () => {
    // A client that never re-authenticates (kafkajs told to do it 100 s after the session ended): the
    // broker must not serve it past its token's expiry, as Managed Kafka does not.
    const access = await accessToken(5);
    const token = managedKafkaToken(access, principal, Date.now());
    const kafka = new kafkajs.Kafka({
      brokers: [stack.KBD_KAFKA_OAUTH_BROKERS!],
      ssl: { ca: [readFileSync(join(stack.KBD_TLS_DIR!, 'ca.pem'), 'utf8')] },
      sasl: {
        mechanism: 'oauthbearer',
        authenticationProvider: oauthBearerAuthenticator(async () => ({
          value: token,
          expiresAt: access.expiresAt,
        })),
      },
      reauthenticationThreshold: -100_000,
      logLevel: kafkajs.logLevel.NOTHING,
      retry: { retries: 0 },
    });
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.listTopics();
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, access.expiresAt - Date.now()) + 1_000));
      const late = await admin.listTopics().then(
        () => 'served',
        (error: Error) => error.message,
      );
      expect(late).not.toBe('served');
      console.log(`a request after the token expired: ${late}`);
    } finally {
      await admin.disconnect();
    }
  }, 40_000);
});
