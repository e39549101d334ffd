/**
 * The Kafka timestamp of the record each partition would give next from a position: what freshness is
 * measured with (the age of the oldest record not yet durable in BigQuery). One bounded fetch per
 * partition, batched per leader, with no consumer group: kafkajs reads exact offsets only through a group
 * (kafka-source.ts), and joining one costs a rebalance (group.initial.rebalance.delay.ms, 3 s by default)
 * for what is one fetch. So the probe uses the cluster and fetch of kafkajs 2.2.4 that its own consumer
 * uses, and its `Batch`, which drops aborted records and transaction markers as the consumer does.
 *
 * Reads committed records only (as the drain does): a record of a transaction still open is not waiting
 * to be written yet. Best effort: a partition whose fetch fails has no answer (unknown), never a wrong one.
 */
import type { Kafka } from 'kafkajs';
// Imported, not required at run time: the job's bundle (dist/job.mjs) holds one kafkajs.
import BatchModule from 'kafkajs/src/consumer/batch.js';
import { forEachLimited } from '../kernel/concurrency.js';
import { DrainError } from '../kernel/errors.js';
import { type Position, partitionId } from '../kernel/records.js';

interface FetchedPartition {
  partition: number;
  highWatermark: string;
  lastStableOffset?: string;
  messages: unknown[];
  abortedTransactions?: unknown[];
}
interface KafkaBatch {
  messages: { offset: string; timestamp: string }[];
  rawMessages: { offset: string }[];
}
interface Broker {
  fetch(request: {
    maxWaitTime: number;
    minBytes: number;
    maxBytes: number;
    isolationLevel: number;
    topics: { topic: string; partitions: { partition: number; fetchOffset: string; maxBytes: number }[] }[];
  }): Promise<{ responses: { topicName: string; partitions: FetchedPartition[] }[] }>;
}
interface Cluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  addMultipleTargetTopics(topics: string[]): Promise<void>;
  findLeaderForPartitions(topic: string, partitions: number[]): Record<string, number[]>;
  findBroker(node: { nodeId: string }): Promise<Broker>;
}

const BatchOf = BatchModule as new (
  topic: string,
  fetchedOffset: string,
  partition: FetchedPartition,
) => KafkaBatch;

/** Partitions per fetch request, and requests in flight: never more than a few hundred partitions at once. */
const partitionsPerFetch = 100;
const fetchesInFlight = 3;
/**
 * Bytes asked per partition, round after round: a first record batch larger than the limit comes back
 * cut (and dropped) for every partition but the first of a response, so a partition that answered nothing
 * while records wait is asked again with more room; one whose records were all aborted or markers is asked
 * again past them.
 */
const roundBytes = [64 * 1024, 1024 * 1024, 16 * 1024 * 1024];
const readCommitted = 1;

/**
 * Per partition (`topic~partition`), the timestamp of the first committed record at or after its
 * position; null when none waits there; absent when it could not be read.
 */
export async function headTimestamps(
  kafka: Kafka,
  positions: readonly Position[],
): Promise<Map<string, number | null>> {
  const found = new Map<string, number | null>();
  if (positions.length === 0) return found;
  const cluster = clusterOf(kafka);
  try {
    await cluster.connect();
    await cluster.addMultipleTargetTopics([...new Set(positions.map((p) => p.topic))]);
    let asked: Asked[] = positions.map((p) => ({ ...p, round: 0, alone: false }));
    while (asked.length > 0) {
      const again: Asked[] = [];
      await forEachLimited(requests(cluster, asked), fetchesInFlight, async ({ nodeId, items }) => {
        const answers = await fetchOnce(cluster, nodeId, items).catch(() => undefined);
        if (answers === undefined) {
          // One partition's error fails the whole request (a position out of range): each alone, once.
          if (items.length > 1) again.push(...items.map((item) => ({ ...item, alone: true })));
          return;
        }
        for (const item of items) {
          const answer = answers.get(partitionId(item));
          if (answer === undefined) continue;
          if (answer.kind === 'found') found.set(partitionId(item), answer.timestamp);
          else if (answer.kind === 'none') found.set(partitionId(item), null);
          else if (item.round + 1 < roundBytes.length)
            again.push({ ...item, offset: answer.from, round: item.round + 1 });
        }
      });
      asked = again;
    }
    return found;
  } finally {
    await cluster.disconnect().catch(() => {});
  }
}

interface Asked extends Position {
  readonly round: number;
  /** Asked in a request of its own (its request failed with others). */
  readonly alone: boolean;
}

type Answer = { kind: 'found'; timestamp: number } | { kind: 'none' } | { kind: 'again'; from: number };

/** The positions grouped by leader, in requests of at most `partitionsPerFetch` partitions. */
function requests(cluster: Cluster, items: readonly Asked[]) {
  const byNode = new Map<string, Asked[]>();
  const byTopic = new Map<string, Asked[]>();
  for (const item of items) byTopic.set(item.topic, [...(byTopic.get(item.topic) ?? []), item]);
  for (const [topic, ofTopic] of byTopic) {
    const leaders = cluster.findLeaderForPartitions(
      topic,
      ofTopic.map((p) => p.partition),
    );
    for (const [nodeId, partitions] of Object.entries(leaders)) {
      const wanted = new Set(partitions);
      byNode.set(nodeId, [...(byNode.get(nodeId) ?? []), ...ofTopic.filter((p) => wanted.has(p.partition))]);
    }
  }
  return [...byNode].flatMap(([nodeId, all]) => {
    const together = all.filter((p) => !p.alone);
    return [
      ...all.filter((p) => p.alone).map((p) => ({ nodeId, items: [p] })),
      ...Array.from({ length: Math.ceil(together.length / partitionsPerFetch) }, (_, i) => ({
        nodeId,
        items: together.slice(i * partitionsPerFetch, (i + 1) * partitionsPerFetch),
      })),
    ];
  });
}

async function fetchOnce(
  cluster: Cluster,
  nodeId: string,
  items: readonly Asked[],
): Promise<Map<string, Answer>> {
  const broker = await cluster.findBroker({ nodeId });
  const topics = new Map<string, { partition: number; fetchOffset: string; maxBytes: number }[]>();
  for (const p of items) {
    const request = { partition: p.partition, fetchOffset: String(p.offset), maxBytes: roundBytes[p.round]! };
    topics.set(p.topic, [...(topics.get(p.topic) ?? []), request]);
  }
  const { responses } = await broker.fetch({
    maxWaitTime: 0,
    minBytes: 0,
    maxBytes: 64 * 1024 * 1024,
    isolationLevel: readCommitted,
    topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })),
  });
  const offsetOf = new Map(items.map((p) => [partitionId(p), p.offset]));
  const answers = new Map<string, Answer>();
  for (const { topicName, partitions } of responses) {
    for (const data of partitions) {
      const id = partitionId({ topic: topicName, partition: data.partition });
      const from = offsetOf.get(id);
      if (from === undefined) continue;
      answers.set(id, answerOf(new BatchOf(topicName, String(from), data), data, from));
    }
  }
  return answers;
}

/** What one partition's fetch says of the record at `from`. */
function answerOf(batch: KafkaBatch, data: FetchedPartition, from: number): Answer {
  const first = batch.messages[0];
  if (first !== undefined) return { kind: 'found', timestamp: Number(first.timestamp) };
  const stable = Number(data.lastStableOffset ?? -1);
  const readable = stable >= 0 ? stable : Number(data.highWatermark);
  if (readable <= from) return { kind: 'none' };
  const lastRaw = batch.rawMessages[batch.rawMessages.length - 1];
  // Only aborted records or markers: ask again past them. Nothing at all: a batch too large for the room.
  return { kind: 'again', from: lastRaw === undefined ? from : Math.max(from, Number(lastRaw.offset) + 1) };
}

function clusterOf(kafka: Kafka): Cluster {
  const create = Object.getOwnPropertySymbols(kafka).find(
    (s) => s.description === 'private:Kafka:createCluster',
  );
  if (create === undefined)
    throw new DrainError('this kafkajs has no cluster to read record times with', { retriable: false });
  const make = (kafka as unknown as Record<symbol, (o: object) => Cluster>)[create]!;
  return make({ allowAutoTopicCreation: false, isolationLevel: readCommitted });
}
