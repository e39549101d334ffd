import type { ReplayedLetter } from '../checkpoints/replay-log.js';
import type { ValueFormat } from '../formats/value-format.js';
import { crashPoint } from '../kernel/crash-points.js';
import type { Sink } from '../kernel/ports.js';
import type { KafkaRecord, Position, RowResult, RowToWrite } from '../kernel/records.js';
import { rowOf } from '../records/classify.js';
import { isDeadLetter, type RowShape, userColumns } from '../records/records.js';
import type { Rules } from '../records/rules.js';
import type { Transform } from '../records/transform.js';
import { type KeptLetter, lacksWhatTheErrorTableKeeps, originOf, recordOf } from './letter-record.js';
import type { PulledLetter } from './pubsub-subscription.js';

/** Where a dead letter of a topic goes back to: its route's table, schema and rules. */
export interface ReplayTarget {
  /** The route's table (`dataset.table`), as the replay log names it. */
  readonly table: string;
  readonly sink: Sink;
  readonly rules?: Rules;
  /** The route's transform: a dead letter goes the records' way again, transform included. */
  readonly transform?: Transform;
  readonly shape: RowShape;
  /** Values that are not JSON text: decoded as the drain decodes them. */
  readonly format?: ValueFormat;
}

/** The replay log as a replay uses it (`checkpoints/replay-log.ts`), by `topic:partition:offset`. */
export interface ReplayLog {
  /** What earlier replays recorded of these letters (a dry run's look). */
  at: (letters: readonly Position[]) => Promise<Map<string, ReplayedLetter>>;
  /**
   * In one step, what earlier replays recorded of these letters, and, for each they did not, this replay's
   * pending entry naming its table (before the write): two replays at once cannot both take a letter.
   */
  claim: (letters: readonly ReplayedLetter[]) => Promise<Map<string, ReplayedLetter>>;
  /** The rows are durable: recorded before the letters are acknowledged. */
  done: (letters: readonly ReplayedLetter[]) => Promise<void>;
  /** Writes refused: this replay's pending entries of them go (their rows are in no table). */
  forget: (letters: readonly Position[]) => Promise<void>;
}

export interface ReplayOutcome {
  replayed: number;
  /** Per partition (`topic:partition`), how many letters became rows. */
  replayedByPartition: Map<string, number>;
  stillFailing: { origin: string; reason: string }[];
}

/** A letter that makes a row now, with its row and target. */
interface Passing {
  readonly letter: PulledLetter;
  readonly row: RowToWrite;
  readonly target: ReplayTarget;
}

/** The first letter of each origin, and the others (Pub/Sub delivers at least once: twice in one pull). */
function oneAnOrigin(passing: readonly Passing[]): { unique: Passing[]; twins: Passing[] } {
  const seen = new Set<string>();
  const unique: Passing[] = [];
  const twins: Passing[] = [];
  for (const p of passing) {
    (seen.has(p.row.rowKey) ? twins : unique).push(p);
    seen.add(p.row.rowKey);
  }
  return { unique, twins };
}

/** A letter's replay-log entry: its origin and its row's table. */
function logged({ row: { record }, target }: { row: RowToWrite; target: ReplayTarget }): ReplayedLetter {
  return { topic: record.topic, partition: record.partition, offset: record.offset, table: target.table };
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
    /**
     * The error table's copies of letters that lack their key or headers (by `topic:partition:offset`);
     * absent where the mode keeps none (insert-all: the table holds what Pub/Sub had).
     */
    kept?: (origins: readonly Position[]) => Promise<Map<string, KeptLetter>>;
    /** The target of a letter's record (its route); undefined when no route takes it now. */
    target: (record: KafkaRecord) => Promise<ReplayTarget | undefined>;
    now: () => Date;
    print: (line: string) => void;
    /** The replay log: where earlier replays wrote letters, and this one's, before and after its writes. */
    log: ReplayLog;
  },
  options: { dryRun: boolean; max: number },
): Promise<ReplayOutcome> {
  const outcome: ReplayOutcome = { replayed: 0, replayedByPartition: new Map(), stillFailing: [] };
  const left: PulledLetter[] = [];
  try {
    while (outcome.replayed + outcome.stillFailing.length < options.max) {
      const letters = await deps.pull(
        Math.min(500, options.max - outcome.replayed - outcome.stillFailing.length),
      );
      if (letters.length === 0) break;
      const { unique, twins } = oneAnOrigin(await passingOf(letters));
      // The tables first, pending: a replay killed after its write finds them, whatever the routes say then.
      const earlier = options.dryRun
        ? await deps.log.at(unique.map(({ row: { record } }) => record))
        : await deps.log.claim(unique.map(logged));
      const passing = sameTables(unique, earlier);
      if (options.dryRun) {
        for (const p of passing) deps.print(`would replay ${p.row.rowKey}`);
        outcome.replayed += passing.length;
        left.push(...passing.map((p) => p.letter), ...twins.map((t) => t.letter));
        continue;
      }
      const { durable, refused } = await written(passing);
      await deps.log.forget(
        refused.filter((p) => !earlier.has(p.row.rowKey)).map(({ row: { record } }) => record),
      );
      // Crash tests: the rows are durable, their record and acknowledgement not yet made.
      crashPoint('after-replay-write');
      // The record before the acknowledgement: a replay that dies between them leaves the letters in the
      // subscription, and the next replay writes them again into the tables the log names (nothing twice:
      // idempotent by origin) and records them then.
      await deps.log.done(durable.map(logged));
      await acknowledge(durable, twins);
    }
  } finally {
    // What is left goes back to the subscription at once, for the next replay or for an operator.
    await Promise.all(left.map((l) => l.release()));
  }
  return outcome;

  /** One write per table (route), each idempotent by origin; the refused counted as still failing. */
  async function written(passing: readonly Passing[]) {
    const results = new Map<Passing, RowResult>();
    for (const target of new Set(passing.map((p) => p.target))) {
      const group = passing.filter((p) => p.target === target);
      const rows = await target.sink.write(group.map((p) => p.row));
      for (const [i, p] of group.entries()) results.set(p, rows[i]!);
    }
    const durable = passing.filter((p) => results.get(p)!.ok);
    const refused = passing.filter((p) => !durable.includes(p));
    for (const p of refused) {
      const result = results.get(p) as { ok: false; reason: string };
      outcome.stillFailing.push({ origin: p.row.rowKey, reason: result.reason });
      left.push(p.letter);
    }
    return { durable, refused };
  }

  /** The durable letters acknowledged and counted; a twin Pub/Sub delivered in the same pull goes as its first went. */
  async function acknowledge(durable: readonly Passing[], twins: readonly Passing[]) {
    const acknowledged = new Set<string>();
    for (const p of durable) {
      await p.letter.ack();
      acknowledged.add(p.row.rowKey);
      outcome.replayed++;
      const id = `${p.row.record.topic}:${p.row.record.partition}`;
      outcome.replayedByPartition.set(id, (outcome.replayedByPartition.get(id) ?? 0) + 1);
    }
    for (const t of twins) {
      if (acknowledged.has(t.row.rowKey)) await t.letter.ack();
      else left.push(t.letter);
    }
  }

  /**
   * The letters whose tables are those an earlier replay wrote them into, if any; a letter the log places
   * in another table (a replay killed after its write, the routes changed since) is refused, naming both:
   * written again, it would be in two tables.
   */
  function sameTables(passing: Passing[], earlier: ReadonlyMap<string, ReplayedLetter>): Passing[] {
    return passing.filter((p) => {
      const was = earlier.get(p.row.rowKey);
      if (was === undefined || was.table === p.target.table) return true;
      const reason = was.pending
        ? `an earlier replay began to write it into ${was.table} (and was stopped before it knew the row durable), ` +
          `and the routes now send it to ${p.target.table}: refused, not written into a second table (restore the ` +
          `route; or, once ${was.table} is known to lack its row, delete its replay-log entry)`
        : `an earlier replay wrote it into ${was.table}, and the routes now send it to ${p.target.table}: ` +
          `refused, not written into a second table (restore the route, or acknowledge the letter: its row is in ${was.table})`;
      outcome.stillFailing.push({ origin: p.row.rowKey, reason });
      deps.print(`still failing ${p.row.rowKey}: ${reason}`);
      left.push(p.letter);
      return false;
    });
  }

  /** The letters that make rows now, with their rows and targets; the others counted as still failing. */
  async function passingOf(letters: readonly PulledLetter[]) {
    const passing: Passing[] = [];
    const kept = await keptCopies(letters);
    for (const letter of letters) {
      const rebuilt = rebuild(letter, kept);
      const record = typeof rebuilt === 'string' ? undefined : rebuilt;
      const origin = originOf(letter);
      const target = record === undefined ? undefined : await deps.target(record);
      const made =
        typeof rebuilt === 'string'
          ? rebuilt
          : record !== undefined && target === undefined
            ? `no route takes this record of topic "${record.topic}"`
            : await rowFor(record, letter, target!);
      if (typeof made === 'string') {
        outcome.stillFailing.push({ origin, reason: made });
        deps.print(`still failing ${origin}: ${made}`);
        left.push(letter);
      } else {
        passing.push({ letter, row: made, target: target! });
      }
    }
    return passing;
  }

  /** The error table's copies of the letters that need them, by origin. */
  async function keptCopies(letters: readonly PulledLetter[]): Promise<Map<string, KeptLetter>> {
    const wanting = letters.filter(
      (l) => lacksWhatTheErrorTableKeeps(l.attributes) && recordOf(l) !== undefined,
    );
    if (wanting.length === 0 || deps.kept === undefined) return new Map();
    return deps.kept(
      wanting.map(({ attributes: a }) => ({
        topic: a.source_topic!,
        partition: Number(a.source_partition),
        offset: Number(a.source_offset),
      })),
    );
  }

  /** The letter's record, its key and headers from the error table where the letter lacks them. */
  function rebuild(letter: PulledLetter, kept: Map<string, KeptLetter>): KafkaRecord | string | undefined {
    const rebuilt = recordOf(letter);
    if (typeof rebuilt !== 'string' || !lacksWhatTheErrorTableKeeps(letter.attributes)) return rebuilt;
    if (deps.kept === undefined)
      return `${rebuilt} (in insert-all mode the error table keeps only what the letter holds)`;
    const copy = kept.get(originOf(letter));
    if (copy === undefined) return `${rebuilt}, and the error table holds no copy of it`;
    return recordOf(letter, copy);
  }

  /** The letter's row as the drain would make it now, or why it still fails. */
  async function rowFor(
    record: KafkaRecord | undefined,
    letter: PulledLetter,
    target: ReplayTarget,
  ): Promise<RowToWrite | string> {
    if (record === undefined) return 'the dead letter does not say where it came from';
    if (letter.attributes.value_size !== undefined) return 'the original value was too large to keep whole';
    await target.format?.prepare([record]);
    const row = await rowOf(record, deps.now(), target);
    if (row === 'filtered') return 'the transform now drops it (nothing to write)';
    if (isDeadLetter(row)) return `${row.kind}: ${row.message}`;
    if (target.rules === undefined) return row;
    const broken = await target.rules.check(userColumns(row.row), record);
    return broken === undefined ? row : `rule: ${broken}`;
  }
}
