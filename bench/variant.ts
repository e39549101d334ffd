/**
 * One variant of the drain benchmark, in a process of its own so that its peak RSS and CPU are its own:
 * `raw` (a bare kafkajs consumer that `JSON.parse`s each value: the least any JSON drain does), `writer`
 * (a bare Storage Write API writer with the official `JSONWriter`, one PENDING stream, 500-row appends,
 * the same rows with metadata columns, no Kafka), `null` (our drain, null sink), `bigquery` (our drain
 * into the BigQuery emulator). Prints one JSON line, with the process's CPU (user + system).
 * Run compiled, as the image runs the job (drain-bench.ts builds it with tsconfig.bench.json).
 *
 * Time is split the same way for every variant: start-up (process ready → first record fetched: client
 * connect, group join, and for the drain its leases) and drain (first record fetched → last record
 * consumed; for the drain, its last checkpoint committed). Absolute times (epoch ms) are printed too, so
 * that the tasks of one execution, run as separate processes, can be put on one time line.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { adapt, managedwriter } from '@google-cloud/bigquery-storage';
import kafkajs from 'kafkajs';
import { parseConfig } from '../functions/config/config.js';
import { summaryLine } from '../functions/drain/run-summary.js';
import { createGoogleClients } from '../functions/google/clients.js';
import { runJob } from '../functions/job/run-job.js';
import { createLogger } from '../functions/kernel/logger.js';
import type { Checkpoints, Sink, Source } from '../functions/kernel/ports.js';
import { readUserSchema, targetTableSchema } from '../functions/schema/table-schema.js';
import { ensureTargetTable } from '../functions/sinks/bigquery-tables.js';
import { toStorageRow } from '../test/support/json-writer-rows.js';
import { shapeNamed } from './shapes.js';

const [variant, topic, expected] = process.argv.slice(2) as [string, string, string];
const total = Number(expected);

/** CPU seconds per thread of this process, by thread name (main, V8 workers, libuv pool, ...). */
function threadCpu(): Record<string, number> {
  const ticks = 100; // USER_HZ
  const out: Record<string, number> = {};
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const name = readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
      const fields = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      const seconds = (Number(fields[11]) + Number(fields[12])) / ticks;
      const key = `${name}:${tid === String(process.pid) ? 'main' : tid}`;
      if (seconds >= 0.01) out[key] = Math.round(seconds * 100) / 100;
    } catch {
      // a thread that ended meanwhile
    }
  }
  return out;
}

function peakRssMb(): number {
  const line = readFileSync('/proc/self/status', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmHWM:'));
  return Math.round(Number(line?.replace(/\D+/g, '') ?? 0) / 1024);
}

interface Timing {
  startedAt: number;
  firstFetchAt: number | null;
  lastDoneAt: number | null;
  endedAt: number;
  /** Process CPU (user + system), µs: at the first record fetched, and at the end. */
  cpuAtFirstFetchUs?: number;
  /** Each thread's CPU, seconds, at the first record fetched. */
  threadCpuAtFirstFetch?: Record<string, number>;
}

const cpuUs = (): number => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

async function raw() {
  const kafka = new kafkajs.Kafka({
    brokers: [process.env.KAFKA_BROKERS!],
    logLevel: kafkajs.logLevel.NOTHING,
  });
  const consumer = kafka.consumer({ groupId: `bench-raw-${Date.now()}`, maxWaitTimeInMs: 500 });
  const timing: Timing = { startedAt: Date.now(), firstFetchAt: null, lastDoneAt: null, endedAt: 0 };
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  let records = 0;
  await new Promise<void>((resolve, reject) => {
    consumer
      .run({
        autoCommit: false,
        eachBatch: async ({ batch, resolveOffset }) => {
          if (timing.firstFetchAt === null) {
            timing.firstFetchAt = Date.now();
            timing.cpuAtFirstFetchUs = cpuUs();
            timing.threadCpuAtFirstFetch = threadCpu();
          }
          for (const message of batch.messages)
            if (message.value !== null) JSON.parse(message.value.toString());
          records += batch.messages.length;
          resolveOffset(batch.lastOffset());
          timing.lastDoneAt = Date.now();
          if (records >= total) resolve();
        },
      })
      .catch(reject);
  });
  timing.endedAt = Date.now();
  await consumer.disconnect();
  return { records, ...timing, firestoreReads: 0, firestoreWrites: 0 };
}

/** A null sink that takes as long as the emulator would (µs per row), to tell waiting's cost from writing's. */
const pacedUsPerRow = Number(process.env.BENCH_PACED_US_PER_ROW ?? 0);

async function drain(nullSink: boolean) {
  const config = parseConfig(process.env);
  const timing: Timing = { startedAt: Date.now(), firstFetchAt: null, lastDoneAt: null, endedAt: 0 };
  // Firestore documents read and written, counted at the port from what each call does (see
  // firestore-checkpoints.ts: a compare-and-swap reads the document, then writes it; a commit also
  // creates its ledger entry; roll-ups, one per 200 commits of a partition, are not counted).
  let reads = 0;
  let writes = 0;
  const counted =
    <A extends unknown[], R>(r: number, w: number, call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      reads += r;
      writes += w;
      return call(...args);
    };
  const count = (checkpoints: Checkpoints): Checkpoints => ({
    peek: async (partitions) => {
      reads += partitions.length;
      return checkpoints.peek(partitions);
    },
    acquire: async (...args) => {
      reads++;
      const lease = await checkpoints.acquire(...args);
      if (lease) writes++;
      return lease;
    },
    renew: counted(1, 1, checkpoints.renew),
    commit: async (...args) => {
      reads++;
      writes += 2;
      const lease = await checkpoints.commit(...args);
      timing.lastDoneAt = Date.now();
      return lease;
    },
    recordIntents: async (intents, ttlMs) => {
      reads += intents.length;
      writes += intents.length;
      return checkpoints.recordIntents(intents, ttlMs);
    },
    release: counted(1, 1, checkpoints.release),
    recordRun: async (summary) => {
      // The run document and its per-partition detail, in chunks of 500.
      writes += 1 + Math.ceil(summary.partitions.length / 500);
      return checkpoints.recordRun(summary);
    },
  });
  const observeSource = (source: Source): Source => ({
    ...source,
    async open(positions) {
      const reader = await source.open(positions);
      return {
        ...reader,
        async next(signal) {
          const fetched = await reader.next(signal);
          if (fetched !== undefined && fetched.records.length > 0 && timing.firstFetchAt === null) {
            timing.firstFetchAt = Date.now();
            timing.cpuAtFirstFetchUs = cpuUs();
            timing.threadCpuAtFirstFetch = threadCpu();
          }
          return fetched;
        },
        finish: (p) => reader.finish(p),
        close: () => reader.close(),
      };
    },
  });
  const sink: Sink | undefined = nullSink
    ? {
        write: async (rows) => {
          if (pacedUsPerRow > 0)
            await new Promise((r) => setTimeout(r, (rows.length * pacedUsPerRow) / 1000));
          return rows.map(() => ({ ok: true as const }));
        },
      }
    : undefined;
  const summary = await runJob(config, {
    logger: createLogger({ level: 'warning' }),
    signal: new AbortController().signal,
    sink,
    observeCheckpoints: count,
    observeSource,
  });
  timing.endedAt = Date.now();
  return {
    records: summary.recordsRead,
    ...timing,
    firestoreReads: reads,
    firestoreWrites: writes,
    commits: summary.commits,
    stopReason: summary.stopReason,
    partitions: summary.partitionCount,
    sharedPartitions: summary.partitions.filter((p) => p.shared === true).length,
    summaryBytes: Buffer.byteLength(JSON.stringify(summaryLine(summary))),
  };
}

/**
 * The official writer alone: the same rows as the drain writes (user columns and metadata, in the forms
 * the JSONWriter takes), appended 500 at a time to one PENDING stream, finalized and committed. Only the
 * writing counts as drain time (the rows are made before); CPU is counted from there too.
 */
async function writer() {
  const config = parseConfig(process.env);
  const route = config.routes[0]!;
  const clients = createGoogleClients(config);
  const userSchema = readUserSchema(route.schemaFile!);
  const schema = targetTableSchema(userSchema, route.metadata);
  await ensureTargetTable(
    clients.bigquery,
    { dataset: route.dataset, table: route.table, location: null, metadata: route.metadata },
    userSchema,
  );
  const shape = shapeNamed(process.env.BENCH_SHAPE);
  const ingested = new Date().toISOString();
  const rows = Array.from({ length: total }, (_, i) =>
    toStorageRow(
      {
        ...(JSON.parse(shape.value(i)) as Record<string, never>),
        _kafka_topic: topic,
        _kafka_partition: i % 4,
        _kafka_offset: String(Math.floor(i / 4)),
        _kafka_timestamp: ingested,
        _kafka_key: null,
        _ingested_at: ingested,
      },
      schema,
    ),
  );
  const timing: Timing = { startedAt: Date.now(), firstFetchAt: Date.now(), lastDoneAt: null, endedAt: 0 };
  timing.cpuAtFirstFetchUs = cpuUs();
  timing.threadCpuAtFirstFetch = threadCpu();
  const client = clients.bigqueryWriter();
  const parent = `projects/${config.project}/datasets/${route.dataset}/tables/${route.table}`;
  const stream = await client.createWriteStream({
    streamType: managedwriter.PendingStream,
    destinationTable: parent,
  });
  const connection = await client.createStreamConnection({ streamId: stream });
  const protoDescriptor = adapt.convertStorageSchemaToProto2Descriptor(
    adapt.convertBigQuerySchemaToStorageTableSchema({ fields: schema as never }),
    'root',
  );
  const json = new managedwriter.JSONWriter({ connection, protoDescriptor });
  for (let at = 0; at < rows.length; at += 500) {
    const result = await json.appendRows(rows.slice(at, at + 500) as never, at).getResult();
    if (result.error) throw new Error(`append at ${at}: ${result.error.message}`);
  }
  await client.finalizeWriteStream({ name: stream });
  await client.batchCommitWriteStream({ parent, writeStreams: [stream] });
  json.close();
  timing.lastDoneAt = Date.now();
  timing.endedAt = Date.now();
  await clients.close();
  return { records: rows.length, ...timing, firestoreReads: 0, firestoreWrites: 0 };
}

const result =
  variant === 'raw' ? await raw() : variant === 'writer' ? await writer() : await drain(variant === 'null');
console.log(
  JSON.stringify({ variant, ...result, cpuUs: cpuUs(), threadCpu: threadCpu(), peakRssMb: peakRssMb() }),
);
// As the job's main: a run that failed exits 1.
process.exit('stopReason' in result && result.stopReason === 'error' ? 1 : 0);
