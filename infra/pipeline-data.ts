import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import { stalenessOf } from '../functions/config/cdc-config.js';
import {
  cdcSourceFields,
  deadLetterKey,
  deadLetterTableName,
  deadLetterTableSchema,
  readUserSchema,
  targetTableSchema,
  withExtraColumn,
} from '../functions/schema/table-schema.js';
import type { InfraConfig } from './config.js';

/**
 * The error table the dead-letter topic's BigQuery subscription writes (raw message, reason, origin, time),
 * in insert-all mode. In the exactly-once modes (storage-write, merge) the drain writes the error table
 * itself, each dead letter once, before the batch's checkpoint moves (`deadLetterTableSchema`), and there
 * is no subscription.
 */
export const errorTableSchema = [
  { name: 'subscription_name', type: 'STRING', mode: 'NULLABLE' },
  { name: 'message_id', type: 'STRING', mode: 'NULLABLE' },
  { name: 'publish_time', type: 'TIMESTAMP', mode: 'NULLABLE' },
  { name: 'data', type: 'BYTES', mode: 'NULLABLE', description: 'the original record value' },
  {
    name: 'attributes',
    type: 'JSON',
    mode: 'NULLABLE',
    description:
      'error_kind, error_message, source_topic/partition/offset/timestamp, key_base64, pipeline, execution',
  },
];

/** A dataset by its id: one this program made, or one that existed (`existingDatasets`). */
export interface DatasetRef {
  readonly datasetId: pulumi.Output<string>;
}

/**
 * Where the pipeline's data and state live: the BigQuery dataset with the target and error tables, the
 * Firestore database, and the dead-letter and alert topics (each with a pull subscription, and the
 * dead-letter topic with a BigQuery subscription into the error table).
 */
export class PipelineData extends pulumi.ComponentResource {
  /** Every dataset the routes write (the first one's is `dataset`): made here, or adopted (`existingDatasets`). */
  readonly datasets: DatasetRef[];
  readonly dataset: DatasetRef;
  /** Per route, its target table and error table (the first route's are `targetTable` and `errorTable`). */
  readonly tables: { target: gcp.bigquery.Table; errors: gcp.bigquery.Table }[];
  readonly targetTable: gcp.bigquery.Table;
  readonly errorTable: gcp.bigquery.Table;
  readonly deadLetterTopic: gcp.pubsub.Topic;
  readonly alertTopic: gcp.pubsub.Topic;
  /** What `dead-letters` and `replay-dead-letters` pull (`{pipeline}-dead-letters-pull`). */
  readonly deadLetterSubscription: gcp.pubsub.Subscription;

  constructor(name: string, config: InfraConfig, opts?: pulumi.ComponentResourceOptions) {
    super('kafka-bigquery-drain:index:PipelineData', name, {}, opts);
    const parent = { parent: this };

    // The project's one (default) database: made by the first pipeline's stack, which keeps it (protected);
    // every other pipeline in the project names it existing (`firestoreDatabase: existing`). Each pipeline's
    // state is under its own `pipelines/{pipelineId}/`.
    if (config.firestoreDatabase === 'create') {
      new gcp.firestore.Database(
        `${name}-firestore`,
        {
          name: '(default)',
          locationId: config.region,
          type: 'FIRESTORE_NATIVE',
          deleteProtectionState: 'DELETE_PROTECTION_ENABLED',
        },
        { ...parent, protect: true },
      );
    }

    // One dataset resource per dataset the routes name; the first keeps the single-table names, so that a
    // pipeline that gains routes keeps its table (no replacement). A dataset that exists already (another
    // pipeline's, a team's) is adopted by its id: granted and written, never made or deleted here.
    const datasets = new Map<string, DatasetRef>();
    for (const route of config.routes) {
      if (datasets.has(route.dataset)) continue;
      const resourceName = datasets.size === 0 ? `${name}-dataset` : `${name}-dataset-${route.dataset}`;
      datasets.set(
        route.dataset,
        config.existingDatasets.includes(route.dataset)
          ? { datasetId: pulumi.output(route.dataset) }
          : new gcp.bigquery.Dataset(
              resourceName,
              { datasetId: route.dataset, location: config.region },
              parent,
            ),
      );
    }
    this.datasets = [...datasets.values()];
    this.dataset = this.datasets[0]!;
    const drainWritesErrors = config.writeMode !== 'insert-all';
    let firstErrors: gcp.bigquery.Table | undefined;
    this.tables = config.routes.map((route, index) => {
      const suffix = index === 0 ? '' : `-${route.dataset}-${route.table}`;
      const dataset = datasets.get(route.dataset)!;
      const cdc = config.cdc;
      const userFields = withExtraColumn(
        route.schemaFile === null ? [] : readUserSchema(route.schemaFile),
        route.unknownFields,
      );
      const target = new gcp.bigquery.Table(
        `${name}-target${suffix}`,
        {
          datasetId: dataset.datasetId,
          tableId: route.table,
          schema: JSON.stringify(
            targetTableSchema(
              cdc?.sourceColumns ? [...userFields, ...cdcSourceFields] : userFields,
              route.metadataColumns,
            ),
          ),
          // cdc mode: a change table, keyed and clustered by its primary key, with its max staleness.
          ...(cdc === undefined
            ? tableLayoutInputs(route.layout)
            : cdcTableInputs(cdc.primaryKey, cdc.maxStaleness)),
          deletionProtection: true,
        },
        // Columns from a registry are the drain's to add as the subject evolves, and with unknownFields
        // evolve as new fields come: a deploy leaves them.
        route.schemaFile === null || route.unknownFields === 'evolve'
          ? { ...parent, ignoreChanges: ['schema'] }
          : parent,
      );
      // insert-all mode: one error table, the first route's, fed by the dead-letter topic's subscription
      // with every route's letters (each names its source topic).
      if (!drainWritesErrors && firstErrors !== undefined) return { target, errors: firstErrors };
      const errors = new gcp.bigquery.Table(
        `${name}-errors${suffix}`,
        {
          datasetId: dataset.datasetId,
          tableId: deadLetterTableName(route.table),
          ...(drainWritesErrors
            ? {
                schema: JSON.stringify(deadLetterTableSchema),
                // cdc mode writes its dead letters as changes too, keyed by origin.
                ...(config.cdc === undefined
                  ? {
                      timePartitioning: { type: 'DAY', field: '_kafka_timestamp' },
                      clusterings: ['_kafka_topic', '_kafka_partition', '_kafka_offset'],
                    }
                  : cdcTableInputs(deadLetterKey, config.cdc.maxStaleness)),
              }
            : {
                schema: JSON.stringify(errorTableSchema),
                timePartitioning: { type: 'DAY', field: 'publish_time' },
              }),
          deletionProtection: true,
        },
        parent,
      );
      firstErrors ??= errors;
      return { target, errors };
    });
    this.targetTable = this.tables[0]!.target;
    this.errorTable = this.tables[0]!.errors;

    this.deadLetterTopic = new gcp.pubsub.Topic(
      `${name}-dead-letters`,
      { name: `${config.pipelineId}-dead-letters` },
      parent,
    );
    this.alertTopic = new gcp.pubsub.Topic(`${name}-alerts`, { name: `${config.pipelineId}-alerts` }, parent);
    this.deadLetterSubscription = new gcp.pubsub.Subscription(
      `${name}-dead-letters-pull`,
      {
        topic: this.deadLetterTopic.name,
        name: `${config.pipelineId}-dead-letters-pull`,
        messageRetentionDuration: '604800s',
      },
      parent,
    );
    new gcp.pubsub.Subscription(
      `${name}-alerts-pull`,
      {
        topic: this.alertTopic.name,
        name: `${config.pipelineId}-alerts-pull`,
        messageRetentionDuration: '604800s',
      },
      parent,
    );

    if (!drainWritesErrors) this.feedErrorTableFromPubSub(name, config, parent);
    this.registerOutputs({});
  }

  /** insert-all mode: a BigQuery subscription copies every dead-letter message into the error table. */
  private feedErrorTableFromPubSub(
    name: string,
    config: InfraConfig,
    parent: pulumi.CustomResourceOptions,
  ): void {
    // Pub/Sub's own service agent writes the error table: it may edit that table and nothing else.
    const project = gcp.organizations.getProjectOutput({ projectId: config.project });
    const pubsubAgent = pulumi.interpolate`serviceAccount:service-${project.number}@gcp-sa-pubsub.iam.gserviceaccount.com`;
    const agentWrites = new gcp.bigquery.IamMember(
      `${name}-errors-pubsub-writer`,
      {
        datasetId: this.dataset.datasetId,
        tableId: this.errorTable.tableId,
        role: 'roles/bigquery.dataEditor',
        member: pubsubAgent,
      },
      parent,
    );
    new gcp.pubsub.Subscription(
      `${name}-dead-letters-to-bigquery`,
      {
        topic: this.deadLetterTopic.name,
        name: `${config.pipelineId}-dead-letters-bigquery`,
        bigqueryConfig: {
          table: pulumi.interpolate`${config.project}.${this.dataset.datasetId}.${this.errorTable.tableId}`,
          writeMetadata: true,
        },
      },
      { ...parent, dependsOn: [agentWrites] },
    );
  }
}

/** The table layout as Pulumi takes it: time partitioning, clustering, a required partition filter. */
function tableLayoutInputs(layout: InfraConfig['routes'][number]['layout']) {
  return {
    timePartitioning: {
      type: layout.partitionType,
      field: layout.partitionField,
      ...(layout.partitionExpirationDays === null
        ? {}
        : { expirationMs: Math.round(layout.partitionExpirationDays * 86_400_000) }),
    },
    ...(layout.clustering.length === 0 ? {} : { clusterings: [...layout.clustering] }),
    ...(layout.requirePartitionFilter ? { requirePartitionFilter: true } : {}),
  };
}

/** A change table (cdc mode): its primary key, clustered by it, its max staleness (none for `0`). */
function cdcTableInputs(primaryKey: readonly string[], maxStaleness: string) {
  const interval = stalenessOf(maxStaleness);
  return {
    tableConstraints: { primaryKey: { columns: [...primaryKey] } },
    clusterings: primaryKey.slice(0, 4),
    ...(interval === null ? {} : { maxStaleness: interval }),
  };
}
