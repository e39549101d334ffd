import { Firestore } from '@google-cloud/firestore';
import { afterAll, expect, test } from 'vitest';
import { createFirestoreCheckpoints } from '../../functions/checkpoints/firestore-checkpoints.js';
import { patchFirestoreTermination } from '../../functions/google/firestore-patch.js';
import { stackClients, stackEnv, uniqueName } from '../support/stack.js';

// Reads that reach a terminated Firestore client: unpatched, @google-cloud/firestore leaves an unhandled
// rejection (the process dies) and a read that never settles (see functions/google/firestore-patch.ts).
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
process.on('unhandledRejection', onUnhandled);
afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
});

function emulatorFirestore(): Firestore {
  const [host, port] = stackEnv().FIRESTORE_EMULATOR_HOST.split(':') as [string, string];
  return new Firestore({ projectId: stackEnv().GOOGLE_CLOUD_PROJECT, host, port: Number(port), ssl: false });
}

test('the installed Firestore client has the pool the patch fixes, and it is patched', () => {
  expect(patchFirestoreTermination(emulatorFirestore())).toBe(true);
});

test('a get, a getAll and a query after terminate fail with the client’s error, none left unhandled', async () => {
  const firestore = emulatorFirestore();
  patchFirestoreTermination(firestore);
  const doc = firestore.collection(uniqueName('terminated')).doc('d');
  await doc.set({ n: 1 });
  expect((await doc.get()).data()).toEqual({ n: 1 });
  const terminating = firestore.terminate();
  const reads = [doc.get(), firestore.getAll(doc), doc.parent.where('n', '==', 1).get()];
  for (const read of reads) await expect(read).rejects.toThrow('The client has already been terminated');
  await terminating;
  await new Promise((resolve) => setImmediate(resolve));
  expect(unhandled).toEqual([]);
});

test('the checkpoints port on closed clients: its compare-and-swap fails, naming the call', async () => {
  const clients = await stackClients();
  const checkpoints = createFirestoreCheckpoints(clients.firestore, uniqueName('pipe'));
  const p0 = { topic: 'orders', partition: 0 };
  const lease = await checkpoints.acquire(p0, 'run-a', 30_000);
  expect(lease).toBeDefined();
  await clients.close();
  await expect(checkpoints.renew(lease!, 30_000)).rejects.toThrow(
    /renew lease: The client has already been terminated/,
  );
  await expect(checkpoints.acquire(p0, 'run-b', 30_000)).rejects.toThrow(/terminated/);
  await new Promise((resolve) => setImmediate(resolve));
  expect(unhandled).toEqual([]);
});
