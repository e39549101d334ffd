import type kafkajs from 'kafkajs';
import type { Consumer, Kafka } from 'kafkajs';
import { DrainError } from '../kernel/errors.js';
import type { Logger } from '../kernel/logger.js';
import type { Source, SourceReader } from '../kernel/ports.js';
import type { FetchedBatch, KafkaRecord, PartitionRef, Position, Watermarks } from '../kernel/records.js';
import { sleep } from '../kernel/timers.js';
import { createBatchQueue } from './batch-queue.js';
import { registerCompressionCodecs } from './codecs.js';
import { explicitAssigner } from './explicit-assigner.js';
import { headTimestamps } from './head-probe.js';
import { kafkaError, onNewAdmin } from './kafka-client.js';

/**
 * What a drain's fetch brings of a partition: `BATCH_MAX_BYTES`, at most 2 MiB. Larger fetches make a
 * partition's first batch of a run larger (each batch costs a flush and a commit) and cost less to read, but
 * in long runs they cost more than they save (docs/capacity.md, "What a batch costs": 2 MiB against
 * kafkajs's 1 MiB, 0.93x the CPU a record at N and the same at 4N; 5 MiB, 0.90x at N but 1.10x at 4N).
 */
export function fetchBytesFor(batchMaxBytes: number): number {
  return Math.min(batchMaxBytes, 2 * 1024 * 1024);
}

/**
 * Reads exact offset ranges with kafkajs, which has no `assign()`. Each reader joins a consumer group of
 * its own (unique per run, so no other member ever shares it), whose assigner hands it exactly the
 * partitions it leased, each positioned with `seek` at its Firestore checkpoint. Nothing is ever
 * committed to Kafka, Kafka's offsets are never read as truth, and the group is deleted on close.
 */
export function createKafkaSource(
  kafka: Kafka,
  options: {
    groupPrefix: string;
    logger: Logger;
    /**
     * What one fetch may bring of a partition (kafkajs's `maxBytesPerPartition`, 1 MiB unless said; a
     * fetch as a whole twice that, 10 MiB unless said). The drain passes `fetchBytesFor(BATCH_MAX_BYTES)`.
     */
    fetchBytesPerPartition?: number;
  },
): Source {
  registerCompressionCodecs();
  return {
    async watermarks(topics) {
      return onNewAdmin(kafka, 'read watermarks', options.logger, async (admin) => {
        const marks: Watermarks[] = [];
        for (const topic of topics) {
          const offsets = await admin.fetchTopicOffsets(topic);
          for (const o of offsets) {
            marks.push({ topic, partition: o.partition, logStart: Number(o.low), end: Number(o.high) });
          }
        }
        return marks.sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
      });
    },

    async offsetsAt(topic, timestamp) {
      return onNewAdmin(kafka, 'read offsets for a time', options.logger, async (admin) => {
        const found = await admin.fetchTopicOffsetsByTimestamp(topic, timestamp);
        const ends = await admin.fetchTopicOffsets(topic);
        const end = new Map(ends.map((o) => [o.partition, Number(o.high)]));
        // Kafka answers -1 when no record is that recent: such a partition starts at its end.
        return new Map(
          found.map((o) => [
            o.partition,
            Number(o.offset) < 0 ? (end.get(o.partition) ?? 0) : Number(o.offset),
          ]),
        );
      });
    },

    async open(positions) {
      const groupId = `${options.groupPrefix}.${Date.now().toString(36)}.${Math.random().toString(36).slice(2, 8)}`;
      const consumer = kafka.consumer({
        groupId,
        partitionAssigners: [explicitAssigner(positions)],
        allowAutoTopicCreation: false,
        maxWaitTimeInMs: 500,
        ...(options.fetchBytesPerPartition === undefined
          ? {}
          : {
              maxBytesPerPartition: options.fetchBytesPerPartition,
              // A fetch as a whole: two partitions' worth (kafkajs's own is 10 MiB). A record the drain
              // holds keeps its whole fetch's buffer alive (its key and value are slices of it): two 10 MiB
              // fetches were in a load run's heap, 176-byte records of a million-record backlog.
              maxBytes: 2 * options.fetchBytesPerPartition,
            }),
      });
      return openReader(consumer, kafka.admin(), groupId, positions, options.logger);
    },

    headTimestamps: (positions) => headTimestamps(kafka, positions),
  };
}

async function openReader(
  consumer: Consumer,
  admin: ReturnType<Kafka['admin']>,
  groupId: string,
  positions: readonly Position[],
  logger: Logger,
): Promise<SourceReader> {
  // Two partitions' fetches waiting for the drain, the next fetch held behind them (four held 60,000
  // records of 176 bytes more in a load run's heap, for no gain in speed).
  const queue = createBatchQueue(2);
  const finished = new Set<string>();
  const id = (p: PartitionRef) => `${p.topic}:${p.partition}`;
  // Where each partition's next fetch must start. A batch fetched from anywhere else (before the seek
  // below took effect) is dropped: reading from the wrong offset must never reach the drain.
  const expected = new Map(positions.map((p) => [id(p), p.offset]));

  // Batches that hold only transaction markers or aborted records never reach eachBatch; kafkajs reports
  // them here, and the checkpoint must still move past them. Trusted only when the batch starts exactly
  // where this partition stands (a batch fetched before the seek took effect starts elsewhere).
  consumer.on(consumer.events.END_BATCH_PROCESS, (event) => {
    const p = event.payload;
    const at = expected.get(id(p));
    if (p.batchSize !== 0 || finished.has(id(p)) || p.firstOffset === null || Number(p.firstOffset) !== at)
      return;
    const nextOffset = Number(p.lastOffset) + 1;
    expected.set(id(p), nextOffset);
    void queue.push({ topic: p.topic, partition: p.partition, fromOffset: at, records: [], nextOffset });
  });
  // kafkajs restarts the consumer after a retriable crash (a fresh broker's group coordinator not being
  // ready yet, say); the reader fails only when it will not.
  consumer.on(consumer.events.CRASH, (event) => {
    if (event.payload.restart) {
      logger.warn('kafka reader crashed; kafkajs restarts it', { error: event.payload.error });
      return;
    }
    queue.fail(kafkaError(event.payload.error, 'consumer crashed'));
  });

  // Position every unfinished partition where it stands, each time the group is joined: the first join,
  // and again if kafkajs restarts the consumer after a crash (a restart forgets earlier seeks, and would
  // otherwise resume from Kafka's default position). As kafkajs's own admin.setOffsets does, but
  // without its wait for a fetch (5 s a run).
  let joined: () => void = () => {};
  const firstJoin = new Promise<void>((resolve) => {
    joined = resolve;
  });
  consumer.on(consumer.events.GROUP_JOIN, () => {
    for (const p of positions) {
      const at = expected.get(id(p));
      if (at !== undefined && !finished.has(id(p)))
        consumer.seek({ topic: p.topic, partition: p.partition, offset: String(at) });
    }
    joined();
  });

  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [...new Set(positions.map((p) => p.topic))] });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 1,
      eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
        if (
          finished.has(id(batch)) ||
          Number((batch as unknown as { fetchedOffset: string }).fetchedOffset) !== expected.get(id(batch))
        )
          return;
        const records: KafkaRecord[] = batch.messages.map((m) => ({
          topic: batch.topic,
          partition: batch.partition,
          offset: Number(m.offset),
          timestamp: Number(m.timestamp),
          key: m.key,
          value: m.value,
          headers: headersAsText(m.headers),
          rawHeaders: rawHeaders(m.headers),
        }));
        const fetched: FetchedBatch = {
          topic: batch.topic,
          partition: batch.partition,
          fromOffset: expected.get(id(batch))!,
          records,
          nextOffset: Number(batch.lastOffset()) + 1,
        };
        // Waits while the drain is busy with earlier batches: backpressure instead of buffering.
        const accepted = await queue.push(fetched);
        // Handed over is not durable: durability is the drain's business, through Firestore. Resolving
        // only moves this reader's in-memory position so that it does not fetch the same batch again.
        if (accepted) {
          expected.set(id(batch), fetched.nextOffset);
          resolveOffset(batch.lastOffset());
        }
        await heartbeat().catch(() => {});
      },
    });
    // A fresh broker may need a while to elect a group coordinator; kafkajs retries the join meanwhile.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      firstJoin,
      new Promise((_, reject) => {
        timer = setTimeout(
          () =>
            reject(new DrainError('kafka reader did not join its group within 30 s', { retriable: true })),
          30_000,
        );
      }),
    ]).finally(() => clearTimeout(timer));
  } catch (error) {
    await consumer.disconnect().catch(() => {});
    throw kafkaError(error, 'start the reader');
  }

  let closed = false;
  return {
    next: (signal) => queue.take(signal),
    finish(partition) {
      finished.add(id(partition));
      consumer.pause([{ topic: partition.topic, partitions: [partition.partition] }]);
    },
    async close() {
      if (closed) return;
      closed = true;
      queue.close();
      await consumer
        .disconnect()
        .catch((error: unknown) => logger.warn('kafka reader disconnect failed', { error }));
      // Nothing was ever committed for the group (auto-commit is off); deleting it keeps the broker tidy.
      // Right after the member left, the broker may still call the group non-empty: try a few times.
      try {
        await admin.connect();
        for (let attempt = 1; attempt <= 5; attempt++) {
          const deleted = await admin.deleteGroups([groupId]).then(
            () => true,
            () => false,
          );
          if (deleted) break;
          await sleep(200 * attempt);
        }
      } catch (error) {
        logger.debug('kafka reader group not deleted; the broker expires it', { error, groupId });
      } finally {
        await admin.disconnect().catch(() => {});
      }
    },
  };
}

/** Most records carry no headers: they share these (read-only) instead of two new objects each. */
const noHeaders: Readonly<Record<string, string>> = Object.freeze({});
const noRawHeaders: readonly { key: string; value: Buffer | null }[] = Object.freeze([]);

function hasHeaders(headers: kafkajs.IHeaders | undefined): headers is kafkajs.IHeaders {
  if (headers === undefined) return false;
  for (const _ in headers) return true;
  return false;
}

function headersAsText(headers: kafkajs.IHeaders | undefined): Readonly<Record<string, string>> {
  if (!hasHeaders(headers)) return noHeaders;
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value === undefined) continue;
    out[name] = Array.isArray(value) ? value.map(String).join(',') : String(value);
  }
  return out;
}

/** kafkajs gathers a repeated header key into an array: flattened back, in order, values as bytes. */
function rawHeaders(headers: kafkajs.IHeaders | undefined): readonly { key: string; value: Buffer | null }[] {
  if (!hasHeaders(headers)) return noRawHeaders;
  const out: { key: string; value: Buffer | null }[] = [];
  for (const [key, value] of Object.entries(headers ?? {})) {
    for (const one of Array.isArray(value) ? value : [value]) {
      out.push({ key, value: one === undefined || one === null ? null : Buffer.from(one) });
    }
  }
  return out;
}
