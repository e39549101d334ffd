import { afterAll, expect, test } from 'vitest';
import { stackClients, uniqueName } from '../support/stack.js';

const clients = await stackClients();
afterAll(() => clients.close());

test('firestore: of two transactions contending on one document, exactly one wins', async () => {
  const ref = clients.firestore.collection(uniqueName('smoke')).doc('lease');
  await ref.set({ owner: null });
  const claim = (owner: string) =>
    clients.firestore.runTransaction(async (tx) => {
      const current = (await tx.get(ref)).data()?.owner ?? null;
      if (current !== null) return false;
      tx.update(ref, { owner });
      return true;
    });
  const results = await Promise.all([claim('a'), claim('b')]);
  expect(results.filter(Boolean)).toHaveLength(1);
  const winner = results[0] ? 'a' : 'b';
  expect((await ref.get()).data()).toEqual({ owner: winner });
});
