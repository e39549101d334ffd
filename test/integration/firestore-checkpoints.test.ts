import { afterAll, describe, expect, test } from 'vitest';
import { createFirestoreCheckpoints } from '../../functions/checkpoints/firestore-checkpoints.js';
import { FencedError } from '../../functions/drain/errors.js';
import { stackClients, uniqueName } from '../support/stack.js';

const clients = await stackClients();
afterAll(() => clients.close());
const p0 = { topic: 'orders', partition: 0 };

function commitOf(
  lease: Awaited<ReturnType<ReturnType<typeof createFirestoreCheckpoints>['acquire']>>,
  from: number,
  to: number,
) {
  return {
    lease: lease!,
    fromOffset: from,
    nextOffset: to,
    records: to - from,
    rows: to - from,
    deadLetters: 0,
    lastRecordTimestamp: Date.now(),
  };
}

describe('firestore checkpoints', () => {
  test('of two contenders for one lease exactly one wins, with epoch 1', async () => {
    const checkpoints = createFirestoreCheckpoints(clients.firestore, uniqueName('pipe'));
    const [a, b] = await Promise.all([
      checkpoints.acquire(p0, 'run-a', 30_000),
      checkpoints.acquire(p0, 'run-b', 30_000),
    ]);
    const winners = [a, b].filter((l) => l !== undefined);
    expect(winners).toHaveLength(1);
    expect(winners[0]).toMatchObject({ epoch: 1, nextOffset: null });
  });

  test('commit advances the checkpoint and writes the continuity ledger', async () => {
    const pipeline = uniqueName('pipe');
    const checkpoints = createFirestoreCheckpoints(clients.firestore, pipeline);
    const lease = await checkpoints.acquire(p0, 'run-a', 30_000);
    const after = await checkpoints.commit(commitOf(lease, 0, 10), 30_000);
    await checkpoints.commit(commitOf(after, 10, 25), 30_000);
    await checkpoints.release(after);

    const doc = clients.firestore.doc(`pipelines/${pipeline}/partitions/orders~0`);
    expect((await doc.get()).data()).toMatchObject({
      nextOffset: 25,
      leaseOwner: null,
      leaseEpoch: 1,
      rowsWritten: 25,
      commits: 2,
    });
    const ledger = await doc.collection('ledger').orderBy('from').get();
    expect(ledger.docs.map((d) => [d.get('from'), d.get('to'), d.get('epoch')])).toEqual([
      [0, 10, 1],
      [10, 25, 1],
    ]);
    // The next lease starts from the checkpoint, one epoch later.
    expect(await checkpoints.acquire(p0, 'run-b', 30_000)).toMatchObject({ epoch: 2, nextOffset: 25 });
  });

  test('a commit under a lease taken over by another run is fenced', async () => {
    let now = Date.now();
    const checkpoints = createFirestoreCheckpoints(clients.firestore, uniqueName('pipe'), () => now);
    const old = await checkpoints.acquire(p0, 'zombie', 1_000);
    now += 2_000; // the zombie's lease expires
    const fresh = await checkpoints.acquire(p0, 'run-b', 30_000);
    expect(fresh).toMatchObject({ epoch: 2 });
    await expect(checkpoints.commit(commitOf(old, 0, 5), 30_000)).rejects.toBeInstanceOf(FencedError);
    await expect(checkpoints.renew(old!, 30_000)).rejects.toBeInstanceOf(FencedError);
    await checkpoints.commit(commitOf(fresh, 0, 5), 30_000);
    // The zombie's release must not free the new owner's lease.
    await checkpoints.release(old!);
    expect(await checkpoints.acquire(p0, 'run-c', 30_000)).toBeUndefined();
  });

  test('an expired lease cannot commit even if nobody took it over', async () => {
    let now = Date.now();
    const checkpoints = createFirestoreCheckpoints(clients.firestore, uniqueName('pipe'), () => now);
    const lease = await checkpoints.acquire(p0, 'slow', 1_000);
    now += 1_500;
    await expect(checkpoints.commit(commitOf(lease, 0, 5), 30_000)).rejects.toThrow(/expired/);
  });

  test('a commit that does not start at the checkpoint is refused (no gap, no overlap)', async () => {
    const checkpoints = createFirestoreCheckpoints(clients.firestore, uniqueName('pipe'));
    const lease = await checkpoints.acquire(p0, 'run-a', 30_000);
    const after = await checkpoints.commit(commitOf(lease, 0, 10), 30_000);
    await expect(checkpoints.commit(commitOf(after, 12, 20), 30_000)).rejects.toThrow(/is at 10/);
    await expect(checkpoints.commit(commitOf(after, 5, 20), 30_000)).rejects.toThrow(/is at 10/);
  });

  test('intents are recorded in every partition of a flush in one fenced write, all or none; a commit clears them', async () => {
    const pipeline = uniqueName('pipe');
    const checkpoints = createFirestoreCheckpoints(clients.firestore, pipeline);
    const p1 = { topic: 'orders', partition: 1 };
    const a = (await checkpoints.commit(
      commitOf(await checkpoints.acquire(p0, 'run-a', 30_000), 0, 0),
      30_000,
    ))!;
    const b = (await checkpoints.commit(
      commitOf(await checkpoints.acquire(p1, 'run-a', 30_000), 0, 0),
      30_000,
    ))!;
    const intent = (from: number, to: number) => ({
      streams: ['projects/p/datasets/d/tables/t/streams/s1'],
      fromOffset: from,
      nextOffset: to,
      records: to - from,
      rows: to - from,
      deadLetters: 0,
      tombstones: 0,
      lastRecordTimestamp: null,
    });

    // One of the two no longer stands where its intent starts: nothing is written, for either.
    await expect(
      checkpoints.recordIntents(
        [
          { lease: a, intent: intent(0, 10) },
          { lease: b, intent: intent(5, 10) },
        ],
        30_000,
      ),
    ).rejects.toBeInstanceOf(FencedError);
    const doc = (p: number) => clients.firestore.doc(`pipelines/${pipeline}/partitions/orders~${p}`);
    expect((await doc(0).get()).get('intent')).toBeUndefined();

    const [a2, b2] = await checkpoints.recordIntents(
      [
        { lease: a, intent: intent(0, 10) },
        { lease: b, intent: intent(0, 7) },
      ],
      30_000,
    );
    expect((await doc(1).get()).get('intent')).toMatchObject({
      fromOffset: 0,
      nextOffset: 7,
      streams: intent(0, 7).streams,
    });

    // The next holder of the lease finds the intent; a commit clears it and names the streams in the ledger.
    await checkpoints.release(a2!);
    const next = (await checkpoints.acquire(p0, 'run-b', 30_000))!;
    expect(next.intent).toMatchObject({ fromOffset: 0, nextOffset: 10 });
    await checkpoints.commit({ ...commitOf(next, 0, 10), streams: intent(0, 10).streams }, 30_000);
    expect((await doc(0).get()).get('intent')).toBeUndefined();
    const ledger = await doc(0).collection('ledger').get();
    expect(ledger.docs.map((d) => d.get('streams')).filter(Boolean)).toEqual([intent(0, 10).streams]);

    // A run whose lease was taken over cannot record an intent.
    await expect(
      checkpoints.recordIntents([{ lease: a2!, intent: intent(10, 12) }], 30_000),
    ).rejects.toBeInstanceOf(FencedError);
    expect(b2!.intent).toMatchObject({ nextOffset: 7 });
  });
});
