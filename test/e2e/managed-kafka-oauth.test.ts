/**
 * Google's Managed Service for Apache Kafka, as the local broker stands in for it: SASL/OAUTHBEARER over
 * TLS (the stack's third listener), each token checked by stack/kafka/oauth/GoogleTokenValidator.java
 * against the metadata-server stand-in that issued its access token. The job runs with no key and no
 * password: google-auth-library finds the stand-in through GCE_METADATA_HOST, as a Cloud Run job finds
 * its metadata server. The right identity drains; an expired token, a refused identity and credentials
 * with no principal fail at once naming the cause; a token that expires mid-run is replaced before the
 * broker would end the session.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, test } from 'vitest';
import {
  checkpointsOf,
  createPipeline,
  e2eClients,
  errorsOf,
  expectRefusedAtConnect,
  runJob,
  tableOffsets,
} from '../support/job.js';
import { produce } from '../support/kafka.js';
import { metadataServerForFile } from '../support/metadata-server.js';
import { stackEnv } from '../support/stack.js';

const clients = await e2eClients();
const stack = stackEnv() as unknown as Record<string, string>;
const principal = stack.KBD_OAUTH_PRINCIPAL!;
const metadata = metadataServerForFile();

/**
 * The access tokens issued since `from` that reached the broker: the job's other Google clients (BigQuery,
 * Firestore, Pub/Sub) take tokens from the same metadata server, but only Kafka's are checked by the broker.
 */
const kafkaTokens = (from: number) =>
  metadata.issued.slice(from).filter((token) => metadata.checked.has(token));

/** The settings a Managed Kafka user sets, plus where the local CA and metadata server are. */
function managedKafka(): Record<string, string> {
  return {
    KAFKA_BROKERS: stack.KBD_KAFKA_OAUTH_BROKERS!,
    KAFKA_SASL_MECHANISM: 'oauthbearer',
    KAFKA_OAUTH_PROVIDER: 'google',
    KAFKA_SSL_CA_FILE: join(stack.KBD_TLS_DIR!, 'ca.pem'),
    GCE_METADATA_HOST: stack.KBD_METADATA_HOST!,
    METADATA_SERVER_DETECTION: 'ping-only',
    // No gcloud credentials of this machine's user may stand in for the job's.
    HOME: mkdtempSync(join(tmpdir(), 'kbd-home-')),
  };
}

async function pipelineWithRecords(count: number, env: Record<string, string> = {}) {
  const pipeline = await createPipeline(clients, 2, { ...managedKafka(), ...env });
  await produce(
    pipeline.topic,
    Array.from({ length: count }, (_, i) => ({
      partition: i % 2,
      value: JSON.stringify({ id: `r${i}`, n: i }),
    })),
  );
  return pipeline;
}

describe('SASL/OAUTHBEARER with Google credentials (Managed Kafka)', () => {
  test('the job’s own service account drains, with no secret set', async () => {
    metadata.email = principal;
    metadata.lifetimeSeconds = 3600;
    const issuedBefore = metadata.issued.length;
    const pipeline = await pipelineWithRecords(20);
    const run = await runJob(pipeline.env);
    expect(run.code, errorsOf(run.lines)).toBe(0);
    expect(run.summary).toMatchObject({ stopReason: 'caught_up', rowsWritten: 20 });
    const offsets = await tableOffsets(clients, pipeline);
    expect([offsets.get(0), offsets.get(1)]).toEqual([[...Array(10).keys()], [...Array(10).keys()]]);
    // One access token for all of the run's Kafka connections (it is good for an hour).
    const issued = kafkaTokens(issuedBefore);
    expect(issued).toHaveLength(1);
    // No secret reached the logs: neither the access token nor the bearer token built from it.
    expect(JSON.stringify(run.lines)).not.toContain(issued[0]!.slice(5));
  });

  test.each([
    ['an expired token', { lifetimeSeconds: -30 }, /OAUTHBEARER token refused: expired token/],
    [
      'an identity the cluster does not allow',
      { email: 'intruder@elsewhere.iam.gserviceaccount.com' },
      /principal intruder@elsewhere\.iam\.gserviceaccount\.com may not use this cluster/,
    ],
    ['credentials that name no principal', { email: 'default' }, /no principal email \("default"\)/],
  ])('%s: exit 1 at once, the cause named, nothing moved', async (_, change, cause) => {
    metadata.email = principal;
    metadata.lifetimeSeconds = 3600;
    Object.assign(metadata, change);
    const pipeline = await pipelineWithRecords(20);
    const { tookMs, error } = await expectRefusedAtConnect(clients, pipeline, cause);
    expect(error).toMatch(/SASL OAUTHBEARER/);
    console.log(`${_}: the run ended ${tookMs} ms after it started`);
  });

  test('a token that expires during the run is replaced before the broker ends the session', async () => {
    metadata.email = principal;
    // kafkajs re-authenticates a session 10 s before it ends; the broker ends it when the token expires.
    metadata.lifetimeSeconds = 14;
    const issuedBefore = metadata.issued.length;
    // Small batches, so that the run is still reading when the first tokens have expired.
    const pipeline = await pipelineWithRecords(20_000, {
      BATCH_MAX_RECORDS: '10',
      DRAIN_BUDGET_SECONDS: '30',
    });
    const run = await runJob(pipeline.env);
    expect(run.code, errorsOf(run.lines)).toBe(0);
    const durationMs = Number(run.summary.durationMs);
    // The run read for longer than a token lives.
    expect(durationMs).toBeGreaterThan(14_000 + 5_000);
    // Sessions were re-authenticated with new tokens, each before the last one expired.
    const issued = kafkaTokens(issuedBefore);
    expect(issued.length).toBeGreaterThanOrEqual(3);
    // No fetch failed: kafkajs reports a failed fetch as a consumer crash, which the run logs as a warning.
    const grave = run.lines.filter((l) => ['WARNING', 'ERROR', 'CRITICAL'].includes(String(l.severity)));
    expect(grave, errorsOf(run.lines)).toEqual([]);
    // What was read is in the table, each offset once, from 0 up to its checkpoint.
    const checkpoints = await checkpointsOf(clients, pipeline);
    const offsets = await tableOffsets(clients, pipeline);
    for (const partition of [0, 1]) {
      const at = checkpoints.get(partition)!;
      expect(at).toBeGreaterThan(0);
      expect(offsets.get(partition)).toEqual([...Array(at).keys()]);
    }
    console.log(
      `token refresh: ${issued.length} Kafka access tokens of 14 s in a ${durationMs} ms run, ` +
        `${Number(run.summary.rowsWritten)} rows, stopReason ${run.summary.stopReason}`,
    );
  });
});

describe('the local broker’s token check, with a client we did not write', () => {
  test('kcat with an unsecured JWT (alg none) is refused as malformed', async () => {
    const { topic } = await pipelineWithRecords(2);
    const kcat = await promisify(execFile)(
      'kcat',
      [
        '-b',
        stack.KBD_KAFKA_OAUTH_BROKERS!,
        '-X',
        'security.protocol=SASL_SSL',
        '-X',
        'sasl.mechanisms=OAUTHBEARER',
        '-X',
        'enable.sasl.oauthbearer.unsecure.jwt=true',
        '-X',
        `sasl.oauthbearer.config=principal=${principal}`,
        '-X',
        `ssl.ca.location=${join(stack.KBD_TLS_DIR!, 'ca.pem')}`,
        '-L',
        '-t',
        topic,
        '-m',
        '10',
      ],
      { timeout: 30_000 },
    ).then(
      (out) => ({ code: 0, output: out.stdout + out.stderr }),
      (error: { code?: number; stdout?: string; stderr?: string }) => ({
        code: error.code ?? -1,
        output: `${error.stdout ?? ''}${error.stderr ?? ''}`,
      }),
    );
    expect(kcat.code).not.toBe(0);
    expect(kcat.output).toMatch(/OAUTHBEARER token refused: malformed token: the header is not/);
  });
});
