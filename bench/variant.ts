/**
 * One variant of the drain benchmark, in a process of its own so that its peak RSS is its own:
 * `raw` (a bare kafkajs consumer that does nothing with the records), `null` (our drain, null sink),
 * `bigquery` (our drain into the BigQuery emulator). Prints one JSON line.
 */
import { readFileSync } from 'node:fs';
import kafkajs from 'kafkajs';
import { parseConfig } from '../functions/drain/config.js';
import { createLogger } from '../functions/drain/logger.js';
import type { Checkpoints, Sink } from '../functions/drain/types.js';
import { runJob } from '../functions/job/run-job.js';

const [variant, topic, expected] = process.argv.slice(2) as [string, string, string];
const total = Number(expected);

function peakRssMb(): number {
  const line = readFileSync('/proc/self/status', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmHWM:'));
  return Math.round(Number(line?.replace(/\D+/g, '') ?? 0) / 1024);
}

async function raw(): Promise<{ records: number; ms: number }> {
  const kafka = new kafkajs.Kafka({
    brokers: [process.env.KAFKA_BROKERS!],
    logLevel: kafkajs.logLevel.NOTHING,
  });
  const consumer = kafka.consumer({ groupId: `bench-raw-${Date.now()}`, maxWaitTimeInMs: 500 });
  const started = Date.now();
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  let records = 0;
  await new Promise<void>((resolve, reject) => {
    consumer
      .run({
        autoCommit: false,
        eachBatch: async ({ batch, resolveOffset }) => {
          records += batch.messages.length;
          resolveOffset(batch.lastOffset());
          if (records >= total) resolve();
        },
      })
      .catch(reject);
  });
  const ms = Date.now() - started;
  await consumer.disconnect();
  return { records, ms };
}

async function drain(nullSink: boolean) {
  const config = parseConfig(process.env);
  let firestoreWrites = 0;
  const counted =
    <A extends unknown[], R>(writes: number, call: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> => {
      firestoreWrites += writes;
      return call(...args);
    };
  const count = (checkpoints: Checkpoints): Checkpoints => ({
    peek: counted(0, checkpoints.peek),
    acquire: async (...args) => {
      const lease = await checkpoints.acquire(...args);
      if (lease) firestoreWrites++;
      return lease;
    },
    renew: counted(1, checkpoints.renew),
    // A commit writes the partition document and its ledger entry, atomically.
    commit: counted(2, checkpoints.commit),
    recordIntents: async (intents, ttlMs) => {
      firestoreWrites += intents.length;
      return checkpoints.recordIntents(intents, ttlMs);
    },
    release: counted(1, checkpoints.release),
    recordRun: counted(1, checkpoints.recordRun),
  });
  const sink: Sink | undefined = nullSink
    ? { write: async (rows) => rows.map(() => ({ ok: true as const })) }
    : undefined;
  const started = Date.now();
  const summary = await runJob(config, {
    logger: createLogger({ level: 'warning' }),
    signal: new AbortController().signal,
    sink,
    observeCheckpoints: count,
  });
  return {
    records: summary.recordsRead,
    ms: Date.now() - started,
    firestoreWrites,
    commits: summary.commits,
    stopReason: summary.stopReason,
  };
}

const result = variant === 'raw' ? await raw() : await drain(variant === 'null');
console.log(JSON.stringify({ variant, ...result, peakRssMb: peakRssMb() }));
process.exit(0);
