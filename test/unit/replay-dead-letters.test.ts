/**
 * The dead-letter replay's order: rows durable, then the replay log, then the acknowledgement; a replay
 * killed between them leaves its letters to the next one, which writes nothing twice and records them.
 */
import { afterEach, describe, expect, test } from 'vitest';
import type { ReplayedLetter } from '../../functions/checkpoints/replay-log.js';
import type { PulledLetter } from '../../functions/dead-letters/pubsub-subscription.js';
import { replayDeadLetters } from '../../functions/dead-letters/replay.js';
import { armCrashPoints } from '../../functions/kernel/crash-points.js';
import type { RowToInsert } from '../../functions/kernel/records.js';

afterEach(() => armCrashPoints(undefined));

/** A subscription of letters whose acknowledgements and releases are kept, as Pub/Sub would. */
function subscription(offsets: readonly number[], events: string[]) {
  const waiting = new Set(offsets);
  const letter = (offset: number): PulledLetter => ({
    data: Buffer.from(JSON.stringify({ n: offset })),
    attributes: {
      source_topic: 't',
      source_partition: '0',
      source_offset: String(offset),
      source_timestamp: new Date(1_700_000_000_000 + offset).toISOString(),
    },
    ack: async () => {
      events.push(`ack ${offset}`);
      waiting.delete(offset);
    },
    release: async () => {
      events.push(`release ${offset}`);
    },
  });
  let delivered = false;
  return {
    waiting,
    /** One delivery of what waits, then nothing (as a pull that returns at once). */
    pull: async () => {
      if (delivered) return [];
      delivered = true;
      return [...waiting].map(letter);
    },
    redeliver: () => {
      delivered = false;
    },
  };
}

function world() {
  const events: string[] = [];
  const table = new Map<string, number>();
  const recorded: ReplayedLetter[] = [];
  const sink = {
    async write(rows: readonly RowToInsert[]) {
      for (const r of rows) table.set(r.rowKey, (table.get(r.rowKey) ?? 0) + 1);
      events.push(`write ${rows.length}`);
      return rows.map((r) =>
        r.rowKey.endsWith(':3') ? { ok: false as const, reason: 'refused' } : { ok: true as const },
      );
    },
  };
  const target = { table: 'd.events', sink, shape: { fields: [], unknownFields: 'ignore' as const } };
  const deps = (pull: () => Promise<PulledLetter[]>) => ({
    pull,
    target: async () => target,
    now: () => new Date(1_800_000_000_000),
    print: () => {},
    recordReplayed: async (letters: readonly ReplayedLetter[]) => {
      events.push(`record ${letters.map((l) => l.offset).join(',')}`);
      recorded.push(...letters);
    },
  });
  return { events, table, recorded, deps };
}

describe('replay-dead-letters', () => {
  test('rows durable, then the replay log, then the acknowledgements; a refused row is neither recorded nor acknowledged', async () => {
    const { events, recorded, deps } = world();
    const letters = subscription([1, 2, 3], events);
    const outcome = await replayDeadLetters(deps(letters.pull), { dryRun: false, max: 100 });
    expect(events).toEqual(['write 3', 'record 1,2', 'ack 1', 'ack 2', 'release 3']);
    expect(recorded).toEqual([
      expect.objectContaining({ topic: 't', partition: 0, offset: 1, table: 'd.events' }),
      expect.objectContaining({ topic: 't', partition: 0, offset: 2, table: 'd.events' }),
    ]);
    expect(outcome.replayed).toBe(2);
    expect(outcome.replayedByPartition).toEqual(new Map([['t:0', 2]]));
    expect(outcome.stillFailing).toEqual([{ origin: 't:0:3', reason: 'refused' }]);
  });

  test('killed after its rows are durable: nothing recorded or acknowledged; the next replay records them', async () => {
    const { events, table, recorded, deps } = world();
    const letters = subscription([1, 2], events);
    const killed = new Error('SIGKILL');
    armCrashPoints((point) => {
      if (point === 'after-replay-write') throw killed;
    });
    await expect(replayDeadLetters(deps(letters.pull), { dryRun: false, max: 100 })).rejects.toBe(killed);
    expect(recorded).toEqual([]);
    expect([...letters.waiting]).toEqual([1, 2]);

    armCrashPoints(undefined);
    letters.redeliver(); // the acknowledgement deadline passed: Pub/Sub delivers them again
    const again = await replayDeadLetters(deps(letters.pull), { dryRun: false, max: 100 });
    expect(again.replayed).toBe(2);
    expect(recorded.map((l) => l.offset)).toEqual([1, 2]);
    expect([...letters.waiting]).toEqual([]);
    // Written twice to the sink, which is idempotent by origin (MERGE); the log holds each letter once.
    expect(table.get('t:0:1')).toBe(2);
  });

  test('a dry run writes, records and acknowledges nothing', async () => {
    const { events, recorded, deps } = world();
    const letters = subscription([1], events);
    const outcome = await replayDeadLetters(deps(letters.pull), { dryRun: true, max: 100 });
    expect(outcome.replayed).toBe(1);
    expect(recorded).toEqual([]);
    expect(events).toEqual(['release 1']);
  });
});
