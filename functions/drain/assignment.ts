import type { PartitionRef } from '../kernel/records.js';

/** FNV-1a, 32 bits: stable across processes, versions and machines (unlike anything seeded). */
export function stableHash(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/**
 * The task of an execution that prefers a partition: each topic's partitions dealt to the tasks in turn,
 * starting at the task its name hashes to. Every task gets its share of a topic to within one partition
 * (hashing each partition apart gave 4 tasks 3 / 5 / 5 / 3 of 16 partitions and 3 tasks 3 / 1 / 2 of 6,
 * and an execution lasts as long as its busiest task), and a partition's task depends on its topic and
 * number only: a topic that gains partitions moves none of those it had.
 */
export function preferredTask(ref: PartitionRef, taskCount: number): number {
  return (stableHash(ref.topic) + ref.partition) % taskCount;
}

/** The partitions a task of an execution prefers (see `preferredTask`). */
export function ownedBy<T extends PartitionRef>(
  partitions: readonly T[],
  taskIndex: number,
  taskCount: number,
): T[] {
  return partitions.filter((p) => preferredTask(p, taskCount) === taskIndex);
}
