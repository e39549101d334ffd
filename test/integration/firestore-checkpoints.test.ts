import { afterAll, describe, expect, test } from 'vitest';
import { createFirestoreCheckpoints } from '../../functions/checkpoints/firestore-checkpoints.js';
import { FencedError } from '../../functions/kernel/errors.js';
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

/** A storage-write intent for offsets [from, to), its stream named after where it starts. */
function intentOf(from: number, to: number) {
  return {
    streams: [`projects/p/datasets/d/tables/t/streams/s${from}`],
    fromOffset: from,
    nextOffset: to,
    records: to - from,
    rows: to - from,
    deadLetters: 0,
    tombstones: 0,
    lastRecordTimestamp: null,
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

    // One of the two no longer stands where its intent starts: nothing is written, for either.
    await expect(
      checkpoints.recordIntents(
        [
          { lease: a, intent: intentOf(0, 10) },
          { lease: b, intent: intentOf(5, 10) },
        ],
        30_000,
      ),
    ).rejects.toBeInstanceOf(FencedError);
    const doc = (p: number) => clients.firestore.doc(`pipelines/${pipeline}/partitions/orders~${p}`);
    expect((await doc(0).get()).get('intent')).toBeUndefined();

    const [a2, b2] = await checkpoints.recordIntents(
      [
        { lease: a, intent: intentOf(0, 10) },
        { lease: b, intent: intentOf(0, 7) },
      ],
      30_000,
    );
    expect((await doc(1).get()).get('intent')).toMatchObject({
      fromOffset: 0,
      nextOffset: 7,
      streams: intentOf(0, 7).streams,
    });

    // The next holder of the lease finds the intent; a commit clears it and names the streams in the ledger.
    await checkpoints.release(a2!);
    const next = (await checkpoints.acquire(p0, 'run-b', 30_000))!;
    expect(next.intent).toMatchObject({ fromOffset: 0, nextOffset: 10 });
    await checkpoints.commit({ ...commitOf(next, 0, 10), streams: intentOf(0, 10).streams }, 30_000);
    expect((await doc(0).get()).get('intent')).toBeUndefined();
    const ledger = await doc(0).collection('ledger').get();
    expect(ledger.docs.map((d) => d.get('streams')).filter(Boolean)).toEqual([intentOf(0, 10).streams]);

    // A run whose lease was taken over cannot record an intent.
    await expect(
      checkpoints.recordIntents([{ lease: a2!, intent: intentOf(10, 12) }], 30_000),
    ).rejects.toBeInstanceOf(FencedError);
    expect(b2!.intent).toMatchObject({ nextOffset: 7 });
  });

  describe('commits asked for together (the partitions of one flush)', () => {
    const parts = [0, 1, 2, 3].map((partition) => ({ topic: 'orders', partition }));
    const docOf = (pipeline: string, partition: number) =>
      clients.firestore.doc(`pipelines/${pipeline}/partitions/orders~${partition}`);

    test('go to Firestore as one write: every document takes the same update time, each its own ledger entry', async () => {
      const pipeline = uniqueName('pipe');
      const checkpoints = createFirestoreCheckpoints(clients.firestore, pipeline);
      const leases = await Promise.all(parts.map((p) => checkpoints.acquire(p, 'run-a', 30_000)));
      const after = await Promise.all(
        leases.map((lease, i) => checkpoints.commit(commitOf(lease, 0, 10 + i), 30_000)),
      );
      expect(after.map((l) => l.nextOffset)).toEqual([10, 11, 12, 13]);
      const snapshots = await Promise.all(parts.map((p) => docOf(pipeline, p.partition).get()));
      expect(snapshots.map((s) => s.get('nextOffset'))).toEqual([10, 11, 12, 13]);
      expect(snapshots.map((s) => s.get('commits'))).toEqual([1, 1, 1, 1]);
      const times = snapshots.map((s) => s.updateTime!);
      expect(times.every((t) => t.isEqual(times[0]!))).toBe(true);
      for (const p of parts) {
        const ledger = await docOf(pipeline, p.partition).collection('ledger').get();
        expect(ledger.docs.map((d) => [d.get('from'), d.get('to')])).toEqual([[0, 10 + p.partition]]);
      }
    });

    test('more than a write takes (100 commits) go in as many writes as needed', async () => {
      const pipeline = uniqueName('pipe');
      const checkpoints = createFirestoreCheckpoints(clients.firestore, pipeline);
      const many = Array.from({ length: 130 }, (_, partition) => ({ topic: 'orders', partition }));
      const leases = await Promise.all(many.map((p) => checkpoints.acquire(p, 'run-a', 30_000)));
      await Promise.all(leases.map((lease) => checkpoints.commit(commitOf(lease, 0, 3), 30_000)));
      const snapshots = await Promise.all(many.map((p) => docOf(pipeline, p.partition).get()));
      expect(snapshots.every((s) => s.get('nextOffset') === 3)).toBe(true);
      const times = new Set(snapshots.map((s) => `${s.updateTime!.seconds}.${s.updateTime!.nanoseconds}`));
      expect(times.size).toBe(2);
    });

    test('leases taken and given up together are one write each time; a renewal beside a commit of the same partition goes on its own', async () => {
      const pipeline = uniqueName('pipe');
      const checkpoints = createFirestoreCheckpoints(clients.firestore, pipeline);
      const sameTime = async () => {
        const times = (await Promise.all(parts.map((p) => docOf(pipeline, p.partition).get()))).map(
          (s) => `${s.updateTime!.seconds}.${s.updateTime!.nanoseconds}`,
        );
        return new Set(times).size === 1;
      };
      const leases = await Promise.all(parts.map((p) => checkpoints.acquire(p, 'run-a', 30_000)));
      expect(leases.map((l) => l?.epoch)).toEqual([1, 1, 1, 1]);
      expect(await sameTime()).toBe(true);
      const [renewed, committed] = await Promise.all([
        checkpoints.renew(leases[0]!, 60_000),
        checkpoints.commit(commitOf(leases[0], 0, 4), 30_000),
      ]);
      expect(renewed.epoch).toBe(1);
      expect(committed.nextOffset).toBe(4);
      expect((await docOf(pipeline, 0).get()).get('nextOffset')).toBe(4);
      await Promise.all(leases.map((l) => checkpoints.release(l!)));
      const released = await Promise.all(parts.map((p) => docOf(pipeline, p.partition).get()));
      expect(released.map((s) => s.get('leaseOwner'))).toEqual([null, null, null, null]);
      expect(await sameTime()).toBe(true);
    });

    test('a partition whose lease was taken over is refused alone; the others commit', async () => {
      let now = Date.now();
      const pipeline = uniqueName('pipe');
      const checkpoints = createFirestoreCheckpoints(clients.firestore, pipeline, () => now);
      const leases = await Promise.all(
        parts.map((p) => checkpoints.acquire(p, 'run-a', p.partition === 0 ? 1_000 : 30_000)),
      );
      now += 2_000;
      await checkpoints.acquire(parts[0]!, 'run-b', 30_000); // takes the lapsed lease of partition 0
      const results = await Promise.allSettled(
        leases.map((lease) => checkpoints.commit(commitOf(lease, 0, 5), 30_000)),
      );
      expect(results[0]).toMatchObject({ status: 'rejected', reason: expect.any(FencedError) });
      expect(results.slice(1).map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
      const snapshots = await Promise.all(parts.map((p) => docOf(pipeline, p.partition).get()));
      expect(snapshots.map((s) => s.get('nextOffset'))).toEqual([null, 5, 5, 5]);
      expect(snapshots[0]!.get('leaseOwner')).toBe('run-b');
    });

    test('a document written between their read and their write: none of that write lands, each commits once on its own', async () => {
      const pipeline = uniqueName('pipe');
      const other = createFirestoreCheckpoints(clients.firestore, pipeline);
      let renewals = 0;
      let renewing = false;
      // The same database, but whose batched reads (once `renewing`) are followed by a renewal of partition
      // 2's lease (what the lease keeper does), before the reader sees their result.
      const db = new Proxy(clients.firestore, {
        get(target, key, receiver) {
          if (key !== 'getAll') {
            const value = Reflect.get(target, key, receiver);
            return typeof value === 'function' ? value.bind(target) : value;
          }
          return async (...refs: FirebaseFirestore.DocumentReference[]) => {
            const snapshots = await target.getAll(...refs);
            if (renewing && refs.length > 1) {
              renewals++;
              await other.renew(leases[2]!, 30_000);
            }
            return snapshots;
          };
        },
      });
      // Leases taken by another instance of the run's store: this one has never written the documents,
      // so it reads them (a store skips the read of a document it wrote last: tested below).
      const checkpoints = createFirestoreCheckpoints(db, pipeline);
      const leases = await Promise.all(parts.map((p) => other.acquire(p, 'run-a', 30_000)));
      renewing = true;
      const after = await Promise.all(
        leases.map((lease) => checkpoints.commit(commitOf(lease, 0, 7), 30_000)),
      );
      expect(renewals).toBe(1);
      expect(after.map((l) => l.nextOffset)).toEqual([7, 7, 7, 7]);
      const snapshots = await Promise.all(parts.map((p) => docOf(pipeline, p.partition).get()));
      expect(snapshots.map((s) => [s.get('nextOffset'), s.get('commits'), s.get('ledgerEntries')])).toEqual(
        parts.map(() => [7, 1, 1]),
      );
      for (const p of parts) {
        const ledger = await docOf(pipeline, p.partition).collection('ledger').get();
        expect(ledger.size).toBe(1);
      }
    });
  });

  describe('a document this store wrote last', () => {
    const parts = [0, 1, 2, 3].map((partition) => ({ topic: 'orders', partition }));
    const docOf = (pipeline: string, partition: number) =>
      clients.firestore.doc(`pipelines/${pipeline}/partitions/orders~${partition}`);

    /** The database, counting the documents read (every read of the store is a `getAll`). */
    function counting() {
      const reads = { documents: 0 };
      const db = new Proxy(clients.firestore, {
        get(target, key, receiver) {
          const value = Reflect.get(target, key, receiver);
          if (key !== 'getAll') return typeof value === 'function' ? value.bind(target) : value;
          return (...refs: FirebaseFirestore.DocumentReference[]) => {
            reads.documents += refs.length;
            return target.getAll(...refs);
          };
        },
      });
      return { db, reads };
    }

    test('is not read again: a run’s intents, commits and releases after its leases read nothing, and leave the documents as reading would', async () => {
      const pipeline = uniqueName('pipe');
      const { db, reads } = counting();
      const checkpoints = createFirestoreCheckpoints(db, pipeline);
      let leases = await Promise.all(parts.map((p) => checkpoints.acquire(p, 'run-a', 30_000)));
      expect(reads.documents).toBe(4);
      // A new partition's first commit, where its checkpoint starts.
      leases = await Promise.all(leases.map((lease) => checkpoints.commit(commitOf(lease, 0, 0), 30_000)));
      for (const [from, to] of [
        [0, 10],
        [10, 25],
      ] as const) {
        const held = await checkpoints.recordIntents(
          leases.map((lease) => ({ lease: lease!, intent: intentOf(from, to) })),
          30_000,
        );
        leases = await Promise.all(
          held.map((lease) =>
            checkpoints.commit({ ...commitOf(lease, from, to), rows: to - from - 1, deadLetters: 1 }, 30_000),
          ),
        );
      }
      await Promise.all(leases.map((lease) => checkpoints.renew(lease!, 30_000)));
      await Promise.all(leases.map((lease) => checkpoints.release(lease!)));
      expect(reads.documents).toBe(4);
      for (const p of parts) {
        const data = (await docOf(pipeline, p.partition).get()).data()!;
        expect(data).toMatchObject({
          nextOffset: 25,
          leaseOwner: null,
          leaseEpoch: 1,
          commits: 3,
          ledgerEntries: 3,
          rowsWritten: 23,
          deadLettered: 2,
        });
        expect(data.intent).toBeUndefined();
      }
      // What another store reads is what this one remembered: the next lease, from the checkpoint.
      const next = createFirestoreCheckpoints(clients.firestore, pipeline);
      expect(await next.acquire(parts[0]!, 'run-b', 30_000)).toMatchObject({ epoch: 2, nextOffset: 25 });
    });

    test('written by another since: the write is refused, the document read and decided again (renewed: commits; taken over: fenced)', async () => {
      let now = Date.now();
      const pipeline = uniqueName('pipe');
      const { db, reads } = counting();
      const checkpoints = createFirestoreCheckpoints(db, pipeline, () => now);
      const other = createFirestoreCheckpoints(clients.firestore, pipeline, () => now);
      const leases = await Promise.all(parts.map((p) => checkpoints.acquire(p, 'run-a', 1_000)));
      // Partition 1's lease renewed by another instance of the run, later (the document changes, the lease
      // holds; a write of the same values would leave the document's version as it was).
      now += 100;
      await other.renew(leases[1]!, 1_000);
      const after = await Promise.all(
        leases.map((lease) => checkpoints.commit(commitOf(lease, 0, 5), 1_000)),
      );
      expect(after.map((l) => l.nextOffset)).toEqual([5, 5, 5, 5]);
      expect(reads.documents).toBe(4 + 4); // the refused write's four, read again, each on its own
      for (const p of parts) expect((await docOf(pipeline, p.partition).get()).get('commits')).toBe(1);

      // Partition 2's lease expires and another run takes it: the remembered version is stale.
      now += 2_000;
      const taken = await other.acquire(parts[2]!, 'run-b', 30_000);
      expect(taken).toMatchObject({ epoch: 2, nextOffset: 5 });
      now -= 1_900;
      await expect(checkpoints.commit(commitOf(after[2], 5, 9), 1_000)).rejects.toBeInstanceOf(FencedError);
      await expect(
        checkpoints.recordIntents([{ lease: after[2]!, intent: intentOf(5, 9) }], 1_000),
      ).rejects.toBeInstanceOf(FencedError);
      expect((await docOf(pipeline, 2).get()).data()).toMatchObject({
        nextOffset: 5,
        leaseOwner: 'run-b',
        commits: 1,
      });
    });
  });
});
