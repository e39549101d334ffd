/**
 * The hook that tells a failing BigQuery from a silent one (createGoogleClients' `onBigQueryError`),
 * against the real client and the emulator behind a loopback fault proxy: it hears each error answer, the
 * client still retries exactly what it retries without the hook, and a BigQuery that never answers is
 * never heard.
 */
import { afterEach, expect, test } from 'vitest';
import { createGoogleClients } from '../../functions/google/clients.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { stackClients, stackEnv, uniqueName } from '../support/stack.js';

const stack = stackEnv();
const setup = await stackClients();
const datasetId = uniqueName('answers');
await setup.bigquery.createDataset(datasetId);
await setup.close();

let proxy: FaultProxy | undefined;
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
});

function clientsThrough(url: string, heard: { count: number }) {
  return createGoogleClients(
    {
      project: stack.GOOGLE_CLOUD_PROJECT,
      emulators: { firestore: stack.FIRESTORE_EMULATOR_HOST, pubsub: stack.PUBSUB_EMULATOR_HOST },
      bigquery: { apiEndpoint: url, location: null, storageEndpoint: null },
    },
    () => {
      heard.count += 1;
    },
  );
}

test('two 503s, then the emulator: both heard, the client retried them and got the answer', async () => {
  let failures = 2;
  proxy = await startFaultProxy(stack.BIGQUERY_API_ENDPOINT, () => {
    if (failures === 0) return 'pass';
    failures -= 1;
    return { status: 503 };
  });
  const heard = { count: 0 };
  const clients = clientsThrough(proxy.url, heard);
  const [exists] = await clients.bigquery.dataset(datasetId).exists();
  expect(exists).toBe(true);
  expect(heard.count).toBe(2);
  expect(proxy.counts.get('503')).toBe(2);
  expect(proxy.counts.get('pass')).toBe(1);
  await clients.close();
});

test('a 400 is heard and not retried (as without the hook)', async () => {
  proxy = await startFaultProxy(stack.BIGQUERY_API_ENDPOINT, () => ({ status: 400 }));
  const heard = { count: 0 };
  const clients = clientsThrough(proxy.url, heard);
  await expect(clients.bigquery.dataset(datasetId).getMetadata()).rejects.toThrow();
  expect(proxy.counts.get('400')).toBe(1);
  expect(heard.count).toBe(1);
  await clients.close();
});

test('a BigQuery that never answers is never heard', async () => {
  proxy = await startFaultProxy(stack.BIGQUERY_API_ENDPOINT, () => 'hang');
  const heard = { count: 0 };
  const clients = clientsThrough(proxy.url, heard);
  const call = clients.bigquery.dataset(datasetId).getMetadata();
  call.catch(() => {});
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  expect(proxy.counts.get('hang')).toBe(1);
  expect(heard.count).toBe(0);
  await proxy.close();
  proxy = undefined;
  await clients.close();
});
