/**
 * KBD_BQ_LOAD_JOB_SECONDS (stack/bigquery-emulator/load-hold.patch): the emulator holds each load job
 * RUNNING that long, its rows in the table only once it is DONE, as BigQuery runs its jobs. On an emulator
 * of this file's own, started with the variable set: the job made by a resumable upload (our client, as the
 * drain makes it), its state read through Google's client (jobs.get).
 */
import { afterAll, expect, test } from 'vitest';
import { createLoadJobs } from '../../functions/modes/load/load-jobs.js';
import { stackClients, stackEnv, uniqueName, useOwnBigQuery } from '../support/stack.js';

const holdSeconds = 6;
process.env.KBD_BQ_LOAD_JOB_SECONDS = String(holdSeconds);
useOwnBigQuery();
delete process.env.KBD_BQ_LOAD_JOB_SECONDS;
const clients = await stackClients();
afterAll(() => clients.close());

test('a load job stays RUNNING for KBD_BQ_LOAD_JOB_SECONDS, its rows in the table only once DONE', async () => {
  const dataset = uniqueName('hold');
  await clients.bigquery.createDataset(dataset);
  await clients.bigquery
    .dataset(dataset)
    .createTable('rows', { schema: { fields: [{ name: 'id', type: 'STRING', mode: 'REQUIRED' }] } });
  const count = async () =>
    Number((await clients.bigquery.query(`SELECT COUNT(*) AS n FROM \`${dataset}.rows\``))[0][0].n);
  const jobs = createLoadJobs({
    bigquery: clients.bigquery,
    project: stackEnv().GOOGLE_CLOUD_PROJECT,
    dataset,
    table: 'rows',
    location: null,
  });
  const id = uniqueName('job');
  const upload = (await jobs.open(id))!;
  await upload.write(Buffer.from(['a', 'b', 'c'].map((v) => `${JSON.stringify({ id: v })}\n`).join('')));
  const started = Date.now();
  expect(await upload.finish()).toBe(true);

  const state = async () => (await clients.bigquery.job(id).getMetadata())[0].status;
  expect(await state()).toMatchObject({ state: 'RUNNING' });
  expect(await count()).toBe(0);
  let done = await state();
  while (done.state !== 'DONE') {
    await new Promise((resolve) => setTimeout(resolve, 250));
    done = await state();
  }
  expect(done).toEqual({ state: 'DONE' });
  // Held at least as long as asked (a lower bound: a busy machine only makes it longer).
  expect(Date.now() - started).toBeGreaterThanOrEqual(holdSeconds * 1000 - 250);
  expect(await count()).toBe(3);
}, 60_000);
