/**
 * The broker's second listener, as production brokers have it: SASL/SCRAM-SHA-512 over TLS with a private
 * CA (made by the stack script). Right credentials drain; a wrong password and an untrusted certificate
 * each fail at once with a message naming the cause, exit 1, and move nothing.
 */
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { createPipeline, e2eClients, expectRefusedAtConnect, runJob, tableOffsets } from '../support/job.js';
import { produce } from '../support/kafka.js';
import { stackEnv } from '../support/stack.js';

const clients = await e2eClients();

function secured(): Record<string, string> {
  const env = stackEnv() as unknown as Record<string, string>;
  return {
    KAFKA_BROKERS: env.KBD_KAFKA_SASL_BROKERS!,
    KAFKA_SASL_MECHANISM: 'scram-sha-512',
    KAFKA_SASL_USERNAME: env.KBD_KAFKA_SASL_USERNAME!,
    KAFKA_SASL_PASSWORD: env.KBD_KAFKA_SASL_PASSWORD!,
    KAFKA_SSL_CA_FILE: join(env.KBD_TLS_DIR!, 'ca.pem'),
  };
}
const tls = (file: string) => join((stackEnv() as unknown as Record<string, string>).KBD_TLS_DIR!, file);

async function pipelineWithRecords(env: Record<string, string>) {
  const pipeline = await createPipeline(clients, 2, env);
  await produce(
    pipeline.topic,
    Array.from({ length: 20 }, (_, i) => ({
      partition: i % 2,
      value: JSON.stringify({ id: `r${i}`, n: i }),
    })),
  );
  return pipeline;
}

describe('SASL/SCRAM-SHA-512 over TLS', () => {
  test.each([
    ['the right password and the private CA', {}],
    [
      'mTLS too: a client certificate signed by the CA',
      { KAFKA_SSL_CERT_FILE: tls('client.pem'), KAFKA_SSL_KEY_FILE: tls('client.key') },
    ],
  ])('%s: the run drains', async (_, extra) => {
    const pipeline = await pipelineWithRecords({ ...secured(), ...extra });
    const run = await runJob(pipeline.env);
    expect(run.code).toBe(0);
    expect(run.summary).toMatchObject({ stopReason: 'caught_up', rowsWritten: 20 });
    const offsets = await tableOffsets(clients, pipeline);
    expect([offsets.get(0), offsets.get(1)]).toEqual([[...Array(10).keys()], [...Array(10).keys()]]);
  });

  test.each([
    [
      'a wrong password',
      { KAFKA_SASL_PASSWORD: 'not-the-password' },
      /SASL SCRAM SHA512 authentication failed/,
    ],
    [
      'a CA that did not sign the broker certificate',
      { KAFKA_SSL_CA_FILE: tls('other-ca.pem') },
      /does not trust \(UNABLE_TO_VERIFY_LEAF_SIGNATURE.*KAFKA_SSL_CA_FILE/,
    ],
    [
      'no private CA (the system CAs only)',
      { KAFKA_SSL_CA_FILE: '', KAFKA_SSL: 'true' },
      /does not trust .*KAFKA_SSL_CA_FILE/,
    ],
  ])('%s: exit 1 at once, the cause named, nothing moved', async (_, wrong, cause) => {
    const pipeline = await pipelineWithRecords({ ...secured(), ...wrong });
    const { tookMs } = await expectRefusedAtConnect(clients, pipeline, cause);
    console.log(`${_}: the run ended ${tookMs} ms after it started`);
  });
});
