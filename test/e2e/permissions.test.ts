/**
 * Every Google API call each command makes, recorded as it leaves the process (real job and CLI
 * processes against the local stack, KBD_RECORD_GOOGLE_CALLS), must be declared in
 * functions/google/api-methods.ts and need no permission beyond the roles granted to the account the
 * command runs as in the cloud (infra/permissions.ts: the drain's for runs and `check`, the operations
 * account's for the rest), the roles' permissions being test/fixtures/iam-roles.json, copied from
 * Google's reference. The emulators check no permission: this is how a missing grant is found here.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { apiMethodOf, type ResourceKind } from '../../functions/google/api-methods.js';
import {
  commandAccounts,
  dispatcherGrants,
  dispatcherRole,
  drainGrants,
  type Grant,
  operationsGrants,
} from '../../infra/permissions.js';
import roles from '../fixtures/iam-roles.json' with { type: 'json' };
import { startFakeCloudRun } from '../support/fake-cloud-run.js';
import { startFakeSecretManager } from '../support/fake-secret-manager.js';
import { createPipeline, e2eClients, errorsOf, moduleFile, runCli, runJob } from '../support/job.js';
import { produce } from '../support/kafka.js';
import { stackEnv } from '../support/stack.js';

const clients = await e2eClients();
const folder = mkdtempSync(join(tmpdir(), 'kbd-calls-'));
const stack = stackEnv() as unknown as Record<string, string>;
const passwordRef = 'projects/acme-data/secrets/orders-kafka-sasl-password/versions/latest';
const secretManager = await startFakeSecretManager({ [passwordRef]: stack.KBD_KAFKA_SASL_PASSWORD! });
const cloudRun = await startFakeCloudRun();
afterAll(() => Promise.all([secretManager.close(), cloudRun.close()]));

type Command = keyof typeof commandAccounts;

/** The distinct calls a process recorded. */
function recorded(file: string): string[] {
  if (!existsSync(file)) return [];
  return [
    ...new Set(
      readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => line !== ''),
    ),
  ].sort();
}

/** Does a grant on `on` give a permission checked on `kind`? A project-level grant gives it everywhere. */
function covers(on: Grant['on'], kind: ResourceKind): boolean {
  if (on === 'project') return true;
  const where: Record<Grant['on'], ResourceKind | null> = {
    project: 'project',
    'each dataset': 'dataset',
    'dead-letter topic': 'topic',
    'alert topic': 'topic',
    'dead-letter subscription': 'subscription',
    'each secret': 'secret',
    'managed kafka project': null,
    'drain job': 'job',
  };
  return where[on] === kind;
}

/** What a command's calls need that its account's grants do not give: `method: permission on kind`. */
function missingPermissions(calls: readonly string[], grants: readonly Grant[]): string[] {
  // The dispatcher's role is the product's own (infra/permissions.ts), not one of Google's.
  const held = {
    ...(roles.roles as Record<string, string[]>),
    [`custom:${dispatcherRole.id}`]: [...dispatcherRole.permissions],
  };
  const missing: string[] = [];
  for (const call of calls) {
    const method = apiMethodOf(call);
    if (method === undefined) continue;
    for (const [permission, kind] of Object.entries(method.needs)) {
      const given = grants.some((g) => covers(g.on, kind) && (held[g.role] ?? []).includes(permission));
      if (!given) missing.push(`${call}: ${permission} on a ${kind}`);
    }
  }
  return [...new Set(missing)];
}

const accountGrants = { drain: drainGrants, operations: operationsGrants, dispatcher: dispatcherGrants };
const grantsOf = (command: Command) =>
  accountGrants[commandAccounts[command]].filter((g) => !g.managedKafkaOnly);

/** Every call of every command, by mode: filled by the runs below, judged at the end of each. */
const seen = new Map<string, string[]>();

async function recordedRun(mode: string): Promise<Map<Command, string[]>> {
  const oddRefused = moduleFile("export function validate(row) { return row.n % 2 === 0 ? true : 'odd'; }");
  const pipeline = await createPipeline(clients, 1, {
    BQ_WRITE_MODE: mode,
    RULES_MODULE: oddRefused,
    ...(mode === 'cdc' ? { BQ_PRIMARY_KEY: 'id', CHANGE_FORMAT: 'upsert' } : {}),
    // Kafka over SCRAM, its password a Secret Manager reference: the secret is read through its client.
    ...(mode === 'storage-write'
      ? {
          KAFKA_BROKERS: stack.KBD_KAFKA_SASL_BROKERS!,
          KAFKA_SASL_MECHANISM: 'scram-sha-512',
          KAFKA_SASL_USERNAME: stack.KBD_KAFKA_SASL_USERNAME!,
          KAFKA_SASL_PASSWORD: passwordRef,
          KAFKA_SSL_CA_FILE: join(stack.KBD_TLS_DIR!, 'ca.pem'),
          SECRET_MANAGER_ENDPOINT: secretManager.endpoint,
        }
      : {}),
  });
  // As in the cloud: the infra makes the dataset and the alert topic; the drain finds them.
  await clients.bigquery.createDataset(pipeline.dataset);
  const alertTopic = `${pipeline.id}-alerts`;
  await clients.pubsub.createTopic(alertTopic);
  await produce(
    pipeline.topic,
    Array.from({ length: 6 }, (_, n) => ({
      partition: 0,
      key: `k${n}`,
      value: JSON.stringify({ id: `r${n}`, n }),
    })),
  );
  const env = { ...pipeline.env, ALERT_TOPIC: alertTopic };
  const file = (command: Command) => join(folder, `${mode}-${command}`);
  const as = (command: Command) => ({ ...env, KBD_RECORD_GOOGLE_CALLS: file(command) });

  const run = await runJob(as('run'));
  expect(run.code, errorsOf(run.lines)).toBe(0);
  expect(run.summary).toMatchObject({ rowsWritten: 3, deadLettered: 3 });
  const commands: [Command, string[], Record<string, string>?][] = [
    ['check', ['check', '--records', '5']],
    ['verify', ['verify', '--json']],
  ];
  if (mode !== 'cdc') {
    // Replay with the rule fixed: the three letters written and acknowledged.
    const fixed = moduleFile('export function validate() { return true; }');
    commands.push([
      'replay-dead-letters',
      ['replay-dead-letters', '--subscription', pipeline.deadLetterSubscription],
      { RULES_MODULE: fixed },
    ]);
  }
  if (mode === 'storage-write') {
    commands.push(
      ['status', ['status', '--json']],
      ['pause', ['pause', '--topic', pipeline.topic, '--reason', 'permissions test']],
      ['resume', ['resume', '--topic', pipeline.topic, '--reason', 'permissions test']],
      [
        'seek',
        [
          'seek',
          '--topic',
          pipeline.topic,
          '--partition',
          '0',
          '--offset',
          '2',
          '--reason',
          'permissions test',
        ],
      ],
      ['dead-letters', ['dead-letters', '--subscription', pipeline.deadLetterSubscription]],
      // After the seek, records wait: the dispatcher runs the job through Cloud Run's client.
      [
        'dispatch',
        ['dispatch', '--json', '--launch', 'cloud-run'],
        {
          DISPATCH_MAX_TASKS: '2',
          DISPATCH_JOB: `projects/acme-data/locations/europe-west1/jobs/${pipeline.id}-drain`,
          CLOUD_RUN_ADMIN_ENDPOINT: cloudRun.endpoint,
        },
      ],
    );
  }
  for (const [command, args, extra] of commands) {
    const result = await runCli(args, { ...as(command), ...extra });
    expect(result.code, `${command}: ${result.stderr}`).toBe(0);
  }
  return new Map(
    (['run', ...commands.map(([c]) => c)] as Command[]).map((command) => [command, recorded(file(command))]),
  );
}

describe.each(['storage-write', 'merge', 'load', 'insert-all', 'cdc'])('%s mode', (mode) => {
  test('every call of every command is declared, and its account holds every permission it needs', async () => {
    const calls = await recordedRun(mode);
    for (const [command, list] of calls) seen.set(`${mode} ${command}`, list);
    const undeclared = [...calls].flatMap(([command, list]) =>
      list.filter((call) => apiMethodOf(call) === undefined).map((call) => `${command}: ${call}`),
    );
    expect(undeclared.join('\n'), 'declare these in functions/google/api-methods.ts').toBe('');
    const missing = [...calls].flatMap(([command, list]) =>
      missingPermissions(list, grantsOf(command)).map(
        (m) => `${command} (${commandAccounts[command]}): ${m}`,
      ),
    );
    expect(missing.join('\n'), 'grant these in infra/permissions.ts (or make fewer calls)').toBe('');
  });
});

describe('the recording', () => {
  test('holds the calls each command is known to make: the test sees what it judges', () => {
    const has = (key: string, call: string) => expect(seen.get(key) ?? [], key).toContain(call);
    has('storage-write run', 'grpc /google.cloud.bigquery.storage.v1.BigQueryWrite/AppendRows');
    has('storage-write run', 'grpc /google.firestore.v1.Firestore/Commit');
    has('storage-write run', 'grpc /google.pubsub.v1.Publisher/Publish');
    has('storage-write run', 'grpc /google.cloud.secretmanager.v1.SecretManagerService/AccessSecretVersion');
    has('storage-write check', 'grpc /google.pubsub.v1.Publisher/GetTopic');
    has('storage-write replay-dead-letters', 'grpc /google.pubsub.v1.Subscriber/Acknowledge');
    has('storage-write dispatch', 'grpc /google.cloud.run.v2.Jobs/RunJob');
    has('storage-write dispatch', 'grpc /google.cloud.run.v2.Executions/ListExecutions');
    has('load run', 'rest POST /upload/bigquery/v2/projects/local-project/jobs');
    expect(seen.get('insert-all run')?.some((call) => call.endsWith('/tables/events/insertAll'))).toBe(true);
  });

  test('the publisher role alone would not let `check` look its topics up (the defect the viewer grant mends)', () => {
    const check = seen.get('storage-write check') ?? [];
    const publisherOnly = drainGrants.filter((g) => g.role !== 'roles/pubsub.viewer' && !g.managedKafkaOnly);
    expect(missingPermissions(check, publisherOnly)).toEqual([
      'grpc /google.pubsub.v1.Publisher/GetTopic: pubsub.topics.get on a topic',
    ]);
  });
});
