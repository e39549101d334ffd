import type { PartitionRef } from './types.js';

/** FNV-1a, 32 bits: stable across processes, versions and machines (unlike anything seeded). */
export function stableHash(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

export function partitionId(ref: PartitionRef): string {
  return `${ref.topic}~${ref.partition}`;
}

/** The partitions a task of an execution owns: those whose `topic:partition` hashes to its index. */
export function ownedBy<T extends PartitionRef>(
  partitions: readonly T[],
  taskIndex: number,
  taskCount: number,
): T[] {
  return partitions.filter((p) => stableHash(`${p.topic}:${p.partition}`) % taskCount === taskIndex);
}
