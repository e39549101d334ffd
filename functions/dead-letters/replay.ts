import { isDeadLetter, type RowShape, toRow, userColumns } from '../drain/records.js';
import type { Rules } from '../drain/rules.js';
import type { KafkaRecord, RowToWrite, Sink } from '../drain/types.js';
import type { PulledLetter } from './pubsub-subscription.js';

export interface ReplayOutcome {
  replayed: number;
  stillFailing: { origin: string; reason: string }[];
}

/** The Kafka record a dead letter came from, rebuilt from its attributes; undefined if it cannot be. */
export function recordOf(letter: Pick<PulledLetter, 'data' | 'attributes'>): KafkaRecord | undefined {
  const a = letter.attributes;
  const partition = Number(a.source_partition);
  const offset = Number(a.source_offset);
  const timestamp = Date.parse(a.source_timestamp ?? '');
  if (!a.source_topic || !Number.isInteger(partition) || !Number.isInteger(offset) || Number.isNaN(timestamp))
    return undefined;
  return {
    topic: a.source_topic,
    partition,
    offset,
    timestamp,
    key: a.key_base64 === undefined ? null : Buffer.from(a.key_base64, 'base64'),
    value: letter.data,
    headers: {},
  };
}

/**
 * Dead letters through the current schema and rules again. Those that now pass are written through the
 * same idempotent path as the drain (keyed by their original topic, partition and offset, so replaying
 * twice inserts once in merge mode) and acknowledged only once durable; those that still fail are left in
 * the subscription, with their new reason reported. `dryRun` writes and acknowledges nothing.
 */
export async function replayDeadLetters(
  deps: {
    pull: (max: number) => Promise<PulledLetter[]>;
    sink: Sink;
    rules?: Rules;
    shape: RowShape;
    now: () => Date;
    print: (line: string) => void;
  },
  options: { dryRun: boolean; max: number },
): Promise<ReplayOutcome> {
  const outcome: ReplayOutcome = { replayed: 0, stillFailing: [] };
  const left: PulledLetter[] = [];
  try {
    while (outcome.replayed + outcome.stillFailing.length < options.max) {
      const letters = await deps.pull(
        Math.min(500, options.max - outcome.replayed - outcome.stillFailing.length),
      );
      if (letters.length === 0) break;
      const passing: { letter: PulledLetter; row: RowToWrite }[] = [];
      for (const letter of letters) {
        const record = recordOf(letter);
        const origin = record ? `${record.topic}:${record.partition}:${record.offset}` : 'unknown origin';
        const reason = await failure(record, letter);
        if (reason !== undefined) {
          outcome.stillFailing.push({ origin, reason });
          deps.print(`still failing ${origin}: ${reason}`);
          left.push(letter);
        } else {
          passing.push({ letter, row: toRow(record!, deps.now(), deps.shape) as RowToWrite });
        }
      }
      if (options.dryRun) {
        for (const p of passing) deps.print(`would replay ${p.row.rowKey}`);
        outcome.replayed += passing.length;
        left.push(...passing.map((p) => p.letter));
        continue;
      }
      const results = passing.length === 0 ? [] : await deps.sink.write(passing.map((p) => p.row));
      for (const [i, p] of passing.entries()) {
        const result = results[i]!;
        if (result.ok) {
          await p.letter.ack();
          outcome.replayed++;
        } else {
          outcome.stillFailing.push({ origin: p.row.rowKey, reason: result.reason });
          left.push(p.letter);
        }
      }
    }
  } finally {
    // What is left goes back to the subscription at once, for the next replay or for an operator.
    await Promise.all(left.map((l) => l.release()));
  }
  return outcome;

  async function failure(record: KafkaRecord | undefined, letter: PulledLetter): Promise<string | undefined> {
    if (record === undefined) return 'the dead letter does not say where it came from';
    if (letter.attributes.value_size !== undefined) return 'the original value was too large to keep whole';
    const row = toRow(record, deps.now(), deps.shape);
    if (isDeadLetter(row)) return `${row.kind}: ${row.message}`;
    if (deps.rules === undefined) return undefined;
    const broken = await deps.rules.check(userColumns(row.row), record);
    return broken === undefined ? undefined : `rule: ${broken}`;
  }
}
