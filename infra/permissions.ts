/**
 * The roles each of the pipeline's accounts holds, on which resource, and why: the drain's account (the
 * scheduled runs, `check`, and the status service), the operations account (every other operator
 * command) and the dispatcher's (DISPATCH_MAX_TASKS set). The infra grants exactly these (test/unit/infra-operations-job.test.ts), and the calls each
 * command makes end to end must need no permission beyond them (test/e2e/permissions.test.ts, with the
 * roles' permissions copied from Google's reference in test/fixtures/iam-roles.json).
 */

/** Where a role is granted. `project` only where Google offers no narrower resource for it. */
export type GrantedOn =
  | 'project'
  | 'each dataset'
  | 'dead-letter topic'
  | 'alert topic'
  | 'dead-letter subscription'
  | 'each secret'
  | 'managed kafka project'
  | 'drain job';

export interface Grant {
  readonly role: string;
  readonly on: GrantedOn;
  readonly why: string;
  /** Granted only with Google's Managed Kafka (OAUTHBEARER with the job's own account). */
  readonly managedKafkaOnly?: true;
}

const kafkaAndSecrets: readonly Grant[] = [
  {
    role: 'roles/secretmanager.secretAccessor',
    on: 'each secret',
    why: 'the Kafka and registry credentials and PEMs',
  },
  {
    role: 'roles/managedkafka.client',
    on: 'managed kafka project',
    why: 'the account is its own Kafka principal (OAUTHBEARER)',
    managedKafkaOnly: true,
  },
];

/** The drain's account: runs, `check`, the status service. */
export const drainGrants: readonly Grant[] = [
  { role: 'roles/bigquery.dataEditor', on: 'each dataset', why: 'make, evolve and write its tables' },
  {
    role: 'roles/bigquery.jobUser',
    on: 'project',
    why: 'MERGE, load and query jobs (BigQuery has no narrower grant for running jobs)',
  },
  {
    role: 'roles/datastore.user',
    on: 'project',
    why: 'checkpoints, leases, the ledger (Firestore has no narrower grant)',
  },
  { role: 'roles/pubsub.publisher', on: 'dead-letter topic', why: 'publish dead letters' },
  { role: 'roles/pubsub.publisher', on: 'alert topic', why: 'publish gap alerts' },
  { role: 'roles/pubsub.viewer', on: 'dead-letter topic', why: '`check` looks the topic up' },
  { role: 'roles/pubsub.viewer', on: 'alert topic', why: '`check` looks the topic up' },
  ...kafkaAndSecrets,
];

/** The operations account: status, verify, seek, pause, resume, dead-letters, replay-dead-letters. */
export const operationsGrants: readonly Grant[] = [
  {
    role: 'roles/bigquery.dataEditor',
    on: 'each dataset',
    why: '`verify` reads the tables; `replay-dead-letters` writes rows and the error table',
  },
  { role: 'roles/bigquery.jobUser', on: 'project', why: "`verify`'s queries, replay's MERGE and load jobs" },
  {
    role: 'roles/datastore.user',
    on: 'project',
    why: 'read checkpoints and the ledger; seek, pause and resume write them under a lease',
  },
  {
    role: 'roles/pubsub.subscriber',
    on: 'dead-letter subscription',
    why: '`dead-letters` and `replay-dead-letters` pull (and replay acknowledges)',
  },
  ...kafkaAndSecrets,
];

/**
 * The dispatcher's own role, granted on the drain job only: what `jobs.run` with a task count and
 * listing the job's executions need (Cloud Run's predefined roles hold more: `run.invoker` lacks
 * `runWithOverrides`, `run.developer` may also change and delete the job).
 */
export const dispatcherRole = {
  id: 'kafkaBigqueryDrainDispatcher',
  title: 'kafka-bigquery-drain dispatcher',
  permissions: ['run.jobs.run', 'run.jobs.runWithOverrides', 'run.executions.list'],
} as const;

/** The dispatcher's account: reads where the pipeline stands, runs the drain job sized to it. */
export const dispatcherGrants: readonly Grant[] = [
  {
    role: `custom:${dispatcherRole.id}`,
    on: 'drain job',
    why: 'run the job with the task count it chose; count the tasks of executions still running',
  },
  {
    role: 'roles/datastore.viewer',
    on: 'project',
    why: 'read checkpoints, leases and run summaries (it writes nothing)',
  },
  ...kafkaAndSecrets,
];

/** The commands and the account each runs as. */
export const commandAccounts = {
  run: 'drain',
  check: 'drain',
  status: 'operations',
  verify: 'operations',
  seek: 'operations',
  pause: 'operations',
  resume: 'operations',
  'dead-letters': 'operations',
  'replay-dead-letters': 'operations',
  dispatch: 'dispatcher',
} as const satisfies Record<string, 'drain' | 'operations' | 'dispatcher'>;
