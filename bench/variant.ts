/**
 * One variant of the drain benchmark, in a process of its own so that its peak RSS is its own:
 * `raw` (a bare kafkajs consumer that does nothing with the records), `null` (our drain, null sink),
 * `bigquery` (our drain into the BigQuery emulator). Prints one JSON line.
 *
 * Time is split the same way for every variant: start-up (process ready → first record fetched: client
 * connect, group join, and for the drain its leases) and drain (first record fetched → last record
 * consumed; for the drain, its last checkpoint committed). Absolute times (epoch ms) are printed too, so
 * that the tasks of one execution, run as separate processes, can be put on one time line.
 */
import { readFileSync } from 'node:fs';
import kafkajs from 'kafkajs';
import { parseConfig } from '../functions/drain/config.js';
import { createLogger } from '../functions/drain/logger.js';
import { summaryLine } from '../functions/drain/run-summary.js';
import type { Checkpoints, Sink, Source } from '../functions/drain/types.js';
import { runJob } from '../functions/job/run-job.js';

const [variant, topic, expected] = process.argv.slice(2) as [string, string, string];
const total = Number(expected);

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
}

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
          timing.firstFetchAt ??= Date.now();
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
          if (fetched !== undefined && fetched.records.length > 0) timing.firstFetchAt ??= Date.now();
          return fetched;
        },
        finish: (p) => reader.finish(p),
        close: () => reader.close(),
      };
    },
  });
  const sink: Sink | undefined = nullSink
    ? { write: async (rows) => rows.map(() => ({ ok: true as const })) }
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
    summaryBytes: Buffer.byteLength(JSON.stringify(summaryLine(summary))),
  };
}

const result = variant === 'raw' ? await raw() : await drain(variant === 'null');
console.log(JSON.stringify({ variant, ...result, peakRssMb: peakRssMb() }));
process.exit(0);
