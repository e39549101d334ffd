import { describe, expect, test } from 'vitest';
import {
  createKafkaTokenSource,
  type GoogleCredentials,
  type KafkaToken,
  managedKafkaToken,
  oauthBearerAuthenticator,
} from '../../functions/sources/google-oauth.js';

const email = 'drain@proj.iam.gserviceaccount.com';
const decode = (part: string) => Buffer.from(part, 'base64url').toString('utf8');

describe('managedKafkaToken', () => {
  test('three base64url parts: the header, the claims, the access token', () => {
    const now = Date.parse('2026-12-01T08:00:00.400Z');
    const token = managedKafkaToken(
      { token: 'ya29.an-access-token', expiresAt: Date.parse('2026-12-01T09:00:00.900Z') },
      email,
      now,
    );
    const parts = token.split('.');
    expect(parts).toHaveLength(3);
    for (const part of parts) expect(part).toMatch(/^[A-Za-z0-9_-]+$/); // base64url, no padding
    expect(JSON.parse(decode(parts[0]!))).toEqual({ typ: 'JWT', alg: 'GOOG_OAUTH2_TOKEN' });
    expect(JSON.parse(decode(parts[1]!))).toEqual({
      exp: Date.parse('2026-12-01T09:00:00Z') / 1000,
      iat: Date.parse('2026-12-01T08:00:00Z') / 1000,
      iss: 'Google',
      scope: 'kafka',
      sub: email,
    });
    expect(decode(parts[2]!)).toBe('ya29.an-access-token');
  });
});

/** Credentials handing out access-1, access-2, ... each good for `lifetimeMs` from the clock's now. */
function countingCredentials(clock: { now: number }, lifetimeMs: number) {
  const calls = { accessToken: 0, principal: 0 };
  const credentials: GoogleCredentials = {
    async accessToken() {
      calls.accessToken++;
      return { token: `access-${calls.accessToken}`, expiresAt: clock.now + lifetimeMs };
    },
    async principal() {
      calls.principal++;
      return email;
    },
  };
  return { credentials, calls };
}
const accessIn = (token: KafkaToken) => decode(token.value.split('.')[2]!);

describe('createKafkaTokenSource', () => {
  test('one token until it is within the margin of its expiry, then a fresh one', async () => {
    const clock = { now: 1_000_000 };
    const { credentials, calls } = countingCredentials(clock, 3_600_000);
    const next = createKafkaTokenSource({ credentials, now: () => clock.now, refreshMarginMs: 300_000 });
    const first = await next();
    expect(accessIn(first)).toBe('access-1');
    expect(first.expiresAt).toBe(1_000_000 + 3_600_000);
    clock.now += 3_600_000 - 300_001; // 1 ms more than the margin left
    expect(accessIn(await next())).toBe('access-1');
    clock.now += 1; // exactly the margin left
    const second = await next();
    expect(accessIn(second)).toBe('access-2');
    expect(JSON.parse(decode(second.value.split('.')[1]!)).iat).toBe(Math.floor(clock.now / 1000));
    expect(calls).toEqual({ accessToken: 2, principal: 1 });
  });

  test('a token shorter than the margin is fetched again at every authentication', async () => {
    const clock = { now: 0 };
    const { credentials, calls } = countingCredentials(clock, 15_000);
    const next = createKafkaTokenSource({ credentials, now: () => clock.now });
    await next();
    clock.now += 5_000;
    expect(accessIn(await next())).toBe('access-2');
    expect(calls.accessToken).toBe(2);
  });

  test('connections that authenticate at once share one fetch', async () => {
    const clock = { now: 0 };
    const { credentials, calls } = countingCredentials(clock, 3_600_000);
    const next = createKafkaTokenSource({ credentials, now: () => clock.now });
    const tokens = await Promise.all([next(), next(), next()]);
    expect(new Set(tokens.map(accessIn))).toEqual(new Set(['access-1']));
    expect(calls.accessToken).toBe(1);
  });

  test.each([
    [''],
    ['default'],
    [null],
  ])('credentials without a principal email (%o) are refused', async (principal) => {
    const next = createKafkaTokenSource({
      credentials: {
        accessToken: async () => ({ token: 't', expiresAt: Date.now() + 60_000 }),
        principal: async () => principal as string,
      },
    });
    await expect(next()).rejects.toThrow(/no principal email.*service account/);
  });

  test('a failed look-up of the principal is tried again at the next authentication', async () => {
    let attempts = 0;
    const next = createKafkaTokenSource({
      credentials: {
        accessToken: async () => ({ token: 't', expiresAt: Date.now() + 3_600_000 }),
        principal: async () => {
          attempts++;
          if (attempts === 1) throw new Error('metadata server: 503');
          return email;
        },
      },
    });
    await expect(next()).rejects.toThrow(/503/);
    await expect(next()).resolves.toMatchObject({ value: expect.any(String) });
    expect(attempts).toBe(2);
  });
});

/** kafkajs's saslAuthenticate, played by a broker that answers each request in turn. */
function broker(answers: ((request: string) => Buffer)[]) {
  const sent: string[] = [];
  const saslAuthenticate = async ({
    request,
    response,
  }: {
    request: { encode: () => Promise<Buffer> };
    response?: { decode: (b: Buffer) => Promise<Buffer>; parse: (b: Buffer) => Promise<Buffer> };
  }) => {
    const bytes = await request.encode();
    expect(bytes.readInt32BE(0)).toBe(bytes.length - 4); // kafkajs's framing
    const text = bytes.subarray(4).toString('utf8');
    sent.push(text);
    const answer = answers.shift()!(text);
    const framed = Buffer.concat([Buffer.alloc(4), answer]);
    framed.writeInt32BE(answer.length, 0);
    return response!.parse(await response!.decode(framed));
  };
  return { sent, saslAuthenticate };
}
const args = (saslAuthenticate: unknown) =>
  ({ host: '127.0.0.1', port: 9095, logger: {}, saslAuthenticate }) as never;
const token = async (): Promise<KafkaToken> => ({ value: 'h.c.a', expiresAt: 0 });

describe('oauthBearerAuthenticator', () => {
  test('sends the GS2 initial response with the token; an empty answer is success', async () => {
    const b = broker([() => Buffer.alloc(0)]);
    await oauthBearerAuthenticator(token)(args(b.saslAuthenticate)).authenticate();
    expect(b.sent).toEqual(['n,,\u0001auth=Bearer h.c.a\u0001\u0001']);
  });

  test("an error challenge (RFC 7628) is answered with %x01 and fails with the broker's status", async () => {
    const b = broker([
      () => Buffer.from('{"status":"invalid_token"}'),
      () => {
        throw new Error('SASL_AUTHENTICATION_FAILED');
      },
    ]);
    await expect(oauthBearerAuthenticator(token)(args(b.saslAuthenticate)).authenticate()).rejects.toThrow(
      /SASL OAUTHBEARER authentication failed at 127.0.0.1:9095: the broker refused the token \(\{"status":"invalid_token"\}\)/,
    );
    expect(b.sent[1]).toBe('\u0001');
  });

  test('a refusal with an error code carries the broker message, not retriable', async () => {
    const b = broker([
      () => {
        throw new Error('token expired at 2026-12-01T08:00:00Z');
      },
    ]);
    const failure = await oauthBearerAuthenticator(token)(args(b.saslAuthenticate))
      .authenticate()
      .catch((e: unknown) => e as Error & { retriable?: boolean; name: string });
    expect(failure).toMatchObject({ name: 'KafkaJSSASLAuthenticationError', retriable: false });
    expect(String((failure as Error).message)).toMatch(/failed at 127.0.0.1:9095: token expired at/);
  });

  test('no token: fails before anything is sent, naming the provider', async () => {
    const b = broker([]);
    const failing = async (): Promise<KafkaToken> => {
      throw new Error('Could not load the default credentials');
    };
    await expect(oauthBearerAuthenticator(failing)(args(b.saslAuthenticate)).authenticate()).rejects.toThrow(
      /no token from Google credentials \(KAFKA_OAUTH_PROVIDER=google\): Could not load/,
    );
    expect(b.sent).toEqual([]);
  });
});
