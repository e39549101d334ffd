/**
 * Every Google API method the product's clients call, the IAM permissions each needs (Google's "required
 * permissions" of the method), the kind of resource they are checked on, and the adapters that call it.
 * The permissions test records every call end to end (call-recorder.ts) and fails on one not declared
 * here, or on one whose permissions no role granted to its command's account holds (infra/permissions.ts).
 */

/** Where a permission is checked: a grant there (or on the project, which holds it) gives it. */
export type ResourceKind = 'project' | 'dataset' | 'topic' | 'subscription' | 'secret' | 'job';

export interface ApiMethod {
  /** gRPC: the method's path; REST (BigQuery): HTTP method and a pattern of the path. */
  readonly call: string | { readonly http: string; readonly path: RegExp };
  /** Each permission it needs, and the kind of resource that permission is checked on. */
  readonly needs: Readonly<Record<string, ResourceKind>>;
  /** The files (functions/…) whose code makes the call, through the official client. */
  readonly usedBy: readonly string[];
}

/** Each of `permissions` checked on `on`. */
const on = (kind: ResourceKind, ...permissions: string[]) =>
  Object.fromEntries(permissions.map((p) => [p, kind])) as Record<string, ResourceKind>;

const firestore = (method: string, permissions: string[]): ApiMethod => ({
  call: `/google.firestore.v1.Firestore/${method}`,
  needs: on('project', ...permissions),
  usedBy: ['checkpoints/firestore-checkpoints.ts', 'checkpoints/leases.ts', 'check/services.ts'],
});
const storageWrite = (method: string): ApiMethod => ({
  call: `/google.cloud.bigquery.storage.v1.BigQueryWrite/${method}`,
  needs: on('dataset', 'bigquery.tables.updateData'),
  usedBy: ['modes/storage-write/stream-flusher.ts', 'sinks/append-rows.ts', 'modes/cdc/cdc-writer.ts'],
});
const rest = (
  http: string,
  path: string,
  needs: Record<string, ResourceKind>,
  usedBy: string[],
): ApiMethod => ({
  call: { http, path: new RegExp(`^/(upload/)?bigquery/v2/projects/[^/]+/${path}$`) },
  needs,
  usedBy,
});
/** A job's own permission (its creator may read and cancel it), and the tables it reads and writes. */
const job = {
  ...on('project', 'bigquery.jobs.create'),
  ...on('dataset', 'bigquery.tables.getData', 'bigquery.tables.updateData'),
};
const table = '[^/:]+';

export const apiMethods: readonly ApiMethod[] = [
  firestore('BatchGetDocuments', ['datastore.entities.get']),
  firestore('Commit', [
    'datastore.entities.create',
    'datastore.entities.update',
    'datastore.entities.delete',
  ]),
  firestore('RunQuery', ['datastore.entities.get', 'datastore.entities.list']),
  firestore('RunAggregationQuery', ['datastore.entities.get', 'datastore.entities.list']),
  firestore('BeginTransaction', ['datastore.databases.get']),
  firestore('Rollback', ['datastore.databases.get']),
  {
    call: '/google.pubsub.v1.Publisher/Publish',
    needs: on('topic', 'pubsub.topics.publish'),
    usedBy: ['dead-letters/pubsub-dead-letters.ts', 'alerts/pubsub-alerts.ts'],
  },
  {
    call: '/google.pubsub.v1.Publisher/GetTopic',
    needs: on('topic', 'pubsub.topics.get'),
    usedBy: ['check/services.ts'],
  },
  ...['Pull', 'Acknowledge', 'ModifyAckDeadline'].map(
    (method): ApiMethod => ({
      call: `/google.pubsub.v1.Subscriber/${method}`,
      needs: on('subscription', 'pubsub.subscriptions.consume'),
      usedBy: ['dead-letters/pubsub-subscription.ts'],
    }),
  ),
  ...[
    'CreateWriteStream',
    'AppendRows',
    'FinalizeWriteStream',
    'BatchCommitWriteStreams',
    'GetWriteStream',
    'FlushRows',
  ].map(storageWrite),
  {
    call: '/google.cloud.secretmanager.v1.SecretManagerService/AccessSecretVersion',
    needs: on('secret', 'secretmanager.versions.access'),
    usedBy: ['google/secret-references.ts'],
  },
  {
    call: '/google.cloud.run.v2.Jobs/RunJob',
    needs: on('job', 'run.jobs.run', 'run.jobs.runWithOverrides'),
    usedBy: ['dispatch/cloud-run-launcher.ts'],
  },
  {
    call: '/google.cloud.run.v2.Executions/ListExecutions',
    needs: on('job', 'run.executions.list'),
    usedBy: ['dispatch/cloud-run-launcher.ts'],
  },
  rest('GET', 'datasets/[^/]+', on('dataset', 'bigquery.datasets.get'), ['sinks/bigquery-tables.ts']),
  rest('POST', 'datasets', on('project', 'bigquery.datasets.create'), ['sinks/bigquery-tables.ts']),
  rest('GET', 'datasets/[^/]+/tables', on('dataset', 'bigquery.tables.list'), ['sinks/bigquery-tables.ts']),
  rest('POST', 'datasets/[^/]+/tables', on('dataset', 'bigquery.tables.create'), [
    'sinks/bigquery-tables.ts',
  ]),
  rest('GET', `datasets/[^/]+/tables/${table}`, on('dataset', 'bigquery.tables.get'), [
    'sinks/bigquery-tables.ts',
  ]),
  rest('PATCH', `datasets/[^/]+/tables/${table}`, on('dataset', 'bigquery.tables.update'), [
    'records/evolve-columns.ts',
  ]),
  rest('PUT', `datasets/[^/]+/tables/${table}`, on('dataset', 'bigquery.tables.update'), [
    'records/evolve-columns.ts',
  ]),
  rest('DELETE', `datasets/[^/]+/tables/${table}`, on('dataset', 'bigquery.tables.delete'), [
    'modes/merge/merge-sink.ts',
  ]),
  rest('POST', `datasets/[^/]+/tables/${table}/insertAll`, on('dataset', 'bigquery.tables.updateData'), [
    'sinks/insert-all-sink.ts',
    'modes/merge/merge-sink.ts',
  ]),
  rest('GET', `datasets/[^/]+/tables/${table}/data`, on('dataset', 'bigquery.tables.getData'), [
    'cli/verify-command.ts',
  ]),
  // Needs no permission: it says which of those asked the caller holds (`check`).
  rest('POST', `datasets/[^/]+/tables/${table}:testIamPermissions`, on('dataset'), ['check/checks.ts']),
  rest('POST', 'queries', job, [
    'modes/merge/merge-sink.ts',
    'sinks/table-stats.ts',
    'cli/verify-command.ts',
  ]),
  rest('GET', 'queries/[^/]+', on('project', 'bigquery.jobs.create'), ['modes/merge/merge-statements.ts']),
  rest('POST', 'jobs', job, ['modes/load/load-jobs.ts', 'modes/load/load-upload.ts']),
  // A resumable upload's chunks, to its session URI (the same path, with its upload_id).
  rest('PUT', 'jobs', job, ['modes/load/load-upload.ts']),
  rest('GET', 'jobs/[^/]+', on('project', 'bigquery.jobs.create'), ['modes/load/load-jobs.ts']),
  rest('POST', 'jobs/[^/]+/cancel', on('project', 'bigquery.jobs.create'), ['modes/load/load-jobs.ts']),
];

/** The declared method a recorded call is (`grpc /pkg.Service/Method`, `rest VERB /path`), if any. */
export function apiMethodOf(recorded: string): ApiMethod | undefined {
  const [kind, verb, path] = recorded.split(' ');
  if (kind === 'grpc') return apiMethods.find((m) => m.call === verb);
  return apiMethods.find(
    (m) => typeof m.call !== 'string' && m.call.http === verb && m.call.path.test(path ?? ''),
  );
}
