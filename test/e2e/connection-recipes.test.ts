/**
 * docs/connections.md's recipes, each against a listener of the local broker set up as that service has
 * it: Confluent Cloud (SASL/PLAIN over TLS, the registry's key and secret as basic auth) and Aiven (TLS
 * with a client certificate, no SASL). The self-run SCRAM recipe is kafka-security.test.ts's, Google's
 * Managed Kafka recipe managed-kafka-oauth.test.ts's. What differs from the services themselves: the
 * broker's certificate is signed by the stack's CA (so KAFKA_SSL_CA_FILE is set where the services' public
 * CAs need none), and the registry's basic auth is a proxy in front of Karapace.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { startBasicAuthRegistry } from '../support/basic-auth-proxy.js';
import {
  createPipeline,
  e2eClients,
  errorsOf,
  expectRefusedAtConnect,
  runJob,
  tableOffsets,
} from '../support/job.js';
import { produce } from '../support/kafka.js';
import { pythonProduce } from '../support/producers.js';
import { stackEnv } from '../support/stack.js';

const clients = await e2eClients();
const stack = stackEnv() as unknown as Record<string, string>;
const tls = (file: string) => join(stack.KBD_TLS_DIR!, file);
const registryKey = { username: 'REGISTRY-API-KEY', password: 'registry-api-secret' };
const registry = await startBasicAuthRegistry(stack.SCHEMA_REGISTRY_URL!, registryKey);
afterAll(() => registry.close());

describe('Confluent Cloud: SASL/PLAIN over TLS, the registry behind its API key', () => {
  const confluent = () => ({
    KAFKA_BROKERS: stack.KBD_KAFKA_PLAIN_BROKERS!,
    KAFKA_SASL_MECHANISM: 'plain',
    KAFKA_SASL_USERNAME: stack.KBD_KAFKA_PLAIN_USERNAME!,
    KAFKA_SASL_PASSWORD: stack.KBD_KAFKA_PLAIN_PASSWORD!,
    KAFKA_SSL: 'true',
    KAFKA_SSL_CA_FILE: tls('ca.pem'),
    VALUE_FORMAT: 'avro',
    SCHEMA_REGISTRY_URL: registry.url,
    SCHEMA_REGISTRY_USERNAME: registryKey.username,
    SCHEMA_REGISTRY_PASSWORD: registryKey.password,
  });

  test('Avro through the registry (Python serializer): the run drains', async () => {
    const pipeline = await createPipeline(clients, 1, confluent());
    delete pipeline.env.BQ_SCHEMA_FILE; // the columns come from the subject's latest version
    const schema = {
      type: 'record',
      name: 'Order',
      fields: [
        { name: 'id', type: 'string' },
        { name: 'n', type: 'long' },
      ],
    };
    await pythonProduce({
      topic: pipeline.topic,
      format: 'avro',
      schema: JSON.stringify(schema),
      partition: 0,
      values: `[${[0, 1, 2].map((n) => `{"id": "r${n}", "n": ${n}}`).join(', ')}]`,
    });
    const before = { ...registry.counts };
    const run = await runJob(pipeline.env);
    expect(run.code, errorsOf(run.lines)).toBe(0);
    expect(run.summary).toMatchObject({ stopReason: 'caught_up', rowsWritten: 3, deadLettered: 0 });
    expect((await tableOffsets(clients, pipeline)).get(0)).toEqual([0, 1, 2]);
    // Every registry request carried the key and secret.
    expect(registry.counts.forwarded).toBeGreaterThan(before.forwarded);
    expect(registry.counts.refused).toBe(before.refused);
  });

  test('a wrong API secret for Kafka: exit 1 at once, the cause named, nothing moved', async () => {
    const pipeline = await createPipeline(clients, 1, {
      ...confluent(),
      KAFKA_SASL_PASSWORD: 'not-the-secret',
    });
    await produce(pipeline.topic, [{ partition: 0, value: JSON.stringify({ id: 'r', n: 1 }) }]);
    await expectRefusedAtConnect(clients, pipeline, /SASL PLAIN authentication failed/);
  });
});

describe('Aiven: TLS with a client certificate (mTLS), no SASL', () => {
  const aiven = () => ({
    KAFKA_BROKERS: stack.KBD_KAFKA_MTLS_BROKERS!,
    KAFKA_SSL_CA_FILE: tls('ca.pem'),
    KAFKA_SSL_CERT_FILE: tls('client.pem'),
    KAFKA_SSL_KEY_FILE: tls('client.key'),
  });

  test('the run drains', async () => {
    const pipeline = await createPipeline(clients, 2, aiven());
    await produce(
      pipeline.topic,
      Array.from({ length: 10 }, (_, i) => ({
        partition: i % 2,
        value: JSON.stringify({ id: `r${i}`, n: i }),
      })),
    );
    const run = await runJob(pipeline.env);
    expect(run.code, errorsOf(run.lines)).toBe(0);
    expect(run.summary).toMatchObject({ stopReason: 'caught_up', rowsWritten: 10 });
  });

  test.each([
    [
      'no client certificate',
      { KAFKA_SSL_CERT_FILE: '', KAFKA_SSL_KEY_FILE: '' },
      /requires one \(mTLS\): set KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE/,
    ],
    [
      'a certificate of a CA the broker does not trust',
      { KAFKA_SSL_CERT_FILE: tls('other-client.pem'), KAFKA_SSL_KEY_FILE: tls('other-client.key') },
      /does not accept the one in KAFKA_SSL_CERT_FILE/,
    ],
  ])('%s: exit 1 at once, the cause named, nothing moved', async (_, wrong, cause) => {
    const pipeline = await createPipeline(clients, 1, { ...aiven(), ...wrong });
    await produce(pipeline.topic, [{ partition: 0, value: JSON.stringify({ id: 'r', n: 1 }) }]);
    const { tookMs } = await expectRefusedAtConnect(clients, pipeline, cause);
    console.log(`${_}: the run ended ${tookMs} ms after it started`);
  });
});
