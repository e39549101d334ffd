import type { ValueFormat } from '../formats/value-format.js';
import type { Sink } from '../kernel/ports.js';
import type { KafkaRecord, RowResult, RowToWrite } from '../kernel/records.js';
import { isDeadLetter, type RowShape, toRow, userColumns } from '../records/records.js';
import type { Rules } from '../records/rules.js';
import type { PulledLetter } from './pubsub-subscription.js';

/** Where a dead letter of a topic goes back to: its route's table, schema and rules. */
export interface ReplayTarget {
  readonly sink: Sink;
  readonly rules?: Rules;
  readonly shape: RowShape;
  /** Values that are not JSON text: decoded as the drain decodes them. */
  readonly format?: ValueFormat;
}

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
    /** The target of a topic's letters (its route); undefined when no route takes the topic now. */
    target: (topic: string) => ReplayTarget | undefined;
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
      const passing: { letter: PulledLetter; row: RowToWrite; target: ReplayTarget }[] = [];
      for (const letter of letters) {
        const record = recordOf(letter);
        const origin = record ? `${record.topic}:${record.partition}:${record.offset}` : 'unknown origin';
        const target = record === undefined ? undefined : deps.target(record.topic);
        const reason =
          record !== undefined && target === undefined
            ? `no route takes topic "${record.topic}"`
            : await failure(record, letter, target!);
        if (reason !== undefined) {
          outcome.stillFailing.push({ origin, reason });
          deps.print(`still failing ${origin}: ${reason}`);
          left.push(letter);
        } else {
          passing.push({
            letter,
            row: toRow(record!, deps.now(), target!.shape, target!.format) as RowToWrite,
            target: target!,
          });
        }
      }
      if (options.dryRun) {
        for (const p of passing) deps.print(`would replay ${p.row.rowKey}`);
        outcome.replayed += passing.length;
        left.push(...passing.map((p) => p.letter));
        continue;
      }
      // One write per table (route), each idempotent by origin.
      const results = new Map<(typeof passing)[number], RowResult>();
      for (const target of new Set(passing.map((p) => p.target))) {
        const group = passing.filter((p) => p.target === target);
        const written = await target.sink.write(group.map((p) => p.row));
        for (const [i, p] of group.entries()) results.set(p, written[i]!);
      }
      for (const p of passing) {
        const result = results.get(p)!;
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

  async function failure(
    record: KafkaRecord | undefined,
    letter: PulledLetter,
    target: ReplayTarget,
  ): Promise<string | undefined> {
    if (record === undefined) return 'the dead letter does not say where it came from';
    if (letter.attributes.value_size !== undefined) return 'the original value was too large to keep whole';
    await target.format?.prepare([record]);
    const row = toRow(record, deps.now(), target.shape, target.format);
    if (isDeadLetter(row)) return `${row.kind}: ${row.message}`;
    if (target.rules === undefined) return undefined;
    const broken = await target.rules.check(userColumns(row.row), record);
    return broken === undefined ? undefined : `rule: ${broken}`;
  }
}
