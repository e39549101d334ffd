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
  /** Rows written, by `table rowKey`. */
  const table = new Map<string, number>();
  const recorded: ReplayedLetter[] = [];
  /** The replay log, by origin. */
  const log = new Map<string, ReplayedLetter>();
  const key = (l: { topic: string; partition: number; offset: number }) =>
    `${l.topic}:${l.partition}:${l.offset}`;
  const targets = new Map<string, ReturnType<typeof makeTarget>>();
  const targetOf = (name: string) => targets.get(name) ?? targets.set(name, makeTarget(name)).get(name)!;
  const makeTarget = (name: string) => ({
    table: name,
    sink: {
      async write(rows: readonly RowToInsert[]) {
        for (const r of rows.filter((r) => !r.rowKey.endsWith(':3')))
          table.set(`${name} ${r.rowKey}`, (table.get(`${name} ${r.rowKey}`) ?? 0) + 1);
        events.push(`write ${rows.length}`);
        return rows.map((r) =>
          r.rowKey.endsWith(':3') ? { ok: false as const, reason: 'refused' } : { ok: true as const },
        );
      },
    },
    shape: { fields: [], unknownFields: 'ignore' as const },
  });
  /** The route's table: changed by a test between replays. */
  const route = { table: 'd.events' };
  const deps = (pull: () => Promise<PulledLetter[]>) => ({
    pull,
    target: async () => targetOf(route.table),
    now: () => new Date(1_800_000_000_000),
    print: () => {},
    // The last release's port (a replay recorded its letters once, after the write), so that these tests
    // can be run against it.
    recordReplayed: async (letters: readonly ReplayedLetter[]) => {
      events.push(`record ${letters.map((l) => l.offset).join(',')}`);
      recorded.push(...letters);
    },
    log: {
      at: async (letters: readonly { topic: string; partition: number; offset: number }[]) =>
        new Map(letters.filter((l) => log.has(key(l))).map((l) => [key(l), log.get(key(l))!])),
      claim: async (letters: readonly ReplayedLetter[]) => {
        const held = new Map(letters.filter((l) => log.has(key(l))).map((l) => [key(l), log.get(key(l))!]));
        const fresh = letters.filter((l) => !log.has(key(l)));
        if (fresh.length > 0) events.push(`begin ${fresh.map((l) => l.offset).join(',')}`);
        for (const l of fresh) log.set(key(l), { ...l, pending: true });
        return held;
      },
      done: async (letters: readonly ReplayedLetter[]) => {
        events.push(`record ${letters.map((l) => l.offset).join(',')}`);
        recorded.push(...letters);
        for (const l of letters) log.set(key(l), l);
      },
      forget: async (letters: readonly { topic: string; partition: number; offset: number }[]) => {
        for (const l of letters) if (log.get(key(l))?.pending) log.delete(key(l));
      },
    },
  });
  /** Where each letter's row is: `table rowKey` → times written. */
  const rowsIn = (name: string) =>
    [...table.keys()].filter((k) => k.startsWith(`${name} `)).map((k) => k.slice(name.length + 1));
  return { events, table, recorded, log, route, rowsIn, deps };
}

describe('replay-dead-letters', () => {
  test('rows durable, then the replay log, then the acknowledgements; a refused row is neither recorded nor acknowledged', async () => {
    const { events, recorded, deps } = world();
    const letters = subscription([1, 2, 3], events);
    const outcome = await replayDeadLetters(deps(letters.pull), { dryRun: false, max: 100 });
    expect(events).toEqual(['begin 1,2,3', 'write 3', 'record 1,2', 'ack 1', 'ack 2', 'release 3']);
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
    expect(table.get('d.events t:0:1')).toBe(2);
  });

  test('a dry run writes, records and acknowledges nothing', async () => {
    const { events, recorded, deps } = world();
    const letters = subscription([1], events);
    const outcome = await replayDeadLetters(deps(letters.pull), { dryRun: true, max: 100 });
    expect(outcome.replayed).toBe(1);
    expect(recorded).toEqual([]);
    expect(events).toEqual(['release 1']);
  });

  test('killed after its write, the routes changed, replayed again: refused naming both tables, never a row in two (finding 6 of #77)', async () => {
    const { events, recorded, log, route, rowsIn, deps } = world();
    const letters = subscription([1, 2, 3], events);
    const killed = new Error('SIGKILL');
    armCrashPoints((point) => {
      if (point === 'after-replay-write') throw killed;
    });
    await expect(replayDeadLetters(deps(letters.pull), { dryRun: false, max: 100 })).rejects.toBe(killed);
    armCrashPoints(undefined);
    expect(rowsIn('d.events')).toEqual(['t:0:1', 't:0:2']);

    // An operator moves the route to another dataset; the letters come back.
    route.table = 'd_eu.events';
    letters.redeliver();
    const moved = await replayDeadLetters(deps(letters.pull), { dryRun: false, max: 100 });
    expect(rowsIn('d_eu.events')).toEqual([]); // 3 was refused by its table, so it is in neither
    expect(rowsIn('d.events')).toEqual(['t:0:1', 't:0:2']);
    expect(moved.replayed).toBe(0);
    expect(moved.stillFailing.map((f) => f.origin)).toEqual(['t:0:1', 't:0:2', 't:0:3']);
    expect(moved.stillFailing[0]!.reason).toMatch(
      /began to write it into d\.events.*routes now send it to d_eu\.events: refused/,
    );
    expect(moved.stillFailing[2]!.reason).toBe('refused'); // its row went nowhere: no log entry holds it
    expect([...letters.waiting].sort()).toEqual([1, 2, 3]);
    expect(recorded).toEqual([]);

    // The route restored: the rows stay where they are, recorded there, the letters acknowledged.
    route.table = 'd.events';
    letters.redeliver();
    const back = await replayDeadLetters(deps(letters.pull), { dryRun: false, max: 100 });
    expect(back.replayed).toBe(2);
    expect(rowsIn('d_eu.events')).toEqual([]);
    expect(recorded.map((l) => `${l.table} ${l.offset}`)).toEqual(['d.events 1', 'd.events 2']);
    expect([...log.values()].map((l) => `${l.table} ${l.offset} ${l.pending === true}`)).toEqual([
      'd.events 1 false',
      'd.events 2 false',
    ]);
    expect([...letters.waiting]).toEqual([3]);
  });

  test('a letter Pub/Sub delivers twice in one pull: one row, one log entry, both copies acknowledged', async () => {
    const { events, table, recorded, deps } = world();
    const letters = subscription([1], events);
    const twice = async () => [...(await letters.pull()), ...(letters.redeliver(), await letters.pull())];
    const outcome = await replayDeadLetters(deps(twice), { dryRun: false, max: 100 });
    expect(outcome.replayed).toBe(1);
    expect(table.get('d.events t:0:1')).toBe(1);
    expect(recorded.map((l) => l.offset)).toEqual([1]);
    expect(events.filter((e) => e.startsWith('ack'))).toEqual(['ack 1', 'ack 1']);
  });

  test('a letter durable in one table, its route moved, delivered again: refused, still one row', async () => {
    const { events, route, rowsIn, deps } = world();
    const letters = subscription([1], events);
    await replayDeadLetters(deps(letters.pull), { dryRun: false, max: 100 });
    // Pub/Sub delivers at least once: an acknowledged letter can come again.
    letters.waiting.add(1);
    route.table = 'd_eu.events';
    letters.redeliver();
    const again = await replayDeadLetters(deps(letters.pull), { dryRun: false, max: 100 });
    expect(again.stillFailing[0]!.reason).toMatch(/wrote it into d\.events.*d_eu\.events/);
    expect(rowsIn('d_eu.events')).toEqual([]);
    expect(rowsIn('d.events')).toEqual(['t:0:1']);
  });
});
