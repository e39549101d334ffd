/**
 * Resumable uploads of load jobs on the patched BigQuery emulator (stack/bigquery-emulator/
 * resumable-upload.patch), as BigQuery takes them, through our client (`LoadJobs.open`, issue #67's
 * streamed load): opening a session makes no job; the data goes in chunks of 8 MiB, each answered 308;
 * the chunk that names the total makes the job, DONE with every row; an upload never finished makes no job
 * and leaves its id free; an id taken is 409 at opening; a bad row is named by its byte position counted
 * from the upload's first byte across chunks. Chunks are checked by hand too: one that does not follow
 * what arrived is refused.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createLoadJobs, uploadChunkBytes, waitForJob } from '../../functions/modes/load/load-jobs.js';
import { stackClients, stackEnv, uniqueName } from '../support/stack.js';

const clients = await stackClients();
afterAll(() => clients.close());
const project = stackEnv().GOOGLE_CLOUD_PROJECT;
const dataset = uniqueName('uploads');
const table = 'rows';

beforeAll(async () => {
  await clients.bigquery.createDataset(dataset);
  await clients.bigquery.dataset(dataset).createTable(table, {
    schema: {
      fields: [
        { name: 'id', type: 'STRING', mode: 'REQUIRED' },
        { name: 'pad', type: 'STRING' },
      ],
    },
  });
});

const jobs = () => createLoadJobs({ bigquery: clients.bigquery, project, dataset, table, location: null });
/** `count` rows of about 200 bytes, ids `{prefix}{from}` on, as the load's lines. */
const lines = (from: number, count: number, prefix = 'r') =>
  Buffer.from(
    Array.from(
      { length: count },
      (_, i) => `${JSON.stringify({ id: `${prefix}${from + i}`, pad: 'p'.repeat(180) })}\n`,
    ).join(''),
  );

async function countOf(prefix: string): Promise<number> {
  const [rows] = await clients.bigquery.query({
    query: `SELECT COUNT(*) AS n FROM \`${dataset}.${table}\` WHERE STARTS_WITH(id, '${prefix}')`,
  });
  return Number(rows[0].n);
}

test('an upload of many chunks makes its job only when it completes: DONE with every row', async () => {
  const id = uniqueName('job');
  const upload = (await jobs().open(id))!;
  // 100,000 rows of about 200 bytes: 20 MB, three chunks and the rest, written a batch at a time.
  for (let at = 0; at < 100_000; at += 5_000) await upload.write(lines(at, 5_000));
  expect(upload.bytes).toBeGreaterThan(2 * uploadChunkBytes);
  expect(await jobs().state(id)).toEqual({ state: 'missing' });
  expect(await upload.finish()).toBe(true);
  expect(await waitForJob(jobs(), id, 60_000)).toMatchObject({ state: 'done' });
  expect(await countOf('r')).toBe(100_000);
});

test('batches of several partitions written at once go out one chunk after the other: each row once', async () => {
  const id = uniqueName('job');
  const upload = (await jobs().open(id))!;
  // Twenty batches of 2.3 MB at once, as partitions' batches arrive side by side: chunks cross batches.
  await Promise.all(Array.from({ length: 20 }, (_, b) => upload.write(lines(b * 10_000, 10_000, 'e'))));
  expect(await upload.finish()).toBe(true);
  expect(await waitForJob(jobs(), id, 60_000)).toMatchObject({ state: 'done' });
  const [rows] = await clients.bigquery.query({
    query: `SELECT COUNT(*) AS n, COUNT(DISTINCT id) AS d FROM \`${dataset}.${table}\` WHERE STARTS_WITH(id, 'e')`,
  });
  expect([Number(rows[0].n), Number(rows[0].d)]).toEqual([200_000, 200_000]);
});

test('an upload never completed makes no job, and its id is free for the next', async () => {
  const id = uniqueName('job');
  const abandoned = (await jobs().open(id))!;
  await abandoned.write(lines(0, 50_000, 'a'));
  expect(abandoned.bytes).toBeGreaterThan(uploadChunkBytes); // a chunk went out
  expect(await jobs().state(id)).toEqual({ state: 'missing' });
  const next = (await jobs().open(id))!;
  await next.write(Buffer.from('{"id":"b1"}\n{"id":"b2"}\n'));
  expect(await next.finish()).toBe(true);
  expect(await waitForJob(jobs(), id, 60_000)).toMatchObject({ state: 'done' });
  expect(await countOf('a')).toBe(0);
  expect(await countOf('b')).toBe(2);
  // Taken now: opening it again is refused (409), nothing loaded.
  expect(await jobs().open(id)).toBeUndefined();
});

test('a bad row fails the job, named by its byte position from the first byte, across chunks; nothing loads', async () => {
  const id = uniqueName('job');
  const upload = (await jobs().open(id))!;
  const good = lines(0, 50_000, 'c');
  await upload.write(good);
  await upload.write(Buffer.from('{"id":"c-bad","nope":1}\n'));
  expect(await upload.finish()).toBe(true);
  const state = await waitForJob(jobs(), id, 60_000);
  expect(state.state).toBe('failed');
  expect(state.state === 'failed' ? [...state.badRows.keys()] : []).toEqual([good.length]);
  expect(await countOf('c')).toBe(0);
});

test('a chunk that does not follow what arrived is refused; the session goes on from what it has', async () => {
  const id = uniqueName('job');
  const endpoint = stackEnv().BIGQUERY_API_ENDPOINT;
  const opened = await fetch(`${endpoint}/upload/bigquery/v2/projects/${project}/jobs?uploadType=resumable`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      jobReference: { projectId: project, jobId: id },
      configuration: {
        load: {
          destinationTable: { projectId: project, datasetId: dataset, tableId: table },
          sourceFormat: 'NEWLINE_DELIMITED_JSON',
        },
      },
    }),
  });
  expect(opened.status).toBe(200);
  const session = opened.headers.get('location')!;
  const put = (range: string, body: string) =>
    fetch(session, { method: 'PUT', headers: { 'Content-Range': range }, body, redirect: 'manual' });
  const first = await put('bytes 0-11/*', '{"id":"d1"}\n');
  expect(first.status).toBe(308);
  expect(first.headers.get('range')).toBe('bytes=0-11');
  expect((await put('bytes 5-16/*', '{"id":"d2"}\n')).status).toBe(400);
  const last = await put('bytes 12-23/24', '{"id":"d2"}\n');
  expect(last.status).toBe(200);
  expect(await waitForJob(jobs(), id, 60_000)).toMatchObject({ state: 'done' });
  expect(await countOf('d')).toBe(2);
});
