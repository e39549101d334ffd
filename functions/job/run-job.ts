import { randomBytes } from 'node:crypto';
import kafkajs from 'kafkajs';
import { createFirestoreCheckpoints } from '../checkpoints/firestore-checkpoints.js';
import type { DrainConfig } from '../config/config.js';
import { groupRoutes } from '../config/route-groups.js';
import { tableName } from '../config/routes.js';
import { runDrain } from '../drain/run.js';
import type { DrainContext } from '../drain/run-state.js';
import { mergeRunSummaries } from '../drain/run-summary.js';
import { createRecordNames } from '../formats/record-names.js';
import { createGoogleClients, type GoogleClients } from '../google/clients.js';
import { type CallTracker, createCallTracker, trackedPort } from '../kernel/calls.js';
import { ConfigError } from '../kernel/errors.js';
import { LatencySketch } from '../kernel/freshness.js';
import type { Logger } from '../kernel/logger.js';
import type { Checkpoints, Sink, Source } from '../kernel/ports.js';
import type { RunSummary } from '../kernel/summary.js';
import { sleep } from '../kernel/timers.js';
import { writeModeNamed } from '../modes/registry.js';
import { createRouteSinks, groupRefused } from '../modes/route-sinks.js';
import { addColumns, recordIncompatibleSchema, withEvolvedColumns } from '../modes/target-table.js';
import { createColumnEvolver } from '../records/evolve-columns.js';
import { routeColumns } from '../records/field-names.js';
import { createRecordRouter } from '../records/record-router.js';
import { checkBrokerCertificate, kafkaClientOptions } from '../sources/kafka-client.js';
import { callDeadlinesMs, closeWithin, cutOffLateCalls } from './deadline.js';
import { routeTopics } from './routing.js';
import {
  checkRouteFiles,
  createRegistry,
  type DrainGroup,
  drainOptionsFor,
  groupName,
  type RouteTarget,
  routeDrainPorts,
  routeValues,
  rulesFor,
  transformFor,
} from './wiring.js';

export interface JobIo {
  readonly logger: Logger;
  readonly signal: AbortSignal;
  readonly onProgress?: DrainContext['onProgress'];
  /** Replaces the BigQuery sink (the benchmark's null sink). */
  readonly sink?: Sink;
  /** Wraps the checkpoints port (the benchmark counts Firestore reads and writes through it). */
  readonly observeCheckpoints?: (checkpoints: Checkpoints) => Checkpoints;
  /** Wraps the source port (the benchmark times the first record fetched through it). */
  readonly observeSource?: (source: Source) => Source;
  /** Every call to a service goes through it (deadlines; what is pending when a run must end). */
  readonly calls?: CallTracker;
  /** When the run began (the budget counts from there); now if not given. */
  readonly startedAt?: number;
}

/**
 * Wires the real adapters from a parsed config and runs one bounded drain for this task: one drain per
 * route (per table), side by side, so that each table has its own flushes, staging and exactly-once
 * state, and a table whose writes fail stalls only the partitions routed to it.
 */
export async function runJob(config: DrainConfig, io: JobIo): Promise<RunSummary> {
  const startedAt = io.startedAt ?? Date.now();
  const calls = io.calls ?? createCallTracker();
  const runId = `${config.execution}-t${config.taskIndex}-${randomBytes(4).toString('hex')}`;
  const logger = io.logger.child({ pipeline: config.pipelineId, runId });
  for (const route of config.routes) checkRouteFiles(route); // a bad schema file: exit 2 at once
  const clients = createGoogleClients(config, () => calls.heard('bigquery'));
  const kafkaOptions = kafkaClientOptions(config, `kafka-bigquery-drain-${config.pipelineId}`);
  const kafka = new kafkajs.Kafka(kafkaOptions);
  const targets: RouteTarget[] = [];
  try {
    await checkBrokerCertificate(kafkaOptions);
    targets.push(...(await routeTargets(config, io, { kafka, clients, calls, runId, logger })));
    await failOnBadSchema(targets, io.signal);
    const { beforeRun } = writeModeNamed(config.bigquery.writeMode);
    if (beforeRun !== undefined) {
      const topics = targets.flatMap((t) => t.routed.topics);
      await calls.track('kafka', 'check the topics for the write mode', () =>
        beforeRun({ config, clients, kafka, topics, logger }),
      );
    }

    const checkpoints = (io.observeCheckpoints ?? ((c) => c))(
      trackedPort(calls, 'firestore', createFirestoreCheckpoints(clients.firestore, config.pipelineId), {
        deadlineMs: callDeadlinesMs.firestore,
      }),
    );
    const groups = drainGroups(targets, config, logger);
    const several = config.routes.length > 1;
    // Several drains: each keeps its summary to itself; the run's, merged, is recorded once below.
    const routeCheckpoints: Checkpoints = several
      ? { ...bound(checkpoints), recordRun: async () => {} }
      : checkpoints;
    const summaries = await Promise.all(
      groups.map(async (group) => {
        const ports = routeDrainPorts(config, group, {
          clients,
          kafka,
          calls,
          checkpoints: routeCheckpoints,
          ...(io.sink === undefined ? {} : { sink: io.sink }),
          ...(io.observeSource === undefined ? {} : { observeSource: io.observeSource }),
        });
        const route = { runId: group.runId, topics: group.topics, routeCount: groups.length };
        const latency = new LatencySketch();
        const summary = await runDrain(ports, drainOptionsFor(config, route, Date.now() - startedAt), {
          logger: group.logger,
          now: Date.now,
          signal: io.signal,
          onProgress: io.onProgress,
          latency,
        });
        return { table: groupName(group), summary, latency };
      }),
    );
    const only = summaries[0]?.summary;
    // The run's duration counts from its start, as its budget does.
    const summary =
      !several && only !== undefined
        ? { ...only, durationMs: Date.now() - startedAt }
        : mergeRunSummaries(summaries, runHead(config, runId, startedAt));
    if (several || only === undefined) {
      // A run with no topic to drain yet (no route's regex matches anything) is recorded as any run.
      await checkpoints
        .recordRun(summary)
        .catch((error: unknown) => logger.warn('recording the run summary failed', { error }));
    }
    await cutOffLateCalls(summary, calls);
    return summary;
  } finally {
    await Promise.all(
      targets.map((t) => closeWithin('closing the BigQuery writers', () => t.sinks?.close(), logger)),
    );
    await closeWithin('closing the Google clients', () => clients.close(), logger);
  }
}

/** The routes that match topics of the broker, each with its schema, rules and sinks (being made). */
async function routeTargets(
  config: DrainConfig,
  io: JobIo,
  run: { kafka: kafkajs.Kafka; clients: GoogleClients; calls: CallTracker; runId: string; logger: Logger },
): Promise<RouteTarget[]> {
  const { calls, logger } = run;
  const routed = await calls.track('kafka', 'list topics', () => routeTopics(config, run.kafka), {
    deadlineMs: callDeadlinesMs.kafka,
  });
  const several = config.routes.length > 1;
  const targets: RouteTarget[] = [];
  const registry = config.schemaRegistry === null ? null : createRegistry(config.schemaRegistry);
  for (const [index, r] of routed.entries()) {
    const table = tableName(r.route);
    if (r.topics.length === 0) {
      logger.notice('no topic of the broker matches this route yet', { table });
      continue;
    }
    // Each route's drain leases as an owner of its own (its staging tables are its own too).
    // One task all the same: the dispatcher counts `-r{n}` owners as their task (dispatch/observe.ts).
    const runId = several ? `${run.runId}-r${index}` : run.runId;
    const routeLogger = several ? logger.child({ table }) : logger;
    const values = await routeValues(
      r.route,
      r.topics,
      registry,
      run.clients.bigquery,
      routeLogger,
      (id, reason) => recordIncompatibleSchema(run.clients, config.pipelineId, runId, table, id, reason),
      config.bigquery.cdc?.changeFormat === 'debezium' ? 'debezium' : undefined,
    );
    // With UNKNOWN_FIELDS=json the table has a JSON column `_extra` for the fields it lacks; with `evolve`
    // the columns earlier runs added.
    const columns = routeColumns(values.columns, r.route);
    const evolving = r.route.unknownFields === 'evolve';
    const userSchema = evolving ? await withEvolvedColumns(run.clients, r.route, columns) : columns;
    const sinksOptions = {
      config,
      route: r.route,
      clients: run.clients,
      userSchema,
      logger: routeLogger,
      runId,
      calls,
    };
    targets.push({
      ...(evolving
        ? {
            evolve: createColumnEvolver({
              columns: userSchema,
              perRun: config.evolveColumns.perRun,
              maxColumns: config.evolveColumns.max,
              apply: (fields) => addColumns(sinksOptions, fields),
            }),
          }
        : {}),
      routed: r,
      runId,
      userSchema,
      rules: await rulesFor(r.route, config),
      ...(await transformFor(r.route, config).then((t) => (t === undefined ? {} : { transform: t }))),
      ...(values.format === undefined ? {} : { format: values.format }),
      sinks: io.sink === undefined ? createRouteSinks(sinksOptions) : undefined,
      logger: routeLogger,
    });
  }
  return targets;
}

/**
 * A schema file a table cannot follow stops the run before it leases anything (exit 2). Any other failure
 * to make the sinks (BigQuery unreachable) is left to the writes, whose partitions stall. (Waited for at
 * most 10 s: a BigQuery that does not answer must not hold the run before it looks.)
 */
async function failOnBadSchema(targets: readonly RouteTarget[], signal: AbortSignal): Promise<void> {
  const waited = new AbortController();
  const firstErrors = Promise.all(targets.map((t) => t.sinks?.firstError)).then((errors) =>
    errors.find((e) => e instanceof ConfigError),
  );
  const firstError = await Promise.race([
    firstErrors,
    sleep(10_000, AbortSignal.any([signal, waited.signal])),
  ]);
  waited.abort();
  if (firstError instanceof ConfigError) throw firstError;
}

/**
 * One drain per group of routes: a route alone, or routes sharing a topic by `when`, whose drain reads
 * the topic once and routes each record (its owner id and logger the group's first route's).
 */
function drainGroups(targets: readonly RouteTarget[], config: DrainConfig, logger: Logger): DrainGroup[] {
  const registry = config.schemaRegistry === null ? null : createRegistry(config.schemaRegistry);
  return groupRoutes(targets.map((t) => t.routed)).map((group) => {
    const members = group.members.map((routed) => targets.find((t) => t.routed === routed)!);
    const first = members[0]!;
    if (members.length === 1)
      return { members, topics: group.topics, runId: first.runId, logger: first.logger };
    if (writeModeNamed(config.bigquery.writeMode).fanOut === undefined)
      throw groupRefused(config.bigquery.writeMode);
    const groupLogger = logger.child({ table: groupName({ members }) });
    const names = registry === null ? undefined : createRecordNames(registry, groupLogger);
    return {
      members,
      topics: group.topics,
      runId: first.runId,
      logger: groupLogger,
      router: createRecordRouter(
        members.map((m) => m.routed.route),
        names,
      ),
    };
  });
}

function runHead(config: DrainConfig, runId: string, startedAt: number) {
  return {
    pipeline: config.pipelineId,
    runId,
    execution: config.execution,
    taskIndex: config.taskIndex,
    taskCount: config.taskCount,
    durationMs: Date.now() - startedAt,
  };
}

/** The checkpoints port with its methods bound, so that one can be replaced in a copy. */
function bound(checkpoints: Checkpoints): Checkpoints {
  return {
    peek: (p) => checkpoints.peek(p),
    acquire: (p, o, t) => checkpoints.acquire(p, o, t),
    renew: (l, t) => checkpoints.renew(l, t),
    commit: (c, t) => checkpoints.commit(c, t),
    recordIntents: (i, t) => checkpoints.recordIntents(i, t),
    release: (l, s) => checkpoints.release(l, s),
    recordRun: (s) => checkpoints.recordRun(s),
  };
}
