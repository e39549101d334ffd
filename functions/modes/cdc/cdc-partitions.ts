import type { Firestore } from '@google-cloud/firestore';
import type { Kafka } from 'kafkajs';
import { DrainError } from '../../kernel/errors.js';
import type { Logger } from '../../kernel/logger.js';

/**
 * cdc mode: a key's changes are ordered by their offsets, which only holds while the key stays in one
 * partition. A topic whose partition count changed (Kafka can only add partitions) moves keys: a key's
 * later changes, in its new partition, would carry lower sequence numbers than its earlier ones in the old
 * one, and BigQuery would keep the older. So each topic's count is recorded at its first cdc run
 * (`pipelines/{id}/cdc-topics/{topic}`), and a run that finds another count stops before it reads anything.
 */
export async function checkPartitionCounts(
  ports: { kafka: Kafka; firestore: Firestore; logger: Logger },
  pipelineId: string,
  topics: readonly string[],
  /** Look only: a topic seen for the first time is not recorded. */
  readOnly = false,
): Promise<void> {
  const admin = ports.kafka.admin();
  await admin.connect();
  let counts: Map<string, number>;
  try {
    const { topics: found } = await admin.fetchTopicMetadata({ topics: [...topics] });
    counts = new Map(found.map((t) => [t.name, t.partitions.length]));
  } finally {
    await admin.disconnect().catch(() => {});
  }
  const collection = ports.firestore.collection('pipelines').doc(pipelineId).collection('cdc-topics');
  for (const [topic, partitions] of counts) {
    const doc = collection.doc(encodeURIComponent(topic));
    const seen = await doc.get();
    if (!seen.exists) {
      if (readOnly) continue;
      await doc.create({ topic, partitions, since: new Date() }).catch((error: unknown) => {
        if ((error as { code?: unknown }).code !== 6) throw error; // ALREADY_EXISTS: another task was first
      });
      continue;
    }
    const before = seen.get('partitions') as number;
    if (before !== partitions) {
      ports.logger.error('a cdc topic was repartitioned', { topic, before, now: partitions });
      throw new DrainError(
        `topic ${topic} had ${before} partitions when cdc mode first drained it and has ${partitions} now: keys may ` +
          'have moved to other partitions, where their later changes carry lower sequence numbers than their ' +
          'earlier ones, and BigQuery would keep the older. Nothing was read. See docs/change-data-capture.md, "Repartitioned topics".',
        { retriable: false, code: 'repartitioned' },
      );
    }
  }
}
