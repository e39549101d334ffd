/**
 * The patched BigQuery emulator (stack/bigquery-emulator/dataset-duplicate.patch) answers a request to
 * create a dataset that exists with 409 Already Exists, as BigQuery does. Unpatched it answered 500, and
 * two routes of one run creating their tables in a new dataset at the same moment failed the run: the
 * loser of the race took "someone else made it" for a failure (seen in the routes e2e).
 */
import { afterAll, expect, test } from 'vitest';
import { ensureTable } from '../../functions/sinks/bigquery-tables.js';
import { stackClients, uniqueName } from '../support/stack.js';

const clients = await stackClients();
afterAll(() => clients.close());

test("creating a dataset that exists is 409 Already Exists, through Google's own client", async () => {
  const dataset = uniqueName('dup_dataset');
  await clients.bigquery.createDataset(dataset);
  const error = await clients.bigquery.createDataset(dataset).then(
    () => undefined,
    (e: unknown) => e as { code?: number; message?: string },
  );
  expect(error?.code).toBe(409);
  expect(error?.message).toMatch(/already created/);
});

test('tables of one new dataset made at the same moment: every maker succeeds, each table is there', async () => {
  const dataset = uniqueName('dup_race');
  const fields = [{ name: 'id', type: 'STRING' }];
  const names = ['a', 'b', 'c', 'd', 'e', 'f'];
  await Promise.all(
    names.map((name) => ensureTable(clients.bigquery, { dataset, location: null }, name, fields)),
  );
  const [tables] = await clients.bigquery.dataset(dataset).getTables();
  expect(tables.map((t) => t.id).sort()).toEqual(names);
});
