/**
 * A replayed range (storage-write mode, after an operator moved a checkpoint back): the offsets the target
 * and error tables still hold (the same offset with the same Kafka timestamp) are counted, not written
 * again. Pure, so that the split is unit-tested.
 */

import type { KafkaRecord } from '../../kernel/records.js';
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
