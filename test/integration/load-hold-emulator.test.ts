/**
 * KBD_BQ_LOAD_JOB_SECONDS (stack/bigquery-emulator/load-hold.patch): the emulator holds each load job
 * RUNNING that long, its rows in the table only once it is DONE, as BigQuery runs its jobs. Proven through
 * Google's own client on an emulator of this file's own, started with the variable set.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { stackClients, uniqueName, useOwnBigQuery } from '../support/stack.js';

const holdSeconds = 6;
process.env.KBD_BQ_LOAD_JOB_SECONDS = String(holdSeconds);
useOwnBigQuery();
delete process.env.KBD_BQ_LOAD_JOB_SECONDS;
const clients = await stackClients();
afterAll(() => clients.close());

test('a load job stays RUNNING for KBD_BQ_LOAD_JOB_SECONDS, its rows in the table only once DONE', async () => {
  const dataset = uniqueName('hold');
  await clients.bigquery.createDataset(dataset);
  const [table] = await clients.bigquery
    .dataset(dataset)
    .createTable('rows', { schema: { fields: [{ name: 'id', type: 'STRING', mode: 'REQUIRED' }] } });
  const file = join(mkdtempSync(join(tmpdir(), 'kbd-hold-')), 'rows.json');
  writeFileSync(file, ['a', 'b', 'c'].map((id) => `${JSON.stringify({ id })}\n`).join(''));
  const count = async () =>
    Number((await clients.bigquery.query(`SELECT COUNT(*) AS n FROM \`${dataset}.rows\``))[0][0].n);

  const started = Date.now();
  const [job] = await table.createLoadJob(file, { sourceFormat: 'NEWLINE_DELIMITED_JSON' });
  const [running] = await job.getMetadata();
  expect(running.status.state).toBe('RUNNING');
  expect(await count()).toBe(0);

  // The client polls jobs.get until DONE.
  await job.promise();
  const [done] = await job.getMetadata();
  expect(done.status).toEqual({ state: 'DONE' });
  expect(Date.now() - started).toBeGreaterThanOrEqual(holdSeconds * 1000);
  expect(await count()).toBe(3);
}, 60_000);
