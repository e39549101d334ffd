/**
 * The replay log on the Firestore emulator: two replays claiming the same letters at once (one takes each,
 * the other finds its entry), and a replay forgetting only its own pending entries.
 */
import { Firestore } from '@google-cloud/firestore';
import { afterAll, expect, test } from 'vitest';
import {
  claimReplays,
  forgetReplays,
  recordReplays,
  replaysAt,
  replaysOf,
} from '../../functions/checkpoints/replay-log.js';
import { stackEnv, uniqueName } from '../support/stack.js';

const [host, port] = stackEnv().FIRESTORE_EMULATOR_HOST.split(':') as [string, string];
const db = new Firestore({
  projectId: stackEnv().GOOGLE_CLOUD_PROJECT,
  host,
  port: Number(port),
  ssl: false,
});
afterAll(() => db.terminate());

const letters = (table: string) =>
  Array.from({ length: 30 }, (_, i) => ({ topic: 't', partition: i % 3, offset: i, table }));

test('two replays claim the same letters at once: each letter is taken by one, the other finds its table', async () => {
  const pipeline = uniqueName('replay-log');
  const [a, b] = await Promise.all([
    claimReplays(db, pipeline, letters('d.x'), 'replay-a'),
    claimReplays(db, pipeline, letters('d_eu.x'), 'replay-b'),
  ]);
  // Every letter is held by exactly one replay: the one that found nothing took it.
  for (const l of letters('')) {
    const key = `t:${l.partition}:${l.offset}`;
    expect(a.has(key) !== b.has(key), key).toBe(true);
  }
  const logged = await replaysOf(db, pipeline);
  expect(logged).toHaveLength(30);
  for (const l of logged) {
    expect(l.pending).toBe(true);
    // What the losing replay found is what the winner recorded.
    const found = (a.get(`t:${l.partition}:${l.offset}`) ?? b.get(`t:${l.partition}:${l.offset}`))!;
    expect(found.table).toBe(l.table);
  }
});

test('durable after the write; forgetting removes only this replay’s pending entries', async () => {
  const pipeline = uniqueName('replay-log');
  const [one, two, three] = letters('d.x');
  expect((await claimReplays(db, pipeline, [one!, two!], 'replay-a')).size).toBe(0);
  await recordReplays(db, pipeline, [one!], 'replay-a');
  // Another replay's refused write of two (pending, replay-a's) and of one (durable) deletes neither.
  await forgetReplays(db, pipeline, [one!, two!], 'replay-b');
  // replay-a's refused write of two and three (never claimed) deletes only two.
  await forgetReplays(db, pipeline, [one!, two!, three!], 'replay-a');
  const at = await replaysAt(db, pipeline, [one!, two!, three!]);
  expect([...at.values()]).toEqual([{ topic: 't', partition: 0, offset: 0, table: 'd.x' }]);
});
