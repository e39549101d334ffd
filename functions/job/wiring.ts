/**
 * The job's wiring: from a parsed config to the real adapters a route's drain runs on, and the drain's
 * options. The job, the CLI and the benchmark build what they need from here.
 */
import type kafkajs from 'kafkajs';
import { createPubSubAlerts } from '../alerts/pubsub-alerts.js';
import type { DrainConfig } from '../config/config.js';
import { groupTables } from '../config/route-groups.js';
import { type Route, type RoutedTopics, tableName } from '../config/routes.js';
import { createPubSubDeadLetters } from '../dead-letters/pubsub-dead-letters.js';
import { thresholdsOf } from '../drain/episodes.js';
import type { DrainOptions, DrainPorts } from '../drain/run-state.js';
import type { ValueFormat } from '../formats/value-format.js';
import type { GoogleClients } from '../google/clients.js';
import { type CallTracker, trackedPort, trackedSource } from '../kernel/calls.js';
import { ConfigError } from '../kernel/errors.js';
import type { Logger } from '../kernel/logger.js';
import type { Checkpoints, Sink, Source } from '../kernel/ports.js';
import { defaultRetryPolicy } from '../kernel/retry.js';
import { writeModeNamed } from '../modes/registry.js';
import { groupWriter, type RouteSinks, type WriterOptions } from '../modes/route-sinks.js';
import { createInsertAllWriter } from '../modes/sink-writer.js';
import type { ColumnEvolver } from '../records/evolve-columns.js';
import type { RecordRouter } from '../records/record-router.js';
import { loadRules, type Rules } from '../records/rules.js';
import { loadTransform, type Transform } from '../records/transform.js';
import type { SchemaField } from '../schema/table-schema.js';
import { createKafkaSource, fetchBytesFor } from '../sources/kafka-source.js';
import { callDeadlinesMs, settleMs } from './deadline.js';

export { checkRouteFiles, createRegistry, namedTopics, routeValues } from '../formats/route-values.js';

/** Loads a route's RULES_MODULE, naming the setting if it cannot. */
export function rulesFor(route: Route, config: DrainConfig): Promise<Rules | undefined> {
  return routeModule(route, config, 'rulesModule', 'RULES_MODULE', loadRules);
}

/** Loads a route's TRANSFORM_MODULE, naming the setting if it cannot (a mode that applies none refuses it). */
export function transformFor(route: Route, config: DrainConfig): Promise<Transform | undefined> {
  if (route.transformModule !== null && !writeModeNamed(config.bigquery.writeMode).transforms) {
    throw new ConfigError(
      config.routesFile === null ? 'TRANSFORM_MODULE' : 'ROUTES_FILE',
      `BQ_WRITE_MODE=${config.bigquery.writeMode} applies no transform (changes are written as they come): remove it or use another mode`,
    );
  }
  return routeModule(route, config, 'transformModule', 'TRANSFORM_MODULE', loadTransform);
}

async function routeModule<T>(
  route: Route,
  config: DrainConfig,
  key: 'rulesModule' | 'transformModule',
  variable: string,
  load: (specifier: string) => Promise<T>,
): Promise<T | undefined> {
  const specifier = route[key];
  if (specifier === null) return undefined;
  try {
    return await load(specifier);
  } catch (error) {
    const named = config.routesFile === null ? variable : 'ROUTES_FILE';
    const message = error instanceof Error ? error.message : String(error);
    throw new ConfigError(
      named,
      named === 'ROUTES_FILE' ? `${key} of ${tableName(route)}: ${message}` : message,
    );
  }
}

/** A route's drain settings, from the config alone (pure). */
export function drainOptionsFor(
  config: DrainConfig,
  route: { readonly runId: string; readonly topics: readonly string[]; readonly routeCount: number },
  /** The budget counts from the start of the run, not of this drain (making the sinks came first). */
  elapsedMs: number,
): DrainOptions {
  const mode = writeModeNamed(config.bigquery.writeMode);
  return {
    pipelineId: config.pipelineId,
    runId: route.runId,
    execution: config.execution,
    taskIndex: config.taskIndex,
    taskCount: config.taskCount,
    topics: route.topics,
    budgetMs: Math.max(0, config.budgetSeconds * 1000 - elapsedMs),
    leaseTtlMs: config.leaseTtlSeconds * 1000,
    batchMaxRecords: config.batchMaxRecords,
    batchMaxBytes: config.batchMaxBytes,
    retentionGapPolicy: config.retentionGapPolicy,
    startPosition: config.startPosition,
    settleMs,
    partitionConcurrency: mode.partitionConcurrency,
    // Four batches' bytes (a mode's own count, else): as much as one flush takes (flushMaxBytes); reading
    // further ahead only holds fetched records in memory (eight: peak RSS 273 MB against 230 on 80,000
    // wide records, the same CPU and drain time). The routes' drains share the process's memory.
    inFlightMaxBytes:
      Math.max(2, Math.floor((mode.batchesInFlight ?? 4) / route.routeCount)) * config.batchMaxBytes,
    ...(config.follow === null ? {} : { follow: config.follow }),
    firestoreConcurrency: 16,
    // Longer than a task's start-up may take (the table checks wait at most 10 s), a small part of a run.
    shareGraceMs: Math.min(15_000, (config.budgetSeconds * 1000) / 4),
    alertThresholds: thresholdsOf(config),
  };
}

/** A route ready to drain: its topics, schema, rules and sinks. */
export interface RouteTarget {
  readonly routed: RoutedTopics;
  readonly runId: string;
  readonly userSchema: readonly SchemaField[];
  readonly rules: Rules | undefined;
  readonly transform?: Transform;
  /** UNKNOWN_FIELDS=evolve: adds the columns the route's records need. */
  readonly evolve?: ColumnEvolver;
  /** How values become rows when they are not JSON text. */
  readonly format?: ValueFormat;
  /** Undefined when the caller replaces the BigQuery sink (the benchmark's null sink). */
  readonly sinks: RouteSinks | undefined;
  readonly logger: Logger;
}

/** What one drain writes: one route's table, or a group's (routes sharing a topic by `when`). */
export interface DrainGroup {
  readonly members: readonly RouteTarget[];
  /** Which member takes each record (a group of several). */
  readonly router?: RecordRouter;
  readonly topics: readonly string[];
  readonly runId: string;
  readonly logger: Logger;
}

/** `dataset.table` of a group's tables, as summaries and logs name its drain. */
export function groupName(group: Pick<DrainGroup, 'members'>): string {
  return groupTables(group.members.map((m) => m.routed));
}

/** The real adapters of one drain, every call tracked (deadlines; what is pending at the end). */
export function routeDrainPorts(
  config: DrainConfig,
  group: DrainGroup,
  shared: {
    readonly clients: GoogleClients;
    readonly kafka: kafkajs.Kafka;
    readonly calls: CallTracker;
    readonly checkpoints: Checkpoints;
    /** Replaces the BigQuery sink (the benchmark's null sink): written as insert-all. */
    readonly sink?: Sink;
    readonly observeSource?: (source: Source) => Source;
  },
): DrainPorts {
  const { clients, calls, checkpoints } = shared;
  const { logger, members, router } = group;
  // BigQuery writes have no deadline of their own (a MERGE may rightly take minutes): the run's end cuts
  // them, abandoned by design (their batches are read again by the next run).
  const tracked = <T extends object>(port: T): T =>
    trackedPort(calls, 'bigquery', port, { mayOutliveRun: true });
  const deadLetters = trackedPort(
    calls,
    'pubsub',
    createPubSubDeadLetters(clients.pubsub, {
      topic: config.deadLetterTopic,
      pipeline: config.pipelineId,
      execution: config.execution,
      retry: defaultRetryPolicy,
      logger,
    }),
    { deadlineMs: callDeadlinesMs.pubsub },
  );
  const optionsOf = (target: RouteTarget): WriterOptions => ({
    checkpoints,
    deadLetters,
    records: {
      shape: {
        fields: target.userSchema,
        unknownFields: target.routed.route.unknownFields,
        fieldNames: target.routed.route.fieldNames,
        metadata: target.routed.route.metadata,
      },
      tombstones: config.tombstones,
      ...(target.rules === undefined ? {} : { rules: target.rules }),
      ...(target.transform === undefined ? {} : { transform: target.transform }),
      ...(target.format === undefined ? {} : { format: target.format }),
      ...(router === undefined ? {} : { refuse: router.refusal }),
      ...(target.evolve === undefined ? {} : { evolve: target.evolve }),
    },
    leaseTtlMs: config.leaseTtlSeconds * 1000,
    flushMaxBytes: config.batchMaxBytes * 4,
    cdc: config.bigquery.cdc,
    logger,
    now: Date.now,
  });
  const only = members[0]!;
  // The benchmark's null sink is written to as a plain sink: each batch on its own, as insert-all does.
  const writer =
    shared.sink !== undefined
      ? createInsertAllWriter({ ...optionsOf(only), sink: shared.sink })
      : router === undefined
        ? only.sinks!.writer(optionsOf(only), tracked)
        : groupWriter(
            config.bigquery.writeMode,
            members.map((m) => ({ sinks: m.sinks!, options: optionsOf(m) })),
            router,
            tracked,
          );
  const source = trackedSource(
    calls,
    createKafkaSource(shared.kafka, {
      groupPrefix: `kafka-bigquery-drain.${config.pipelineId}.t${config.taskIndex}`,
      logger,
      fetchBytesPerPartition: fetchBytesFor(config.batchMaxBytes),
    }),
    callDeadlinesMs.kafka,
  );
  return {
    source: (shared.observeSource ?? ((s) => s))(source),
    checkpoints,
    writer,
    ...(config.alertTopic === null
      ? {}
      : {
          alerts: trackedPort(calls, 'pubsub', createPubSubAlerts(clients.pubsub, config.alertTopic), {
            deadlineMs: callDeadlinesMs.alerts,
          }),
        }),
  };
}
