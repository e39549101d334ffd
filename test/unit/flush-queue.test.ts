import { describe, expect, test } from 'vitest';
import { createFlushQueue, type Waiting } from '../../functions/kernel/flush-queue.js';

function deferred() {
  let release!: () => void;
  const promise = new Promise<void>((resolve) => {
    release = resolve;
  });
  return { promise, release };
}

describe('the flush queue', () => {
  test('items handed in while a flush runs wait, and the next flush takes them together', async () => {
    const groups: number[][] = [];
    const gate = deferred();
    const queue = createFlushQueue<number, string>(async (members) => {
      groups.push(members.map((m) => m.item));
      if (groups.length === 1) await gate.promise;
      for (const m of members) m.resolve(`#${m.item}`);
    });
    const first = queue.add(1);
    const rest = [queue.add(2), queue.add(3), queue.add(4)];
    expect(queue.busy).toBe(true);
    gate.release();
    expect(await Promise.all([first, ...rest])).toEqual(['#1', '#2', '#3', '#4']);
    expect(groups).toEqual([[1], [2, 3, 4]]);
    // Not busy once every caller has its answer (a caller that closes right after sees it so).
    expect(queue.busy).toBe(false);
  });

  /** The groups a queue with this limit makes of `items`, handed in while its first flush is held. */
  async function groupsOf(
    items: number[],
    limit: Parameters<typeof createFlushQueue<number, number>>[1],
  ): Promise<number[][]> {
    const groups: number[][] = [];
    const gate = deferred();
    const queue = createFlushQueue<number, number>(async (members) => {
      groups.push(members.map((m) => m.item));
      if (groups.length === 1) await gate.promise;
      for (const m of members) m.resolve(m.item);
    }, limit);
    const all = items.map((n) => queue.add(n));
    gate.release();
    await Promise.all(all);
    return groups;
  }

  test('a flush takes waiting items up to its weight (at least one, however heavy)', async () => {
    expect(await groupsOf([1, 6, 4, 3, 25, 2], { weigh: (n) => n, maxWeight: 10 })).toEqual([
      [1],
      [6, 4],
      [3],
      [25],
      [2],
    ]);
  });

  test('a flush takes at most its number of items', async () => {
    expect(await groupsOf([1, 2, 3, 4, 5, 6], { weigh: () => 1, maxWeight: 100, maxItems: 2 })).toEqual([
      [1],
      [2, 3],
      [4, 5],
      [6],
    ]);
  });

  test('a flush may fail some members and keep the others; one that throws fails those it left unanswered', async () => {
    const queue = createFlushQueue<string, string>(async (members: Waiting<string, string>[]) => {
      for (const m of members) {
        if (m.item === 'fenced') m.reject(new Error('fenced'));
        else if (m.item === 'ok') m.resolve('written');
      }
      if (members.some((m) => m.item === 'boom')) throw new Error('the flush failed');
    });
    const gate = queue.add('ok');
    await gate;
    const results = await Promise.allSettled([queue.add('ok'), queue.add('fenced'), queue.add('boom')]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([
      'written',
      'fenced',
      'the flush failed',
    ]);
  });
});
