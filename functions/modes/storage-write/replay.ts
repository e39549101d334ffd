/**
 * A replayed range (storage-write and load modes, after an operator moved a checkpoint back): the offsets the target
 * and error tables still hold (the same offset with the same Kafka timestamp) are counted, not written
 * again. Pure, so that the split is unit-tested.
 */

import type { Logger } from '../../kernel/logger.js';
import type { Lease } from '../../kernel/ports.js';
import { type KafkaRecord, type PartitionRef, partitionId } from '../../kernel/records.js';
import type { HeldOffsets } from '../../sinks/contracts.js';

export type Replay = HeldOffsets & { readonly until: number };

/** The batch's records still to write, and how many of the others the tables hold as rows and as letters. */
export function splitReplayed(
  records: readonly KafkaRecord[],
  replay: Replay | undefined,
): { fresh: readonly KafkaRecord[]; heldRows: number; heldLetters: number } {
  if (replay === undefined) return { fresh: records, heldRows: 0, heldLetters: 0 };
  const fresh: KafkaRecord[] = [];
  let heldRows = 0;
  let heldLetters = 0;
  for (const r of records) {
    if (r.offset < replay.until && replay.rows.get(r.offset) === r.timestamp) heldRows++;
    else if (r.offset < replay.until && replay.deadLetters.get(r.offset) === r.timestamp) heldLetters++;
    else fresh.push(r);
  }
  return { fresh, heldRows, heldLetters };
}

/**
 * The replayed ranges of a writer's partitions (per lease epoch): `begin` reads, once per range an operator
 * sent the checkpoint back over, what the tables still hold of it (from the tables themselves: an operator
 * may have deleted rows precisely to have them written again); `of` gives it to the batch's split.
 */
export function createReplays(
  heldOffsets: (partition: PartitionRef, from: number, to: number) => Promise<HeldOffsets>,
  logger: Logger,
) {
  const replays = new Map<string, Replay>();
  const keyOf = (lease: Lease) => `${partitionId(lease)}@${lease.epoch}`;
  return {
    async begin(lease: Lease, from: number, end: number): Promise<void> {
      const until = Math.min(lease.replayUntil ?? 0, end);
      if (until <= from) return;
      const held = await heldOffsets(lease, from, until);
      replays.set(keyOf(lease), { ...held, until });
      logger.notice('replaying offsets written before: those the tables still hold are not written again', {
        topic: lease.topic,
        partition: lease.partition,
        from,
        to: until,
        heldRows: held.rows.size,
        heldDeadLetters: held.deadLetters.size,
      });
    },
    of: (lease: Lease): Replay | undefined => replays.get(keyOf(lease)),
  };
}
