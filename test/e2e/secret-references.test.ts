/**
 * Secret-valued settings given as Secret Manager references (`projects/…/secrets/…/versions/…`), as an
 * operator brings a deployed pipeline's configuration into a shell: resolved at start through the
 * official client, whose transport is faked on loopback (no emulator of Secret Manager exists). The SASL
 * password and the PEMs (CA, client certificate and key) come from it, and the run drains over
 * SCRAM-over-TLS with mTLS; a reference of the wrong shape, one not found and one denied each stop the run
 * at start with exit 2 naming the variable; an operator command resolves them the same way.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { startFakeSecretManager } from '../support/fake-secret-manager.js';
import { createPipeline, e2eClients, runCli, runJob, tableOffsets } from '../support/job.js';
import { produce } from '../support/kafka.js';
import { stackEnv } from '../support/stack.js';

const clients = await e2eClients();
const stack = stackEnv() as unknown as Record<string, string>;
const tls = (file: string) => join(stack.KBD_TLS_DIR!, file);
const ref = (secret: string, version = 'latest') =>
  `projects/acme-data/secrets/${secret}/versions/${version}`;

const secretManager = await startFakeSecretManager(
  {
    [ref('orders-kafka-sasl-password')]: stack.KBD_KAFKA_SASL_PASSWORD!,
    [ref('orders-kafka-sasl-username', '3')]: stack.KBD_KAFKA_SASL_USERNAME!,
    [ref('orders-kafka-ssl-ca-file')]: readFileSync(tls('ca.pem'), 'utf8'),
    [ref('orders-kafka-ssl-cert-file')]: readFileSync(tls('client.pem'), 'utf8'),
    [ref('orders-kafka-ssl-key-file')]: readFileSync(tls('client.key'), 'utf8'),
  },
  [ref('someone-elses-secret')],
);
afterAll(() => secretManager.close());

function byReference(): Record<string, string> {
  return {
    KAFKA_BROKERS: stack.KBD_KAFKA_SASL_BROKERS!,
    KAFKA_SASL_MECHANISM: 'scram-sha-512',
    KAFKA_SASL_USERNAME: ref('orders-kafka-sasl-username', '3'),
    KAFKA_SASL_PASSWORD: ref('orders-kafka-sasl-password'),
    KAFKA_SSL_CA_FILE: ref('orders-kafka-ssl-ca-file'),
    KAFKA_SSL_CERT_FILE: ref('orders-kafka-ssl-cert-file'),
    KAFKA_SSL_KEY_FILE: ref('orders-kafka-ssl-key-file'),
    SECRET_MANAGER_ENDPOINT: secretManager.endpoint,
  };
}

async function pipelineWithRecords(env: Record<string, string>) {
  const pipeline = await createPipeline(clients, 2, env);
  await produce(
    pipeline.topic,
    Array.from({ length: 10 }, (_, i) => ({
      partition: i % 2,
      value: JSON.stringify({ id: `r${i}`, n: i }),
    })),
  );
  return pipeline;
}

describe('Secret Manager references', () => {
  test('the password, the CA and the client certificate by reference: the run drains over SCRAM, TLS and mTLS', async () => {
    const before = secretManager.asked.length;
    const pipeline = await pipelineWithRecords(byReference());
    const run = await runJob(pipeline.env);
    expect(run.code).toBe(0);
    expect(run.summary).toMatchObject({ stopReason: 'caught_up', rowsWritten: 10 });
    const offsets = await tableOffsets(clients, pipeline);
    expect([offsets.get(0), offsets.get(1)]).toEqual([[...Array(5).keys()], [...Array(5).keys()]]);
    // Each reference read once, and no secret in the run's logs.
    expect(secretManager.asked.slice(before).sort()).toEqual(
      Object.values(byReference())
        .filter((v) => v.startsWith('projects/'))
        .sort(),
    );
    const logs = run.lines.map((l) => JSON.stringify(l)).join('\n');
    expect(logs).not.toContain(stack.KBD_KAFKA_SASL_PASSWORD!);
    expect(logs).not.toContain('BEGIN');

    // An operator command resolves them the same way.
    const status = await runCli(['status', '--json'], pipeline.env);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toHaveLength(2);
  });

  test.each([
    [
      'a reference of the wrong shape',
      { KAFKA_SASL_PASSWORD: 'projects/acme-data/secrets/orders-kafka-sasl-password' },
      /KAFKA_SASL_PASSWORD: "projects\/acme-data\/secrets\/orders-kafka-sasl-password" is not a Secret Manager reference/,
    ],
    [
      'a secret that does not exist',
      { KAFKA_SSL_CA_FILE: ref('orders-kafka-ssl-ca-file', '7') },
      /KAFKA_SSL_CA_FILE: "projects\/acme-data\/secrets\/orders-kafka-ssl-ca-file\/versions\/7": not found/,
    ],
    [
      'a secret the account may not read',
      { KAFKA_SASL_PASSWORD: ref('someone-elses-secret') },
      /KAFKA_SASL_PASSWORD: .*permission denied \(the account needs roles\/secretmanager.secretAccessor/,
    ],
  ])('%s: exit 2 at start naming the variable, nothing read from Kafka', async (_, wrong, message) => {
    const pipeline = await pipelineWithRecords({ ...byReference(), ...wrong });
    const run = await runJob(pipeline.env);
    expect(run.code).toBe(2);
    expect(run.summary).toMatchObject({ stopReason: 'error', recordsRead: 0 });
    expect(String(run.summary.error)).toMatch(message);
    const cli = await runCli(['status'], pipeline.env);
    expect(cli.code).toBe(2);
    expect(cli.stderr).toMatch(message);
  });
});
