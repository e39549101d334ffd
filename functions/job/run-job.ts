import { randomBytes } from 'node:crypto';
import kafkajs from 'kafkajs';
import { createPubSubAlerts } from '../alerts/pubsub-alerts.js';
import { createFirestoreCheckpoints } from '../checkpoints/firestore-checkpoints.js';
import { createPubSubDeadLetters } from '../dead-letters/pubsub-dead-letters.js';
import type { DrainConfig } from '../drain/config.js';
import { type DrainContext, runDrain } from '../drain/drain-loop.js';
import { ConfigError } from '../drain/errors.js';
import type { Logger } from '../drain/logger.js';
import { defaultRetryPolicy, sleep } from '../drain/retry.js';
import { loadRules, type Rules } from '../drain/rules.js';
import type { Checkpoints, ErrorTable, RunSummary, Sink, Source, StreamSink } from '../drain/types.js';
import { createInsertAllSink, ensureTargetTable, insertAllLimits } from '../sinks/bigquery-sink.js';
import { createMergeErrorTable } from '../sinks/error-table.js';
import { createMergeSink } from '../sinks/merge-sink.js';
import { evolveTable, type SchemaEvolution } from '../sinks/schema-evolution.js';
import { createStorageWriteSink } from '../sinks/storage-write-sink.js';
import { readUserSchema, type SchemaField, targetTableSchema } from '../sinks/table-schema.js';
import { checkBrokerCertificate, createKafkaSource, kafkaClientOptions } from '../sources/kafka-source.js';
import { createGoogleClients, type GoogleClients } from './clients.js';

/** How long a batch in flight may settle after SIGTERM or the budget; Cloud Run kills 10 s after SIGTERM. */
export const settleMs = 6_000;

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
}

/** Wires the real adapters from a parsed config and runs one bounded drain for this task. */
/** Loads RULES_MODULE, naming the variable if it cannot. */
export async function rulesFrom(config: DrainConfig): Promise<Rules | undefined> {
  return config.rulesModule === null ? undefined : loadRulesModule(config.rulesModule);
}

export async function runJob(config: DrainConfig, io: JobIo): Promise<RunSummary> {
  const runId = `${config.execution}-t${config.taskIndex}-${randomBytes(4).toString('hex')}`;
  const logger = io.logger.child({ pipeline: config.pipelineId, runId });
  const userSchema = readUserSchema(config.bigquery.schemaFile);
  const rules = await rulesFrom(config);
  const clients = createGoogleClients(config);
  const kafkaOptions = kafkaClientOptions(config, `kafka-bigquery-drain-${config.pipelineId}`);
  const kafka = new kafkajs.Kafka(kafkaOptions);
  try {
    await checkBrokerCertificate(kafkaOptions);
    const made =
      io.sink === undefined ? createSink(config, clients, userSchema, logger, runId, io.fault) : undefined;
    // A schema file the table cannot follow stops the run before it leases anything (exit 2). Any other
    // failure to make the sinks (BigQuery unreachable) is left to the writes, whose partitions stall.
    // (Waited for at most 10 s: a BigQuery that does not answer must not hold the run before it looks.)
    const waited = new AbortController();
    const firstError = await Promise.race([
      made?.firstError,
      sleep(10_000, AbortSignal.any([io.signal, waited.signal])),
    ]);
    waited.abort();
    if (firstError instanceof ConfigError) throw firstError;
    const sink = io.sink ?? made!.sink;
    const streams = io.sink === undefined ? made!.streams : undefined;
    const errorTable = io.sink === undefined ? made!.errorTable : undefined;
    const summary = await runDrain(
      {
        source: (io.observeSource ?? ((s) => s))(
          createKafkaSource(kafka, {
            groupPrefix: `kafka-bigquery-drain.${config.pipelineId}.t${config.taskIndex}`,
            logger,
          }),
        ),
        checkpoints: (io.observeCheckpoints ?? ((c) => c))(
          createFirestoreCheckpoints(clients.firestore, config.pipelineId),
        ),
        sink,
        ...(streams === undefined ? {} : { streams }),
        ...(errorTable === undefined ? {} : { errorTable }),
        ...(config.alertTopic === null
          ? {}
          : { alerts: createPubSubAlerts(clients.pubsub, config.alertTopic) }),
        ...(rules === undefined ? {} : { rules }),
        deadLetters: createPubSubDeadLetters(clients.pubsub, {
          topic: config.deadLetterTopic,
          pipeline: config.pipelineId,
          execution: config.execution,
          retry: defaultRetryPolicy,
          logger,
        }),
      },
      {
        pipelineId: config.pipelineId,
        runId,
        execution: config.execution,
        taskIndex: config.taskIndex,
        taskCount: config.taskCount,
        topics: config.kafka.topics,
        budgetMs: config.budgetSeconds * 1000,
        leaseTtlMs: config.leaseTtlSeconds * 1000,
        batchMaxRecords: config.batchMaxRecords,
        batchMaxBytes: config.batchMaxBytes,
        retentionGapPolicy: config.retentionGapPolicy,
        startPosition: config.startPosition,
        settleMs,
        // Exactly-once modes write a flush for all partitions ready at once (one commit or MERGE), so
        // many may be in flight; insert-all writes each batch on its own, so few.
        partitionConcurrency: config.bigquery.writeMode === 'insert-all' ? 8 : 256,
        inFlightMaxBytes: 8 * config.batchMaxBytes,
        firestoreConcurrency: 16,
        rowShape: {
          fields: userSchema,
          unknownFields: config.unknownFields,
          metadata: config.bigquery.metadata,
        },
        tombstones: config.tombstones,
        alertThresholds: {
          idleSeconds: config.idleAlertSeconds,
          stallSeconds: config.stallAlertSeconds,
          backlogRecords: config.backlogAlertRecords,
          backlogGrowingRuns: 3,
        },
      },
      { logger, now: Date.now, signal: io.signal, fault: io.fault, onProgress: io.onProgress },
    );
    await made?.close();
    return summary;
  } finally {
    await clients.close();
  }
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
  let made: Promise<Made> | undefined;
  const start = (): Promise<Made> => {
    const attempt = make();
    made = attempt;
    attempt.catch((error: unknown) => {
      if (made === attempt) made = undefined;
      logger.warn('the BigQuery target is not ready; writes will try again', { error });
    });
    return attempt;
  };
  const first = start();
  const ready = first.catch(() => undefined);
  const firstError = first.then(
    () => undefined,
    (error: unknown) => error,
  );
  const get = () => made ?? start();
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
  clients: GoogleClients,
  userSchema: readonly SchemaField[],
  logger: Logger,
  runId: string,
  fault?: DrainContext['fault'],
): ReturnType<typeof eagerSinks> {
  const mode = config.bigquery.writeMode;
  return eagerSinks(
    async () => {
      const table = await ensureTargetTable(clients.bigquery, config.bigquery, userSchema);
      // Nothing is written before the table has every column of the schema file (additive evolution).
      const evolution = await evolveTable(
        clients.bigquery,
        config.bigquery,
        targetTableSchema(userSchema, config.bigquery.metadata),
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
        dataset: config.bigquery.dataset,
        table: config.bigquery.table,
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
        schema: targetTableSchema(userSchema, config.bigquery.metadata),
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
        dataset: config.bigquery.dataset,
        table: config.bigquery.table,
        location: config.bigquery.location,
        schema: targetTableSchema(userSchema, config.bigquery.metadata),
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
    },
    logger,
    mode,
  );
}

async function loadRulesModule(specifier: string): Promise<Rules> {
  try {
    return await loadRules(specifier);
  } catch (error) {
    throw new ConfigError('RULES_MODULE', error instanceof Error ? error.message : String(error));
  }
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
