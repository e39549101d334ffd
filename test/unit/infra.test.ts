import { beforeAll, describe, expect, test } from 'vitest';
import { type Registered, runProgram } from '../support/pulumi-program.js';

let program: Awaited<ReturnType<typeof runProgram>>;
let resources: Registered[] = [];
beforeAll(async () => {
  program = await runProgram();
  resources = program.resources;
});
const ofType = (type: string) => program.ofType(type);
const one = (type: string) => program.one(type);

describe('the Pulumi program', () => {
  test('the scheduler calls exactly this job :run with an OAuth token of its own account', () => {
    const scheduler = one('gcp:cloudscheduler/job:Job');
    const job = one('gcp:cloudrunv2/job:Job');
    expect(scheduler.inputs.httpTarget).toMatchObject({
      httpMethod: 'POST',
      uri: `https://run.googleapis.com/v2/projects/proj/locations/europe-west1/jobs/${job.inputs.name}:run`,
      oauthToken: {
        serviceAccountEmail: 'orders-sched@proj.iam.gserviceaccount.com',
        scope: 'https://www.googleapis.com/auth/cloud-platform',
      },
    });
    expect(scheduler.inputs.httpTarget.oidcToken).toBeUndefined();
    // The scheduler's account may run this job and nothing else.
    const grants = resources.filter(
      (r) => r.inputs.member === 'serviceAccount:orders-sched@proj.iam.gserviceaccount.com',
    );
    expect(grants.map((g) => [g.type, g.inputs.role, g.inputs.name])).toEqual([
      ['gcp:cloudrunv2/jobIamMember:JobIamMember', 'roles/run.invoker', job.inputs.name],
    ]);
  });

  test("the job's environment follows the config contract and takes Kafka credentials from Secret Manager", () => {
    const job = one('gcp:cloudrunv2/job:Job');
    const template = job.inputs.template;
    expect(template).toMatchObject({ taskCount: 3, parallelism: 3 });
    expect(Number.parseInt(template.template.timeout, 10)).toBeGreaterThan(240 + 10);
    const envs: { name: string; value?: string; valueSource?: any }[] = template.template.containers[0].envs;
    const plain = Object.fromEntries(envs.filter((e) => e.value !== undefined).map((e) => [e.name, e.value]));
    expect(plain).toMatchObject({
      PIPELINE_ID: 'orders',
      GOOGLE_CLOUD_PROJECT: 'proj',
      KAFKA_BROKERS: 'b1:9093,b2:9093',
      KAFKA_TOPICS: 'orders',
      KAFKA_SASL_MECHANISM: 'scram-sha-512',
      BQ_WRITE_MODE: 'storage-write',
      DEAD_LETTER_TOPIC: 'orders-dead-letters',
      ALERT_TOPIC: 'orders-alerts',
      DRAIN_BUDGET_SECONDS: '240',
    });
    for (const name of ['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD']) {
      const env = envs.find((e) => e.name === name)!;
      expect(env.value).toBeUndefined();
      expect(env.valueSource.secretKeyRef.secret).toMatch(/^orders-kafka-sasl-/);
    }
    // The secret value reaches Secret Manager and nothing else.
    const carrying = resources.filter((r) => JSON.stringify(r.inputs).includes('hunter2-secret-value'));
    expect(carrying.map((r) => r.type)).toEqual(['gcp:secretmanager/secretVersion:SecretVersion']);
  });

  test('the private CA goes the way of the other secrets, and reaches the job as a mounted file', () => {
    const job = one('gcp:cloudrunv2/job:Job');
    const task = job.inputs.template.template;
    const container = task.containers[0];
    const env = Object.fromEntries(
      (container.envs as { name: string; value?: string }[]).map((e) => [e.name, e.value]),
    );
    expect(env.KAFKA_SSL_CA_FILE).toBe('/secrets/kafka-ssl-ca-file/pem');
    // Beside it, the schema file: the configured image carries none of this pipeline's.
    expect(container.volumeMounts).toEqual([
      { name: 'kafka-ssl-ca-file', mountPath: '/secrets/kafka-ssl-ca-file' },
      { name: 'bq-schema-file', mountPath: '/config/bq-schema-file' },
    ]);
    expect(task.volumes).toEqual([
      {
        name: 'kafka-ssl-ca-file',
        secret: { secret: 'orders-kafka-ssl-ca-file', items: [{ version: '1', path: 'pem' }] },
      },
      {
        name: 'bq-schema-file',
        secret: { secret: 'orders-bq-schema-file', items: [{ version: '1', path: 'schema.json' }] },
      },
    ]);
    expect(env.BQ_SCHEMA_FILE).toBe('/config/bq-schema-file/schema.json');
    const carrying = resources.filter((r) => JSON.stringify(r.inputs).includes('private-ca-pem'));
    expect(carrying.map((r) => r.type)).toEqual(['gcp:secretmanager/secretVersion:SecretVersion']);
    const readers = resources.filter(
      (r) =>
        r.type === 'gcp:secretmanager/secretIamMember:SecretIamMember' &&
        r.name.includes('KAFKA_SSL_CA_FILE'),
    );
    expect(readers).toHaveLength(1);
    expect(readers[0]!.inputs.member).toMatch(/^serviceAccount:orders-drain@/);
    // The status service reads Kafka with the same settings: the CA file its environment names is there.
    const status = one('gcp:cloudrunv2/service:Service').inputs.template;
    expect(status.volumes).toEqual(task.volumes);
    expect(status.containers[0].volumeMounts).toEqual(container.volumeMounts);
  });

  test('no network configured: no VPC egress, and no Managed Kafka role for SCRAM', () => {
    expect(one('gcp:cloudrunv2/job:Job').inputs.template.template.vpcAccess).toBeUndefined();
    expect(one('gcp:cloudrunv2/service:Service').inputs.template.vpcAccess).toBeUndefined();
  });

  test('every IAM grant is allow-listed, scoped to a resource where one exists, and never primitive', () => {
    const grants = resources.filter((r) => /Iam|IAM/.test(r.type));
    expect(grants.length).toBeGreaterThan(5);
    const allowed: Record<string, string[]> = {
      'gcp:bigquery/datasetIamMember:DatasetIamMember': ['roles/bigquery.dataEditor'],
      'gcp:bigquery/iamMember:IamMember': ['roles/bigquery.dataEditor'],
      'gcp:pubsub/topicIAMMember:TopicIAMMember': ['roles/pubsub.publisher', 'roles/pubsub.viewer'],
      'gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember': ['roles/pubsub.subscriber'],
      'gcp:secretmanager/secretIamMember:SecretIamMember': ['roles/secretmanager.secretAccessor'],
      'gcp:cloudrunv2/jobIamMember:JobIamMember': ['roles/run.invoker', 'roles/run.developer'],
      'gcp:cloudrunv2/serviceIamMember:ServiceIamMember': ['roles/run.invoker'],
      // Project level only where no resource-level grant exists.
      'gcp:projects/iAMMember:IAMMember': [
        'roles/bigquery.jobUser',
        'roles/datastore.user',
        // Granted per project by Google's design; only with the Google OAuth provider (Managed Kafka).
        'roles/managedkafka.client',
      ],
    };
    for (const grant of grants) {
      expect(allowed[grant.type], grant.type).toBeDefined();
      expect(allowed[grant.type]).toContain(grant.inputs.role);
      expect(grant.inputs.role).not.toMatch(/^roles\/(owner|editor|viewer)$/);
      expect(grant.inputs.member).not.toMatch(/allUsers|allAuthenticatedUsers/);
    }
    expect(ofType('gcp:projects/iAMBinding:IAMBinding')).toEqual([]);
    expect(ofType('gcp:projects/iAMPolicy:IAMPolicy')).toEqual([]);
    // The job may publish to exactly its two topics.
    const publishes = ofType('gcp:pubsub/topicIAMMember:TopicIAMMember')
      .filter((g) => g.inputs.role === 'roles/pubsub.publisher')
      .map((g) => g.inputs.topic)
      .sort();
    expect(publishes).toEqual(['orders-alerts', 'orders-dead-letters']);
  });

  test('the target table carries the metadata columns, day partitions and clustering; the error table exists', () => {
    const tables = ofType('gcp:bigquery/table:Table');
    const target = tables.find((t) => t.inputs.tableId === 'events')!;
    const columns = JSON.parse(target.inputs.schema).map((f: { name: string }) => f.name);
    expect(columns).toEqual([
      'order_id',
      '_kafka_topic',
      '_kafka_partition',
      '_kafka_offset',
      '_kafka_timestamp',
      '_kafka_key',
      '_ingested_at',
    ]);
    expect(target.inputs.timePartitioning).toEqual({ type: 'DAY', field: '_kafka_timestamp' });
    expect(target.inputs.clusterings).toEqual(['_kafka_topic', '_kafka_partition', '_kafka_offset']);
    // storage-write (the default): the drain writes the error table itself, each dead letter once, keyed
    // by origin; no BigQuery subscription copies the (at least once) Pub/Sub messages into it.
    const errors = tables.find((t) => t.inputs.tableId === 'events_dead_letters')!;
    expect(JSON.parse(errors.inputs.schema).map((f: { name: string }) => f.name)).toEqual(
      expect.arrayContaining(['_kafka_topic', '_kafka_partition', '_kafka_offset', 'value', 'error_kind']),
    );
    expect(errors.inputs.clusterings).toEqual(['_kafka_topic', '_kafka_partition', '_kafka_offset']);
    expect(ofType('gcp:pubsub/subscription:Subscription').filter((s) => s.inputs.bigqueryConfig)).toEqual([]);
    expect(ofType('gcp:bigquery/iamMember:IamMember')).toEqual([]);
  });

  test('alert policies exist for every alert kind, failed executions, dead-letter rate and missing runs', () => {
    const names = ofType('gcp:monitoring/alertPolicy:AlertPolicy').map((p) => p.inputs.displayName);
    for (const kind of ['idle', 'stalled', 'retention_gap', 'backlog'])
      expect(names).toContain(`orders: ${kind} alert opened`);
    expect(names).toContain('orders: a job execution failed');
    expect(names).toContain('orders: dead letters above 100 in 15 minutes');
    expect(names).toContain('orders: no successful run for three schedule periods (900 s)');
    expect(names).toContain('orders: no run summary for two schedule periods (600 s)');
    expect(names).toContain('orders: freshness SLO burning fast');
    expect(ofType('gcp:monitoring/dashboard:Dashboard')).toHaveLength(1);
    const metrics = ofType('gcp:logging/metric:Metric').map((m) => m.inputs.name);
    expect(metrics).toEqual(
      expect.arrayContaining([
        'kbd_orders_rows_written',
        'kbd_orders_dead_letters',
        'kbd_orders_lag',
        'kbd_orders_runs',
        'kbd_orders_alerts',
      ]),
    );
  });

  test('an Artifact Registry repository holds the image', () => {
    expect(one('gcp:artifactregistry/repository:Repository').inputs).toMatchObject({
      format: 'DOCKER',
      location: 'europe-west1',
    });
  });

  test('the status function is private: only the configured principals may invoke it', () => {
    const service = one('gcp:cloudrunv2/service:Service');
    expect(service.inputs.template.containers[0].args).toContain('--target=status');
    const invokers = ofType('gcp:cloudrunv2/serviceIamMember:ServiceIamMember');
    expect(invokers.map((i) => i.inputs.member)).toEqual(['group:oncall@example.com']);
  });

  test('the APIs the settings need are enabled, never disabled on destroy, and everything waits for them', () => {
    const services = ofType('gcp:projects/service:Service');
    expect(services.map((s) => s.inputs.service).sort()).toEqual([
      'artifactregistry.googleapis.com',
      'bigquery.googleapis.com',
      'bigquerystorage.googleapis.com', // storage-write, the default mode
      'cloudresourcemanager.googleapis.com',
      'cloudscheduler.googleapis.com',
      'firestore.googleapis.com',
      'iam.googleapis.com',
      'logging.googleapis.com',
      'monitoring.googleapis.com',
      'pubsub.googleapis.com',
      'run.googleapis.com',
      'secretmanager.googleapis.com', // the SCRAM credentials and the CA
    ]);
    for (const s of services) expect(s.inputs).toMatchObject({ project: 'proj', disableOnDestroy: false });
    expect(one('time:index/sleep:Sleep').inputs.createDuration).toBe('60s');
    const ready = one('pulumi:providers:gcp');
    expect(ready.inputs.project).toBe('proj');
    // Every Google resource but the APIs themselves is made through the provider that waits for them.
    const google = resources.filter(
      (r) => r.type.startsWith('gcp:') && r.type !== 'gcp:projects/service:Service',
    );
    expect(google.length).toBeGreaterThan(20);
    for (const r of google) expect(r.provider ?? '', `${r.type} ${r.name}`).toContain('::apis-ready::');
    for (const s of services) expect(s.provider ?? '', s.name).not.toContain('apis-ready');
  });

  test('a configured image is run as it is: nothing built, the job and the status service run it', () => {
    expect(ofType('command:local:Command')).toEqual([]);
    const image = 'europe-west1-docker.pkg.dev/proj/drain/kafka-bigquery-drain:1';
    expect(one('gcp:cloudrunv2/job:Job').inputs.template.template.containers[0].image).toBe(image);
    expect(one('gcp:cloudrunv2/service:Service').inputs.template.containers[0].image).toBe(image);
  });
});
