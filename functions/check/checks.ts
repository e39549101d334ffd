/**
 * `check`: whether a pipeline's configuration will work, before its first run, changing nothing anywhere
 * (no table, dataset, checkpoint, lease, ledger entry, dead letter or alert is made, written or
 * published; Firestore's probe document is deleted as soon as it is written).
 */
import kafkajs from 'kafkajs';
import type { DrainConfig } from '../config/config.js';
import { type Route, type RoutedTopics, resolveTopics, tableName } from '../config/routes.js';
import { preferredTask } from '../drain/assignment.js';
import { createRecordNames } from '../formats/record-names.js';
import { createRegistry, routeValues } from '../formats/route-values.js';
import type { SchemaRegistry } from '../formats/schema-registry.js';
import { createGoogleClients, type GoogleClients } from '../google/clients.js';
import { type CallTracker, createCallTracker } from '../kernel/calls.js';
import type { Logger } from '../kernel/logger.js';
import type { Source } from '../kernel/ports.js';
import { writeModeNamed } from '../modes/registry.js';
import { withEvolvedColumns } from '../modes/target-table.js';
import { routeColumns } from '../records/field-names.js';
import { compareSchemas } from '../schema/compare.js';
import { cdcSourceFields, type SchemaField, targetTableSchema } from '../schema/table-schema.js';
import { checkBrokerCertificate, kafkaClientOptions, listTopics } from '../sources/kafka-client.js';
import { createKafkaSource } from '../sources/kafka-source.js';
import { type DryRunRoute, dryRun } from './dry-run.js';
import { type CheckReport, checkList, emptyDryRun } from './report.js';
import { checkFirestore, checkPubSub } from './services.js';

export interface CheckOptions {
  /** Records read a partition by the dry run. */
  readonly records: number;
  readonly logger: Logger;
  /** How long Kafka may take to answer before its check fails. */
  readonly kafkaTimeoutMs?: number;
}

/** The permissions a run needs on its table, whatever the write mode (asked where BigQuery answers). */
const tablePermissions = ['bigquery.tables.get', 'bigquery.tables.getData', 'bigquery.tables.updateData'];

export async function checkPipeline(config: DrainConfig, options: CheckOptions): Promise<CheckReport> {
  const list = checkList();
  const clients = createGoogleClients(config);
  // Every call has a deadline: a service that does not answer fails its check, never hangs it.
  const calls = createCallTracker();
  const kafkaOptions = {
    ...kafkaClientOptions(config, `kafka-bigquery-drain-check-${config.pipelineId}`),
    retry: { retries: 1, initialRetryTime: 300, maxRetryTime: 1_000 },
  };
  const kafka = new kafkajs.Kafka(kafkaOptions);
  const source = createKafkaSource(kafka, {
    groupPrefix: `kafka-bigquery-drain-check.${config.pipelineId}`,
    logger: options.logger,
  });
  let dryRunCounts = emptyDryRun();
  try {
    let brokerTopics: string[] | undefined;
    await list.run('kafka', 'check KAFKA_BROKERS, the network path and the credentials', async () => {
      brokerTopics = await calls.track(
        'kafka',
        'list topics',
        async () => {
          await checkBrokerCertificate(kafkaOptions);
          return listTopics(kafka);
        },
        { deadlineMs: options.kafkaTimeoutMs ?? 15_000 },
      );
      return `${config.kafka.brokers.join(',')} answered; ${brokerTopics.length} topics visible`;
    });
    const routed =
      brokerTopics === undefined ? undefined : await checkTopics(config, list, brokerTopics, source);
    if (routed !== undefined) {
      const { beforeRun } = writeModeNamed(config.bigquery.writeMode);
      const topics = [...new Set(routed.flatMap((r) => r.topics))];
      if (beforeRun !== undefined)
        await list.run('write mode', 'see the message', async () => {
          await beforeRun({ config, clients, kafka, topics, logger: options.logger, readOnly: true });
          return `${config.bigquery.writeMode}: the topics' partition counts are as the pipeline knows them`;
        });
    }
    const registry = config.schemaRegistry === null ? null : createRegistry(config.schemaRegistry);
    const ready: DryRunRoute[] = [];
    for (const route of config.routes) {
      const topics = routed?.find((r) => r.route === route)?.topics ?? [];
      const columns = await checkTable(config, list, {
        route,
        topics,
        registry,
        clients,
        calls,
        logger: options.logger,
      });
      if (columns !== undefined && topics.length > 0) ready.push({ route, topics, ...columns });
    }
    await checkFirestore(config, list, clients, calls);
    await checkPubSub(config, list, clients, calls);
    if (routed !== undefined && ready.length > 0) {
      await list.run('dry run', 'see the message', async () => {
        const names = registry === null ? undefined : createRecordNames(registry, options.logger);
        dryRunCounts = await dryRun(
          config,
          { source, firestore: clients.firestore },
          ready,
          options.records,
          names,
        );
        return `${dryRunCounts.records} records read, up to ${options.records} a partition from where the next run starts`;
      });
    }
  } finally {
    await clients.close().catch(() => {});
  }
  return { ok: list.checks.every((c) => c.ok), checks: list.checks, dryRun: dryRunCounts };
}

/** Each route's topics exist (named ones) or match (regexes); partitions and this task's share. */
async function checkTopics(
  config: DrainConfig,
  list: ReturnType<typeof checkList>,
  brokerTopics: readonly string[],
  source: Source,
): Promise<RoutedTopics[] | undefined> {
  let routed: RoutedTopics[];
  try {
    routed = resolveTopics(config.routes, config.kafka.topics, brokerTopics);
  } catch (error) {
    list.fail('topics', `${(error as Error).message}: correct KAFKA_TOPICS or the routes`);
    return undefined;
  }
  const present = new Set(brokerTopics);
  for (const r of routed) {
    const name = `topics (${tableName(r.route)})`;
    const missing = r.topics.filter((t) => !present.has(t));
    if (missing.length > 0) {
      list.fail(
        name,
        `${missing.join(', ')} not on the broker: create ${missing.length > 1 ? 'them' : 'it'}, or correct the topic names`,
      );
      continue;
    }
    if (r.topics.length === 0) {
      list.pass(name, 'no topic of the broker matches the route yet: a run drains it once one does');
      continue;
    }
    await list.run(name, 'check the topics', async () => {
      const marks = await source.watermarks(r.topics);
      const mine = marks.filter((m) => preferredTask(m, config.taskCount) === config.taskIndex).length;
      const share =
        config.taskCount > 1 ? ` (${mine} dealt to task ${config.taskIndex} of ${config.taskCount})` : '';
      return `${r.topics.join(', ')}: ${marks.length} partitions${share}`;
    });
  }
  return routed.map((r) => ({ ...r, topics: r.topics.filter((t) => present.has(t)) }));
}

/**
 * The route's columns (from the schema file or the registry) and its table: made if missing, or the
 * columns a run would add, or the change it would stop on; the permissions where BigQuery answers.
 */
async function checkTable(
  config: DrainConfig,
  list: ReturnType<typeof checkList>,
  target: {
    route: Route;
    topics: readonly string[];
    registry: SchemaRegistry | null;
    clients: GoogleClients;
    calls: CallTracker;
    logger: Logger;
  },
): Promise<Omit<DryRunRoute, 'route' | 'topics'> | undefined> {
  const { route, topics, registry, clients, calls, logger } = target;
  const table = tableName(route);
  if (
    registry !== null &&
    route.valueFormat !== 'json' &&
    route.valueSchemaFile === null &&
    route.schemaFile === null
  ) {
    const topic = topics[0] ?? route.topics.find((t) => t.kind === 'name')?.name;
    // No subject to name (no topic yet, no VALUE_SUBJECT): the columns check below says so.
    const subject = route.valueSubject ?? (topic === undefined ? undefined : `${topic}-value`);
    const found =
      subject === undefined ||
      (await list.run(
        `registry (${table})`,
        `register the subject's schema, or set VALUE_SUBJECT`,
        async () => {
          const latest = await registry.subjectVersion(subject, 'latest');
          return `subject ${subject}: version ${latest.version} (schema id ${latest.id})`;
        },
      ));
    if (!found) return undefined;
  }
  let values: Awaited<ReturnType<typeof routeValues>>;
  try {
    values = await routeValues(
      route,
      topics,
      registry,
      clients.bigquery,
      logger,
      async () => {},
      config.bigquery.cdc?.changeFormat === 'debezium' ? 'debezium' : undefined,
    );
  } catch (error) {
    list.fail(`columns (${table})`, `${(error as Error).message}: correct the schema file or the subject`);
    return undefined;
  }
  const named = routeColumns(values.columns, route);
  // UNKNOWN_FIELDS=evolve: the columns runs added to the table are the route's too.
  const columns = route.unknownFields === 'evolve' ? await withEvolvedColumns(clients, route, named) : named;
  const wanted = targetTableSchema(
    [...columns, ...(config.bigquery.cdc?.sourceColumns ? cdcSourceFields : [])],
    route.metadata,
  );
  await list.run(`table ${table}`, 'check BQ_DATASET, BQ_TABLE and the schema file', async () => {
    const [exists] = await clients.bigquery.dataset(route.dataset).table(route.table).exists();
    if (!exists) {
      const [datasetExists] = await clients.bigquery.dataset(route.dataset).exists();
      return `${datasetExists ? '' : 'dataset and '}table would be made with ${wanted.length} columns`;
    }
    const [metadata] = await clients.bigquery.dataset(route.dataset).table(route.table).getMetadata();
    const current = (metadata.schema?.fields ?? []) as SchemaField[];
    const { changes, refused } = compareSchemas(current, wanted);
    if (refused.length > 0)
      throw new Error(`a run would stop on: ${refused.map((r) => r.message).join('; ')}`);
    return changes.length === 0
      ? `exists, ${current.length} columns, as the run wants them`
      : `exists; a run would add or relax: ${changes.map((c) => c.column).join(', ')}`;
  });
  await checkPermissions(list, clients, calls, route);
  return { columns, ...(values.format === undefined ? {} : { format: values.format }) };
}

async function checkPermissions(
  list: ReturnType<typeof checkList>,
  clients: GoogleClients,
  calls: CallTracker,
  route: Route,
) {
  const table = clients.bigquery.dataset(route.dataset).table(route.table);
  let granted: string[];
  try {
    const [exists] = await table.exists();
    if (!exists) return;
    const [answer] = (await calls.track(
      'bigquery',
      'testIamPermissions',
      () =>
        table.request({
          method: 'POST',
          uri: ':testIamPermissions',
          json: { permissions: tablePermissions },
        }),
      { deadlineMs: 5_000 },
    )) as unknown as [{ permissions?: string[] }];
    granted = answer?.permissions ?? [];
  } catch (error) {
    // Refused outright: the job's account cannot even look. Anything else: this endpoint cannot say.
    const code = (error as { code?: unknown }).code;
    if (code === 401 || code === 403) {
      list.fail(
        `permissions (${tableName(route)})`,
        `${(error as Error).message}: grant roles/bigquery.dataEditor on the dataset`,
      );
      return;
    }
    list.pass(
      `permissions (${tableName(route)})`,
      `cannot be checked here: the endpoint does not answer testIamPermissions (${(error as Error).message.slice(0, 60)})`,
    );
    return;
  }
  const lacking = tablePermissions.filter((p) => !granted.includes(p));
  if (lacking.length === 0) list.pass(`permissions (${tableName(route)})`, tablePermissions.join(', '));
  else
    list.fail(
      `permissions (${tableName(route)})`,
      `lacking ${lacking.join(', ')}: grant roles/bigquery.dataEditor on the dataset`,
    );
}
