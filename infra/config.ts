import { readFileSync } from 'node:fs';
import { basename, dirname, relative, resolve } from 'node:path';
import type * as pulumi from '@pulumi/pulumi';
import { whenRefusal, whenWriteModes } from '../functions/config/bigquery.js';
import { stalenessOf } from '../functions/config/cdc-config.js';
import { parseConfig } from '../functions/config/config.js';
import { dispatchOf as parseDispatch } from '../functions/config/dispatch.js';
import { bigQueryLoadsPerTablePerDay, loadPlan } from '../functions/config/load-config.js';
import { reader } from '../functions/config/reader.js';
import {
  parseRoutes,
  tableName,
  type ValueFormatName,
  valueFormatNames,
} from '../functions/config/routes.js';
import { leastSettings } from '../functions/config/settings.js';
import {
  defaultTableLayout,
  type TableLayout,
  tableLayoutProblem,
} from '../functions/config/table-layout.js';
import { type ConfigReader, stackConfig } from './config-reader.js';
import { schedulePeriodSeconds } from './schedule.js';
import { passedSettings } from './settings-map.js';

/** A table the pipeline writes, with its schema: one per route. */
export interface InfraRoute {
  readonly dataset: string;
  readonly table: string;
  /**
   * A path on the deploying machine. Null: the columns come from the values' schema (a registry or a raw
   * Avro schema file): the table is made with the metadata columns and the drain adds the rest.
   */
  readonly schemaFile: string | null;
  readonly metadataColumns: { readonly headers: boolean; readonly keyText: boolean };
  /** Time partitioning and clustering of the table (the drain's defaults unless configured). */
  readonly layout: TableLayout;
  /** UNKNOWN_FIELDS of the route (the pipeline's `unknownFields` unless its route says). */
  readonly unknownFields: InfraConfig['unknownFields'];
}

/** Everything the Pulumi program is told, read from Pulumi config once (`pulumi config set ...`). */
export interface InfraConfig {
  readonly project: string;
  readonly region: string;
  readonly pipelineId: string;
  readonly kafkaBrokers: string;
  /** KAFKA_TOPICS; empty when the routes file names the topics. */
  readonly kafkaTopics: string;
  readonly kafkaSaslMechanism: string | undefined;
  /**
   * KAFKA_OAUTH_PROVIDER with `kafkaSaslMechanism: oauthbearer`: `google`, a token from the job's own
   * service account (Managed Service for Apache Kafka). No secret is made then.
   */
  readonly kafkaOauthProvider: 'google' | undefined;
  /**
   * The project of the Managed Kafka cluster whose `roles/managedkafka.client` the job's account is granted
   * (Google grants it per project): set with the Google OAuth provider, the pipeline's project by default.
   */
  readonly managedKafkaProject: string | undefined;
  /**
   * Direct VPC egress, so that the job reaches brokers on private addresses: the VPC network and subnetwork
   * (names or self-links; the job's tasks take their addresses from the subnetwork), network tags for
   * firewall rules, and which traffic goes through the VPC (`private-ranges-only` by default, so that Google
   * APIs stay on Google's own path). Without a network the job has no VPC egress.
   */
  readonly vpc:
    | {
        readonly network: string | undefined;
        readonly subnetwork: string | undefined;
        readonly tags: readonly string[];
        readonly egress: 'PRIVATE_RANGES_ONLY' | 'ALL_TRAFFIC';
      }
    | undefined;
  /** Secret config values: they only ever reach Secret Manager, never the job's plain environment. */
  readonly kafkaSaslUsername: pulumi.Output<string> | undefined;
  readonly kafkaSaslPassword: pulumi.Output<string> | undefined;
  readonly kafkaSsl: boolean;
  /**
   * PEM text for TLS to the brokers: a private CA, and a client certificate and key for mTLS. Kept in
   * Secret Manager like the SASL credentials and mounted into the job as files.
   */
  readonly kafkaSslCa: pulumi.Output<string> | undefined;
  readonly kafkaSslClientCert: pulumi.Output<string> | undefined;
  readonly kafkaSslClientKey: pulumi.Output<string> | undefined;
  /** Every table and its schema: the routes of `routesFile`, or the one of `dataset`/`table`/`schemaFile`. */
  readonly routes: readonly InfraRoute[];
  /**
   * How record values are written (VALUE_FORMAT; a routes file may say per route) and where their schemas
   * are: the registry's URL, and for basic auth its key and secret (Secret Manager, never plain env).
   * A Google registry (`*.googleapis.com`) takes the job's own token: no secret.
   */
  readonly values: {
    readonly format: ValueFormatName;
    readonly subject: string | undefined;
    readonly registryUrl: string | undefined;
    readonly registryUsername: pulumi.Output<string> | undefined;
    readonly registryPassword: pulumi.Output<string> | undefined;
  };
  /**
   * `routesFile`: the routes file (ROUTES_FILE) on the deploying machine. Its folder is baked into the image
   * (build arg ROUTES_DIR) at `/app/routes`, so every schema and rules path in it is relative and inside it.
   */
  readonly routesFile: { readonly name: string; readonly dir: string } | undefined;
  /** BQ_DATASET: the dataset of the single table, and the default of routes naming a table alone. */
  readonly dataset: string;
  readonly writeMode: 'storage-write' | 'merge' | 'insert-all' | 'cdc' | 'load';
  /** load mode: the pipeline's share of BigQuery's 1,500 load jobs a table a day (default 1,000). */
  readonly loadJobsPerTablePerDay: number | undefined;
  /**
   * UNKNOWN_FIELDS: a field the table lacks is refused (`reject`), dropped (`ignore`), kept in `_extra`
   * (`json`) or made a column (`evolve`, at most `evolveColumnsPerRun` a run and `evolveColumnsMax` in all).
   */
  readonly unknownFields: 'reject' | 'ignore' | 'json' | 'evolve';
  readonly evolveColumns: { readonly perRun: number; readonly max: number };
  /** FIELD_NAMES: names BigQuery refuses are dead letters (`strict`) or mapped (`sanitize`). */
  readonly fieldNames: 'strict' | 'sanitize';
  /**
   * cdc mode: the change format, the tables' primary key (required here: Pulumi makes the table with it;
   * the drain checks the table has it), max staleness (`15m` by default) and the optional source columns.
   */
  readonly cdc:
    | {
        readonly changeFormat: 'debezium' | 'upsert';
        readonly primaryKey: readonly string[];
        readonly maxStaleness: string;
        readonly sourceColumns: boolean;
      }
    | undefined;
  /** Optional metadata columns: `_kafka_headers` and `_kafka_key_text` (BQ_HEADERS_COLUMN, BQ_KEY_TEXT_COLUMN). */
  readonly metadataColumns: { readonly headers: boolean; readonly keyText: boolean };
  readonly schedule: string;
  /** The longest gap between two scheduled runs (schedule.ts). */
  readonly schedulePeriodSeconds: number;
  /**
   * The freshness SLO: a run ends with its oldest waiting record at most this old (default period +
   * budget + 60 s), in `freshnessGoal` of runs (default 0.99) over 28 days.
   */
  readonly freshness: { readonly targetSeconds: number; readonly goal: number };
  readonly timeZone: string;
  /** Each execution's tasks when run without the dispatcher (`runOnce`, or the schedule with no dispatcher). */
  readonly taskCount: number;
  /**
   * `dispatchMaxTasks` set: the schedule calls the dispatcher (dispatcher.ts), which runs the job with the
   * tasks the backlog needs, between these bounds, or none.
   */
  readonly dispatch: { readonly minTasks: number; readonly maxTasks: number } | undefined;
  readonly budgetSeconds: number;
  readonly leaseTtlSeconds: number;
  readonly idleAlertSeconds: number;
  /** An image to run as it is (no build); without it `pulumi up` builds one on Cloud Build (image.ts). */
  readonly image: string | undefined;
  readonly maxRetries: number;
  /** Who may call the private status function, e.g. `group:data-oncall@example.com`. */
  readonly statusInvokers: string[];
  /**
   * Principals who may run operator commands in the cloud: `roles/run.developer` on the operations job
   * only (running it with other arguments is `run.jobs.runWithOverrides`).
   */
  readonly operators: string[];
  /** Where alert policies notify (Cloud Monitoring notification channel ids); may be empty. */
  readonly notificationChannels: string[];
  /**
   * `create`: this stack makes the project's (default) Firestore database and keeps it; `existing`: it is
   * there already (another pipeline's stack made it, or the project used Firestore before).
   */
  readonly firestoreDatabase: 'create' | 'existing';
  /** Datasets that exist already: adopted (granted, tables made in them), never made or deleted. */
  readonly existingDatasets: readonly string[];
  /** The settings given to the job as they are (settings-map.ts `passed`): variable → value, those set. */
  readonly passed: Readonly<Record<string, string>>;
}

export function readInfraConfig(source = stackConfig()): InfraConfig {
  const { gcp, config } = source;
  const writeMode = config.get('writeMode') ?? 'storage-write';
  if (!['storage-write', 'merge', 'insert-all', 'cdc', 'load'].includes(writeMode)) {
    throw new Error(`writeMode must be storage-write, merge, insert-all, cdc or load, not ${writeMode}`);
  }
  const schedule = config.get('schedule') ?? '*/5 * * * *';
  // A schedule without a single period needs its freshness target set instead of derived.
  const periodSeconds =
    config.getNumber('freshnessTargetSeconds') !== undefined
      ? safePeriod(schedule)
      : schedulePeriodSeconds(schedule);
  // Following the log (drainUntil budget), executions run back to back: each one's budget is the period
  // and a handover, so that the next has started (and waits for its partitions) when this one releases them.
  const follow = config.get('drainUntil') === 'budget';
  const budgetSeconds = config.getNumber('budgetSeconds') ?? (follow ? periodSeconds + handoverSeconds : 240);
  if (follow && config.get('dispatchMaxTasks') !== undefined)
    throw new Error(
      "drainUntil budget runs executions back to back with taskCount tasks each: the dispatcher (dispatchMaxTasks) would count the ending execution's tasks as running and launch too few; set taskCount instead",
    );
  const mechanism = config.get('kafkaSaslMechanism');
  const oauthProvider =
    config.get('kafkaOauthProvider') ?? (mechanism === 'oauthbearer' ? 'google' : undefined);
  if (oauthProvider !== undefined && (mechanism !== 'oauthbearer' || oauthProvider !== 'google')) {
    throw new Error(
      `kafkaOauthProvider (${oauthProvider}) is google, and only with kafkaSaslMechanism oauthbearer`,
    );
  }
  const passwordBased = mechanism !== undefined && mechanism !== 'oauthbearer';
  const clientCert = config.getSecret('kafkaSslClientCert');
  const clientKey = config.getSecret('kafkaSslClientKey');
  if ((clientCert === undefined) !== (clientKey === undefined)) {
    throw new Error('kafkaSslClientCert and kafkaSslClientKey go together (mTLS): set both or neither');
  }
  const dataset = config.get('dataset') ?? 'kafka_drain';
  const metadataColumns = {
    headers: config.getBoolean('headersColumn') ?? false,
    keyText: config.getBoolean('keyTextColumn') ?? false,
  };
  const routesFile = config.get('routesFile');
  const valueFormat = (config.get('valueFormat') ?? 'json') as ValueFormatName;
  if (!valueFormatNames.includes(valueFormat))
    throw new Error(`valueFormat must be one of ${valueFormatNames.join(', ')}, not ${valueFormat}`);
  const layout = layoutOf(config);
  const registryUrl = config.get('schemaRegistryUrl');
  const registryUsername = config.getSecret('schemaRegistryUsername');
  const registryPassword = config.getSecret('schemaRegistryPassword');
  if ((registryUsername === undefined) !== (registryPassword === undefined))
    throw new Error(
      'schemaRegistryUsername and schemaRegistryPassword go together (basic auth): set both or neither',
    );
  const unknownFields = unknownFieldsOf(config);
  const fieldNames = fieldNamesOf(config);
  const routes: InfraRoute[] =
    routesFile === undefined
      ? [
          {
            dataset,
            table: config.get('table') ?? 'events',
            // JSON values carry no schema: the table's is required. Others may take the registry's.
            schemaFile:
              valueFormat === 'json' ? config.require('schemaFile') : (config.get('schemaFile') ?? null),
            metadataColumns,
            layout,
            unknownFields,
          },
        ]
      : routesOf(
          routesFile,
          { dataset, metadata: metadataColumns, layout, unknownFields, fieldNames },
          writeMode,
        );
  return {
    project: gcp.require('project'),
    region: gcp.get('region') ?? config.get('region') ?? 'europe-west1',
    pipelineId: config.require('pipelineId'),
    kafkaBrokers: config.require('kafkaBrokers'),
    kafkaTopics: routesFile === undefined ? config.require('kafkaTopics') : (config.get('kafkaTopics') ?? ''),
    kafkaSaslMechanism: mechanism,
    kafkaOauthProvider: oauthProvider,
    managedKafkaProject:
      oauthProvider === 'google' ? (config.get('managedKafkaProject') ?? gcp.require('project')) : undefined,
    vpc: vpcOf(config),
    kafkaSaslUsername: passwordBased ? config.requireSecret('kafkaSaslUsername') : undefined,
    kafkaSaslPassword: passwordBased ? config.requireSecret('kafkaSaslPassword') : undefined,
    kafkaSsl: config.getBoolean('kafkaSsl') ?? true,
    kafkaSslCa: config.getSecret('kafkaSslCa'),
    kafkaSslClientCert: clientCert,
    kafkaSslClientKey: clientKey,
    routes,
    routesFile:
      routesFile === undefined
        ? undefined
        : { name: basename(routesFile), dir: dirname(resolve(routesFile)) },
    dataset,
    writeMode: writeMode as InfraConfig['writeMode'],
    cdc: writeMode === 'cdc' ? cdcOf(config) : undefined,
    unknownFields,
    evolveColumns: evolveColumnsOf(config),
    fieldNames,
    loadJobsPerTablePerDay:
      writeMode === 'load'
        ? loadJobsOf(config, periodSeconds, config.getNumber('taskCount') ?? 1)
        : undefined,
    metadataColumns,
    values: {
      format: valueFormat,
      subject: config.get('valueSubject'),
      registryUrl,
      registryUsername,
      registryPassword,
    },
    schedule,
    schedulePeriodSeconds: periodSeconds,
    freshness: freshnessOf(config, follow ? null : periodSeconds, budgetSeconds),
    timeZone: config.get('timeZone') ?? 'Etc/UTC',
    taskCount: config.getNumber('taskCount') ?? 1,
    dispatch: dispatchOf(
      config,
      writeMode === 'load' ? { perDay: loadJobsOf(config, periodSeconds, 1), periodSeconds } : null,
    ),
    budgetSeconds,
    leaseTtlSeconds: config.getNumber('leaseTtlSeconds') ?? Math.min(60, budgetSeconds),
    idleAlertSeconds: config.getNumber('idleAlertSeconds') ?? 300,
    image: config.get('image'),
    maxRetries: config.getNumber('maxRetries') ?? 3,
    statusInvokers: config.getObject<string[]>('statusInvokers') ?? [],
    operators: config.getObject<string[]>('operators') ?? [],
    notificationChannels: config.getObject<string[]>('notificationChannels') ?? [],
    passed: passedOf(config, { url: registryUrl, basicAuth: registryUsername !== undefined }),
    firestoreDatabase: firestoreDatabaseOf(config),
    existingDatasets: config.getObject<string[]>('existingDatasets') ?? [],
  };
}

/**
 * The passed settings that are set, each checked by the drain's own parser at preview: a wrong value stops
 * `pulumi preview` naming the key, not the first run.
 */
function passedOf(
  config: ConfigReader,
  registry: { url: string | undefined; basicAuth: boolean },
): Record<string, string> {
  const passed: Record<string, string> = {};
  for (const { variable, key } of passedSettings) {
    const value = config.get(key);
    if (value !== undefined) passed[variable] = value;
  }
  const least = {
    ...leastSettings,
    // What a passed setting goes with (SCHEMA_REGISTRY_AUTH: a registry).
    ...(registry.url === undefined ? {} : { SCHEMA_REGISTRY_URL: registry.url }),
    // The key and secret are Secret Manager's; that they are set is what the parser checks here.
    ...(registry.basicAuth ? { SCHEMA_REGISTRY_USERNAME: 'set', SCHEMA_REGISTRY_PASSWORD: 'set' } : {}),
  };
  try {
    parseConfig({ ...least, ...passed });
  } catch (error) {
    const entry = passedSettings.find((p) => p.variable === (error as { variable?: string }).variable);
    if (entry !== undefined) throw new Error(`${entry.key}: ${(error as Error).message}`);
    throw error;
  }
  return passed;
}

/** dispatchMinTasks and dispatchMaxTasks, checked by the drain's own parser (load: a load for each task). */
function dispatchOf(
  config: ConfigReader,
  load: { perDay: number; periodSeconds: number } | null,
): InfraConfig['dispatch'] {
  const keys = { DISPATCH_MIN_TASKS: 'dispatchMinTasks', DISPATCH_MAX_TASKS: 'dispatchMaxTasks' } as const;
  const given = Object.fromEntries(
    Object.entries(keys).flatMap(([variable, key]) => {
      const value = config.get(key);
      return value === undefined ? [] : [[variable, value]];
    }),
  );
  if (given.DISPATCH_MAX_TASKS === undefined) {
    if (given.DISPATCH_MIN_TASKS !== undefined)
      throw new Error('dispatchMinTasks: is set without dispatchMaxTasks, which turns the dispatcher on');
    return undefined;
  }
  try {
    const parsed = parseDispatch(reader(given), load);
    return { minTasks: parsed.minTasks, maxTasks: parsed.maxTasks! };
  } catch (error) {
    const variable = (error as { variable?: keyof typeof keys }).variable;
    if (variable !== undefined && keys[variable] !== undefined)
      throw new Error(`${keys[variable]}: ${(error as Error).message}`);
    throw error;
  }
}

function firestoreDatabaseOf(config: ConfigReader): InfraConfig['firestoreDatabase'] {
  const value = config.get('firestoreDatabase') ?? 'create';
  if (value !== 'create' && value !== 'existing')
    throw new Error(`firestoreDatabase must be create or existing, not ${value}`);
  return value;
}

/** The schedule's period where it has one; else the day (only the alerts on missing runs use it then). */
function safePeriod(schedule: string): number {
  try {
    return schedulePeriodSeconds(schedule);
  } catch {
    return 86_400;
  }
}

/**
 * How long executions that follow the log overlap (drainUntil budget): the next starts this long before the
 * one before reaches its budget, time for a Cloud Run task to start and look at its partitions.
 */
export const handoverSeconds = 30;

/**
 * The freshness SLO's target and goal. The default target: a record produced just after a run read its
 * end waits for the next run (a period), which may take its whole budget, plus a minute for the task to
 * start and lease; a run that ends with older records waiting has fallen behind by more than a run.
 */
function freshnessOf(config: ConfigReader, periodSeconds: number | null, budgetSeconds: number) {
  // Following the log (periodSeconds null): a minute, which a run that keeps up meets whatever its period.
  const targetSeconds =
    config.getNumber('freshnessTargetSeconds') ??
    (periodSeconds === null ? 60 : periodSeconds + budgetSeconds + 60);
  const goal = config.getNumber('freshnessGoal') ?? 0.99;
  if (!(targetSeconds >= 1) || !Number.isInteger(targetSeconds))
    throw new Error(
      `freshnessTargetSeconds must be a whole number of seconds, at least 1, not ${targetSeconds}`,
    );
  if (!(goal > 0 && goal < 1))
    throw new Error(`freshnessGoal must be above 0 and below 1 (0.99), not ${goal}`);
  return { targetSeconds, goal };
}

function vpcOf(config: ConfigReader): InfraConfig['vpc'] {
  const network = config.get('network');
  const subnetwork = config.get('subnetwork');
  const tags = config.getObject<string[]>('networkTags') ?? [];
  const egress = config.get('vpcEgress') ?? 'private-ranges-only';
  if (egress !== 'private-ranges-only' && egress !== 'all-traffic') {
    throw new Error(`vpcEgress must be private-ranges-only or all-traffic, not ${egress}`);
  }
  if (network === undefined && subnetwork === undefined) {
    if (tags.length > 0 || config.get('vpcEgress') !== undefined) {
      throw new Error('networkTags and vpcEgress need a network or subnetwork (Direct VPC egress)');
    }
    return undefined;
  }
  return {
    network,
    subnetwork,
    tags,
    egress: egress === 'all-traffic' ? 'ALL_TRAFFIC' : 'PRIVATE_RANGES_ONLY',
  };
}

/** The routes of a routes file, as the drain reads it; its paths must stay inside its folder (the image). */
function routesOf(
  file: string,
  defaults: Parameters<typeof parseRoutes>[2],
  writeMode: string,
): InfraRoute[] {
  const routes = parseRoutes(readFileSync(file, 'utf8'), file, defaults);
  // One topic into several tables (`when`): the modes that can keep a range's rows in several tables.
  if (routes.some((r) => r.when !== null) && !whenWriteModes.includes(writeMode))
    throw new Error(`routesFile: ${whenRefusal(writeMode)}`);
  const folder = dirname(resolve(file));
  for (const route of routes) {
    for (const path of [route.schemaFile, route.rulesModule, route.transformModule, route.valueSchemaFile]) {
      if (path !== null && relative(folder, path).startsWith('..')) {
        throw new Error(
          `routesFile: ${tableName(route)} names ${path}, outside ${folder}; the image holds only that folder`,
        );
      }
    }
  }
  return routes.map((r) => ({
    dataset: r.dataset,
    table: r.table,
    schemaFile: r.schemaFile,
    metadataColumns: r.metadata,
    layout: r.layout,
    unknownFields: r.unknownFields,
  }));
}

/** fieldNames: strict (default) or sanitize. */
function fieldNamesOf(config: ConfigReader): InfraConfig['fieldNames'] {
  const value = config.get('fieldNames') ?? 'strict';
  if (value !== 'strict' && value !== 'sanitize')
    throw new Error(`fieldNames must be strict or sanitize, not ${value}`);
  return value;
}

/** unknownFields: reject (default), ignore, json or evolve. */
function unknownFieldsOf(config: ConfigReader): InfraConfig['unknownFields'] {
  const value = config.get('unknownFields') ?? 'reject';
  if (value !== 'reject' && value !== 'ignore' && value !== 'json' && value !== 'evolve')
    throw new Error(`unknownFields must be reject, ignore, json or evolve, not ${value}`);
  return value;
}

/** unknownFields evolve: evolveColumnsPerRun (1 to 1,000, default 10), evolveColumnsMax (1 to 10,000, default 300). */
function evolveColumnsOf(config: ConfigReader): InfraConfig['evolveColumns'] {
  const perRun = config.getNumber('evolveColumnsPerRun') ?? 10;
  const max = config.getNumber('evolveColumnsMax') ?? 300;
  if (!Number.isInteger(perRun) || perRun < 1 || perRun > 1000)
    throw new Error(`evolveColumnsPerRun must be 1 to 1000, not ${perRun}`);
  if (!Number.isInteger(max) || max < 1 || max > 10_000)
    throw new Error(`evolveColumnsMax must be 1 to 10000, not ${max}`);
  return { perRun, max };
}

/** load mode: loadJobsPerTablePerDay, refused here as the drain would refuse it (no load for a run). */
function loadJobsOf(config: ConfigReader, periodSeconds: number, taskCount: number): number {
  const perDay = config.getNumber('loadJobsPerTablePerDay') ?? 1000;
  if (!Number.isInteger(perDay) || perDay < 1 || perDay > bigQueryLoadsPerTablePerDay)
    throw new Error(`loadJobsPerTablePerDay must be 1 to ${bigQueryLoadsPerTablePerDay}, not ${perDay}`);
  const plan = loadPlan(perDay, periodSeconds, taskCount);
  if (typeof plan === 'string')
    throw new Error(`loadJobsPerTablePerDay: ${plan} (schedule ${config.get('schedule') ?? '*/5 * * * *'})`);
  return perDay;
}

/** cdc mode's settings: changeFormat, primaryKey, maxStaleness, sourceColumns. */
function cdcOf(config: ConfigReader): NonNullable<InfraConfig['cdc']> {
  const changeFormat = config.require('changeFormat');
  if (changeFormat !== 'debezium' && changeFormat !== 'upsert')
    throw new Error(`changeFormat must be debezium or upsert, not ${changeFormat}`);
  const primaryKey = config.requireObject<string[]>('primaryKey');
  if (!Array.isArray(primaryKey) || primaryKey.length === 0 || primaryKey.length > 16)
    throw new Error('primaryKey must list 1 to 16 columns (the table is made with it)');
  const maxStaleness = config.get('maxStaleness') ?? '15m';
  stalenessOf(maxStaleness); // refused here as the drain would refuse it
  return {
    changeFormat,
    primaryKey,
    maxStaleness,
    sourceColumns: config.getBoolean('cdcSourceColumns') ?? false,
  };
}

/** partitionField, partitionType, partitionExpirationDays, requirePartitionFilter, clustering. */
function layoutOf(config: ConfigReader): TableLayout {
  const layout: TableLayout = {
    partitionField: config.get('partitionField') ?? defaultTableLayout.partitionField,
    partitionType: (config.get('partitionType') ?? 'DAY').toUpperCase() as TableLayout['partitionType'],
    partitionExpirationDays: config.getNumber('partitionExpirationDays') ?? null,
    requirePartitionFilter: config.getBoolean('requirePartitionFilter') ?? false,
    clustering: config.getObject<string[]>('clustering') ?? defaultTableLayout.clustering,
  };
  const problem = tableLayoutProblem(layout);
  if (problem !== undefined) throw new Error(`table layout: ${problem}`);
  return layout;
}
