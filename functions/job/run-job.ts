import { randomBytes } from 'node:crypto';
import kafkajs from 'kafkajs';
import { createPubSubAlerts } from '../alerts/pubsub-alerts.js';
import { createFirestoreCheckpoints } from '../checkpoints/firestore-checkpoints.js';
import { createPubSubDeadLetters } from '../dead-letters/pubsub-dead-letters.js';
import { type CallTracker, createCallTracker, trackedPort, trackedSource } from '../drain/calls.js';
import type { DrainConfig } from '../drain/config.js';
import { ConfigError } from '../drain/errors.js';
import type { Logger } from '../drain/logger.js';
import { onceUntilFailure } from '../drain/once.js';
import { defaultRetryPolicy, sleep } from '../drain/retry.js';
import { type Route, type RoutedTopics, tableName } from '../drain/routes.js';
import { runDrain } from '../drain/run.js';
import type { DrainContext } from '../drain/run-state.js';
import { mergeRunSummaries } from '../drain/run-summary.js';
import type { Checkpoints, ErrorTable, RunSummary, Sink, Source, StreamSink } from '../drain/types.js';
import { loadRules, type Rules } from '../records/rules.js';
import { createInsertAllSink, ensureTargetTable, insertAllLimits } from '../sinks/bigquery-sink.js';
import { createMergeErrorTable } from '../sinks/error-table.js';
import { createMergeSink } from '../sinks/merge-sink.js';
import { evolveTable, type SchemaEvolution } from '../sinks/schema-evolution.js';
import { createStorageWriteSink } from '../sinks/storage-write-sink.js';
import { readUserSchema, type SchemaField, targetTableSchema } from '../sinks/table-schema.js';
import { checkBrokerCertificate, createKafkaSource, kafkaClientOptions } from '../sources/kafka-source.js';
import { createWriter, type WriterPorts } from '../writers/create-writer.js';
import { createGoogleClients, type GoogleClients } from './clients.js';
import { routeTopics } from './routing.js';

/** How long a batch in flight may settle after SIGTERM or the budget; Cloud Run kills 10 s after SIGTERM. */
export const settleMs = 6_000;
/** After the settle time (or, for calls a run left behind, from its end), pending calls fail this much later. */
export const cutoffAfterSettleMs = 1_500;

export interface JobIo {
  readonly logger: Logger;
  readonly signal: AbortSignal;
  readonly fault?: DrainContext['fault'];
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

/** Deadlines of single calls, by service: a service that does not answer is an error, never a hang. */
export const callDeadlinesMs = {
  firestore: 20_000,
  kafka: 30_000,
  pubsub: 30_000,
  alerts: 15_000,
  /** Closing clients at the end of a run. */
  close: 5_000,
} as const;

/** Loads a route's RULES_MODULE, naming the setting if it cannot. */
export async function rulesFor(route: Route, config: DrainConfig): Promise<Rules | undefined> {
  if (route.rulesModule === null) return undefined;
  try {
    return await loadRules(route.rulesModule);
  } catch (error) {
    const variable = config.routesFile === null ? 'RULES_MODULE' : 'ROUTES_FILE';
    const message = error instanceof Error ? error.message : String(error);
    throw new ConfigError(
      variable,
      variable === 'ROUTES_FILE' ? `rulesModule of ${tableName(route)}: ${message}` : message,
    );
  }
}

/** A route ready to drain: its topics, schema, rules and sinks. */
interface Target {
  readonly routed: RoutedTopics;
  readonly runId: string;
  readonly userSchema: readonly SchemaField[];
  readonly rules: Rules | undefined;
  readonly made: ReturnType<typeof createSink> | undefined;
  readonly logger: Logger;
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
  for (const route of config.routes) readUserSchema(route.schemaFile); // a bad schema file: exit 2 at once
  const clients = createGoogleClients(config, () => calls.heard('bigquery'));
  const kafkaOptions = kafkaClientOptions(config, `kafka-bigquery-drain-${config.pipelineId}`);
  const kafka = new kafkajs.Kafka(kafkaOptions);
  const targets: Target[] = [];
  try {
    await checkBrokerCertificate(kafkaOptions);
    const routed = await calls.track('kafka', 'list topics', () => routeTopics(config, kafka), {
      deadlineMs: callDeadlinesMs.kafka,
    });
    const several = config.routes.length > 1;
    for (const [index, r] of routed.entries()) {
      const table = tableName(r.route);
      if (r.topics.length === 0) {
        logger.notice('no topic of the broker matches this route yet', { table });
        continue;
      }
      // Each route's drain leases as an owner of its own (its staging tables are its own too).
      const routeRunId = several ? `${runId}-r${index}` : runId;
      const routeLogger = several ? logger.child({ table }) : logger;
      const userSchema = readUserSchema(r.route.schemaFile);
      targets.push({
        routed: r,
        runId: routeRunId,
        userSchema,
        rules: await rulesFor(r.route, config),
        made:
          io.sink === undefined
            ? createSink(config, r.route, clients, userSchema, routeLogger, routeRunId, io.fault, calls)
            : undefined,
        logger: routeLogger,
      });
    }
    // A schema file a table cannot follow stops the run before it leases anything (exit 2). Any other
    // failure to make the sinks (BigQuery unreachable) is left to the writes, whose partitions stall.
    // (Waited for at most 10 s: a BigQuery that does not answer must not hold the run before it looks.)
    const waited = new AbortController();
    const firstErrors = Promise.all(targets.map((t) => t.made?.firstError)).then((errors) =>
      errors.find((e) => e instanceof ConfigError),
    );
    const firstError = await Promise.race([
      firstErrors,
      sleep(10_000, AbortSignal.any([io.signal, waited.signal])),
    ]);
    waited.abort();
    if (firstError instanceof ConfigError) throw firstError;

    const checkpoints = (io.observeCheckpoints ?? ((c) => c))(
      trackedPort(calls, 'firestore', createFirestoreCheckpoints(clients.firestore, config.pipelineId), {
        deadlineMs: callDeadlinesMs.firestore,
      }),
    );
    // Several drains: each keeps its summary to itself; the run's, merged, is recorded once below.
    const routeCheckpoints: Checkpoints = several
      ? { ...bound(checkpoints), recordRun: async () => {} }
      : checkpoints;
    const summaries = await Promise.all(
      targets.map(async (target) => ({
        table: tableName(target.routed.route),
        summary: await drainRoute(
          config,
          io,
          { clients, kafka, calls, startedAt },
          routeCheckpoints,
          target,
          targets.length,
        ),
      })),
    );
    let summary: RunSummary;
    if (!several) {
      const only = summaries[0]?.summary;
      // The run's duration counts from its start, as its budget does.
      summary =
        only === undefined
          ? await emptySummary(config, runId, startedAt, checkpoints)
          : { ...only, durationMs: Date.now() - startedAt };
    } else {
      summary = mergeRunSummaries(summaries, runHead(config, runId, startedAt));
      await checkpoints
        .recordRun(summary)
        .catch((error: unknown) => logger.warn('recording the run summary failed', { error }));
    }
    // A run that did not get through its work (budget, signal, error) and left calls behind (a write
    // abandoned at the hard stop, a publish) pending longer than the settle time gives them until a
    // cutoff 1.5 s from now to answer, before the clients close (closing would fail them and hide which
    // service did not answer). One from before the process was frozen (a zombie) answers once it runs
    // again; one to a service that is down is cut off, and the run fails naming it (main). A run that
    // caught up needed nothing more of anyone: what it left pending (a table still being prepared that
    // it never wrote to) does not matter.
    if (
      summary.stopReason !== 'caught_up' &&
      calls.pending().some((call) => Date.now() - call.startedAt >= settleMs)
    ) {
      calls.cutoff(Date.now() + cutoffAfterSettleMs);
      await calls.drained();
    }
    return summary;
  } finally {
    // Closing waits for nothing that does not answer: a service gone quiet must not hold the run's end.
    const close = async (what: string, closing: () => Promise<void> | undefined) => {
      const closed = new AbortController(); // its timer does not outlive a client that closed in time
      const timeout = sleep(callDeadlinesMs.close, closed.signal).then(() => {
        if (!closed.signal.aborted) {
          throw new Error(`${what} did not finish within ${callDeadlinesMs.close / 1000} s`);
        }
      });
      await Promise.race([closing(), timeout])
        .catch((error: unknown) => logger.warn(`${what} failed`, { error }))
        .finally(() => closed.abort());
    };
    await Promise.all(targets.map((t) => close('closing the BigQuery writers', () => t.made?.close())));
    await close('closing the Google clients', () => clients.close());
  }
}

/** One route's bounded drain. */
async function drainRoute(
  config: DrainConfig,
  io: JobIo,
  {
    clients,
    kafka,
    calls,
    startedAt,
  }: { clients: GoogleClients; kafka: kafkajs.Kafka; calls: CallTracker; startedAt: number },
  checkpoints: Checkpoints,
  target: Target,
  routeCount: number,
): Promise<RunSummary> {
  const { made, rules, logger, routed } = target;
  // BigQuery writes have no deadline of their own (a MERGE may rightly take minutes): the run's end cuts
  // them, abandoned by design (their batches are read again by the next run).
  const writes = { mayOutliveRun: true };
  const tracked = <T extends object>(port: T): T => trackedPort(calls, 'bigquery', port, writes);
  const checkpointsTtl = config.leaseTtlSeconds * 1000;
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
  const writer = createWriter(
    io.sink !== undefined
      ? { mode: 'insert-all', sink: io.sink }
      : writerPorts(config.bigquery.writeMode, made!, tracked),
    {
      checkpoints,
      deadLetters,
      records: {
        shape: {
          fields: target.userSchema,
          unknownFields: config.unknownFields,
          metadata: routed.route.metadata,
        },
        tombstones: config.tombstones,
        ...(rules === undefined ? {} : { rules }),
      },
      leaseTtlMs: checkpointsTtl,
      flushMaxBytes: config.batchMaxBytes * 4,
      logger,
      now: Date.now,
      ...(io.fault === undefined ? {} : { fault: io.fault }),
    },
  );
  return runDrain(
    {
      source: (io.observeSource ?? ((s) => s))(
        trackedSource(
          calls,
          createKafkaSource(kafka, {
            groupPrefix: `kafka-bigquery-drain.${config.pipelineId}.t${config.taskIndex}`,
            logger,
          }),
          callDeadlinesMs.kafka,
        ),
      ),
      checkpoints,
      writer,
      ...(config.alertTopic === null
        ? {}
        : {
            alerts: trackedPort(calls, 'pubsub', createPubSubAlerts(clients.pubsub, config.alertTopic), {
              deadlineMs: callDeadlinesMs.alerts,
            }),
          }),
    },
    {
      pipelineId: config.pipelineId,
      runId: target.runId,
      execution: config.execution,
      taskIndex: config.taskIndex,
      taskCount: config.taskCount,
      topics: routed.topics,
      // The budget counts from the start of the run, not of this drain (making the sinks came first).
      budgetMs: Math.max(0, config.budgetSeconds * 1000 - (Date.now() - startedAt)),
      leaseTtlMs: config.leaseTtlSeconds * 1000,
      batchMaxRecords: config.batchMaxRecords,
      batchMaxBytes: config.batchMaxBytes,
      retentionGapPolicy: config.retentionGapPolicy,
      startPosition: config.startPosition,
      settleMs,
      // Exactly-once modes write a flush for all partitions ready at once (one commit or MERGE), so
      // many may be in flight; insert-all writes each batch on its own, so few.
      partitionConcurrency: config.bigquery.writeMode === 'insert-all' ? 8 : 256,
      // The routes' drains share the process's memory.
      inFlightMaxBytes: Math.max(2, Math.floor(8 / routeCount)) * config.batchMaxBytes,
      firestoreConcurrency: 16,
      alertThresholds: {
        idleSeconds: config.idleAlertSeconds,
        stallSeconds: config.stallAlertSeconds,
        backlogRecords: config.backlogAlertRecords,
        backlogGrowingRuns: 3,
      },
    },
    { logger, now: Date.now, signal: io.signal, fault: io.fault, onProgress: io.onProgress },
  );
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

/** A run with no topic to drain yet (every route's regex matches nothing): caught up, recorded as any run. */
async function emptySummary(
  config: DrainConfig,
  runId: string,
  startedAt: number,
  checkpoints: Checkpoints,
): Promise<RunSummary> {
  const summary = mergeRunSummaries([], runHead(config, runId, startedAt));
  await checkpoints.recordRun(summary).catch(() => {});
  return summary;
}

/**
 * What a write mode writes through: `sink` always (replay uses it), `streams` in storage-write mode, the
 * drain-written `errorTable` in merge mode.
 */
interface Made {
  readonly sink: Sink;
  readonly streams?: StreamSink;
  readonly errorTable?: ErrorTable;
  close(): Promise<void>;
}

/**
 * Sinks whose making (the target table, the staging clean-up) starts at once but is not waited for: if it
 * fails (BigQuery down), the run goes on to lease and read, its writes try the making again and fail, and
 * so the partitions raise `stalled` instead of the run dying before it looks.
 */
function eagerSinks(
  make: () => Promise<Made>,
  logger: Logger,
  mode: DrainConfig['bigquery']['writeMode'],
): {
  sink: Sink;
  streams?: StreamSink;
  errorTable?: ErrorTable;
  /** The first making, settled: undefined if it worked or failed for a reason a later write may outlive. */
  firstError: Promise<unknown>;
  close(): Promise<void>;
} {
  const get = onceUntilFailure(() =>
    make().catch((error: unknown) => {
      logger.warn('the BigQuery target is not ready; writes will try again', { error });
      throw error;
    }),
  );
  const first = get();
  const ready = first.catch(() => undefined);
  const firstError = first.then(
    () => undefined,
    (error: unknown) => error,
  );
  const streams = async () => (await get()).streams!;
  return {
    sink: {
      async write(rows, signal) {
        return (await get()).sink.write(rows, signal);
      },
    },
    ...(mode === 'merge'
      ? {
          errorTable: {
            write: async (letters, at, signal) => (await get()).errorTable!.write(letters, at, signal),
          } satisfies ErrorTable,
        }
      : {}),
    ...(mode === 'storage-write'
      ? {
          streams: {
            prepare: async (rows, letters, at) => (await streams()).prepare(rows, letters, at),
            commit: async (names) => (await streams()).commit(names),
            streamState: async (name) => (await streams()).streamState(name),
            heldInRange: async (p, from, to) => (await streams()).heldInRange(p, from, to),
            heldOffsets: async (p, from, to) => (await streams()).heldOffsets(p, from, to),
          } satisfies StreamSink,
        }
      : {}),
    firstError,
    async close() {
      const settled = await ready;
      await settled?.close();
    },
  };
}

/**
 * The sinks the write mode asks for (see eagerSinks). Shared by the drain and the dead-letter replay, which
 * in the exactly-once modes always writes through MERGE (idempotent by origin; replays are few).
 */
export function createSink(
  config: DrainConfig,
  route: Route,
  clients: GoogleClients,
  userSchema: readonly SchemaField[],
  logger: Logger,
  runId: string,
  fault?: DrainContext['fault'],
  calls?: CallTracker,
): ReturnType<typeof eagerSinks> {
  const mode = config.bigquery.writeMode;
  const tracked = (make: () => Promise<Made>) =>
    calls === undefined ? make : () => calls.track('bigquery', 'preparing the table', make);
  return eagerSinks(
    tracked(async () => {
      const target = { dataset: route.dataset, table: route.table, location: config.bigquery.location };
      const table = await ensureTargetTable(
        clients.bigquery,
        { ...target, metadata: route.metadata },
        userSchema,
      );
      // Nothing is written before the table has every column of the schema file (additive evolution).
      const evolution = await evolveTable(
        clients.bigquery,
        target,
        targetTableSchema(userSchema, route.metadata),
        logger,
      );
      if (evolution.changes.length > 0) {
        // Whoever evolves the table (a run, or a replay) leaves the audit record.
        await recordSchemaEvolution(clients, config.pipelineId, runId, evolution).catch((error: unknown) =>
          logger.warn('recording the schema change in the audit trail failed', { error }),
        );
      }
      if (mode === 'insert-all') {
        const sink = createInsertAllSink(table, { ...insertAllLimits, retry: defaultRetryPolicy, logger });
        return { sink, close: async () => {} };
      }
      const staging = {
        bigquery: clients.bigquery,
        dataset: route.dataset,
        table: route.table,
        pipelineId: config.pipelineId,
        taskIndex: config.taskIndex,
        runId,
        retry: defaultRetryPolicy,
        logger,
        fault,
        // Older than any run can last: a staging table this old belongs to no live run.
        leftoverAgeMs: (config.budgetSeconds + 600) * 1000,
      };
      const merge = createMergeSink({
        ...staging,
        schema: targetTableSchema(userSchema, route.metadata),
      });
      await merge.cleanLeftovers();
      if (mode === 'merge') {
        const errorTable = createMergeErrorTable({ ...staging, location: config.bigquery.location });
        return {
          sink: merge,
          errorTable,
          close: async () => {
            await errorTable.close();
            await merge.close();
          },
        };
      }
      const streams = createStorageWriteSink({
        bigquery: clients.bigquery,
        writer: clients.bigqueryWriter(),
        project: config.project,
        dataset: route.dataset,
        table: route.table,
        location: config.bigquery.location,
        schema: targetTableSchema(userSchema, route.metadata),
        logger,
        fault,
      });
      return {
        sink: merge,
        streams,
        close: async () => {
          streams.close();
          await merge.close();
        },
      };
    }),
    logger,
    mode,
  );
}

/** The write mode's ports, out of the sinks made for it. */
function writerPorts(
  mode: DrainConfig['bigquery']['writeMode'],
  made: ReturnType<typeof createSink>,
  tracked: <T extends object>(port: T) => T,
): WriterPorts {
  if (mode === 'storage-write') return { mode, streams: tracked(made.streams!) };
  if (mode === 'merge') return { mode, sink: tracked(made.sink), errorTable: tracked(made.errorTable!) };
  return { mode, sink: tracked(made.sink) };
}

/** Every schema change applied is kept under `pipelines/{pipeline}/audit/`, as operators' actions are. */
async function recordSchemaEvolution(
  clients: GoogleClients,
  pipelineId: string,
  runId: string,
  evolution: SchemaEvolution,
): Promise<void> {
  const audit = clients.firestore.collection('pipelines').doc(pipelineId).collection('audit');
  const batch = clients.firestore.batch();
  for (const change of evolution.changes) {
    batch.create(audit.doc(), {
      action: 'schema_change',
      table: evolution.table,
      change: change.kind,
      column: change.column,
      ...(change.kind === 'add' ? { field: JSON.parse(JSON.stringify(change.field)) } : {}),
      actor: runId,
      at: new Date(),
    });
  }
  await batch.commit();
}
