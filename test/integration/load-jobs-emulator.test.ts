/**
 * The patched BigQuery emulator's load jobs by upload (stack/bigquery-emulator/load-jobs.patch), on the
 * points `load` mode's exactly-once rests on, as BigQuery behaves: a job id used twice is 409 Already
 * Exists and loads nothing the second time; a load's outcome is its job's DONE status read by jobs.get
 * (Google's own client), with errorResult and one error per refused row naming the byte position the row
 * starts at; a failed load loads nothing (atomic); values keep every digit. The uploads here are plain
 * multipart requests made by hand, as the REST reference spells them, not through our client; then the
 * same through ours (`functions/modes/load/load-jobs.ts`). An upload is one request: cut on its way, it
 * makes no job; arrived whole, its job runs to its end with or without its client.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { claimExisting, createLoadJobs } from '../../functions/modes/load/load-jobs.js';
import { stackClients, stackEnv, uniqueName } from '../support/stack.js';

const clients = await stackClients();
afterAll(() => clients.close());
const project = stackEnv().GOOGLE_CLOUD_PROJECT;
const dataset = uniqueName('loads');
const fields = [
  { name: 'id', type: 'STRING', mode: 'REQUIRED' },
  { name: 'n', type: 'INT64' },
  { name: 'price', type: 'NUMERIC' },
  { name: 'big', type: 'BIGNUMERIC' },
  { name: 'ts', type: 'TIMESTAMP' },
  { name: 'raw', type: 'BYTES' },
  { name: 'doc', type: 'JSON' },
  {
    name: 'tags',
    type: 'RECORD',
    mode: 'REPEATED',
    fields: [
      { name: 'k', type: 'STRING' },
      { name: 'v', type: 'INT64' },
    ],
  },
];

beforeAll(async () => {
  await clients.bigquery.createDataset(dataset);
});

const boundary = 'load_boundary_1';

/** A load job's multipart upload, as https://cloud.google.com/bigquery/docs/reference/api-uploads spells it. */
function uploadBody(table: string, jobId: string, lines: string[]): string {
  const job = {
    jobReference: { projectId: project, jobId },
    configuration: {
      load: {
        destinationTable: { projectId: project, datasetId: dataset, tableId: table },
        sourceFormat: 'NEWLINE_DELIMITED_JSON',
        writeDisposition: 'WRITE_APPEND',
        createDisposition: 'CREATE_NEVER',
      },
    },
  };
  return (
    `--${boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n${JSON.stringify(job)}\r\n` +
    `--${boundary}\r\nContent-Type: application/octet-stream\r\n\r\n${lines.map((l) => `${l}\n`).join('')}\r\n--${boundary}--\r\n`
  );
}

const uploadPath = `/upload/bigquery/v2/projects/${project}/jobs?uploadType=multipart`;

/** A load job by multipart upload, and BigQuery's answer. */
async function upload(table: string, jobId: string, lines: string[]): Promise<{ status: number; body: any }> {
  const response = await fetch(`${stackEnv().BIGQUERY_API_ENDPOINT}${uploadPath}`, {
    method: 'POST',
    headers: { 'Content-Type': `multipart/related; boundary=${boundary}` },
    body: uploadBody(table, jobId, lines),
  });
  return { status: response.status, body: await response.json() };
}

/**
 * The same upload by hand over a socket, whose client goes away before the answer: after `sent` bytes of
 * the body (a client killed mid-upload), or after all of it.
 */
async function abandonedUpload(body: string, sent: number, lingerMs: number): Promise<void> {
  const { hostname, port } = new URL(stackEnv().BIGQUERY_API_ENDPOINT);
  const socket = connect(Number(port), hostname);
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const bytes = Buffer.from(body);
  socket.write(
    `POST ${uploadPath} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n` +
      `Content-Type: multipart/related; boundary=${boundary}\r\nContent-Length: ${bytes.length}\r\n\r\n`,
  );
  await new Promise<void>((resolve) => socket.write(bytes.subarray(0, sent), () => resolve()));
  await new Promise((resolve) => setTimeout(resolve, lingerMs));
  socket.destroy();
}

/** jobs.get's status of the job (Google's client), or 404. */
async function jobStatus(jobId: string): Promise<{ state: string; errorResult?: unknown } | 404> {
  try {
    const [metadata] = await clients.bigquery.job(jobId).getMetadata();
    return metadata.status;
  } catch (error) {
    if ((error as { code?: number }).code === 404) return 404;
    throw error;
  }
}

async function makeTable(): Promise<string> {
  const table = uniqueName('t');
  await clients.bigquery.dataset(dataset).createTable(table, { schema: { fields } });
  return table;
}

async function ids(table: string): Promise<string[]> {
  const [rows] = await clients.bigquery.query({
    query: `SELECT id FROM \`${dataset}.${table}\` ORDER BY id`,
  });
  return rows.map((r: { id: string }) => r.id);
}

const good = (id: string) => JSON.stringify({ id, n: '1' });

test("a load job is DONE with no error; jobs.get (Google's client) of the finished job says so", async () => {
  const table = await makeTable();
  const jobId = uniqueName('job');
  const answer = await upload(table, jobId, [good('a'), good('b')]);
  expect(answer.status).toBe(200);
  expect(answer.body.status).toEqual({ state: 'DONE' });
  const [metadata] = await clients.bigquery.job(jobId).getMetadata();
  expect(metadata.status).toEqual({ state: 'DONE' });
  expect(metadata.configuration.load.destinationTable.tableId).toBe(table);
  expect(await ids(table)).toEqual(['a', 'b']);
});

test('a job id used twice is 409 Already Exists, and the second upload loads nothing', async () => {
  const table = await makeTable();
  const jobId = uniqueName('job');
  expect((await upload(table, jobId, [good('a')])).status).toBe(200);
  const again = await upload(table, jobId, [good('a'), good('c')]);
  expect(again.status).toBe(409);
  expect(again.body.error.errors[0].reason).toBe('duplicate');
  expect(again.body.error.message).toContain(`Already Exists: Job ${project}:`);
  expect(await ids(table)).toEqual(['a']);
});

test('bad rows fail the job with errorResult and one error each naming its byte position; nothing is loaded', async () => {
  const table = await makeTable();
  const jobId = uniqueName('job');
  const lines = [
    good('a'),
    JSON.stringify({ id: 'b', doc: '{not json' }),
    good('c'),
    JSON.stringify({ id: 'd', nope: 1 }),
    JSON.stringify({ id: 'e', raw: 'not base64!' }),
  ];
  const answer = await upload(table, jobId, lines);
  expect(answer.status).toBe(200);
  const [metadata] = await clients.bigquery.job(jobId).getMetadata();
  expect(metadata.status.state).toBe('DONE');
  expect(metadata.status.errorResult.reason).toBe('invalid');
  expect(metadata.status.errorResult.message).toMatch(/too many errors, giving up\. Rows: 5; errors: 3/);
  const start = (i: number) => lines.slice(0, i).reduce((n, l) => n + Buffer.byteLength(l) + 1, 0);
  expect(metadata.status.errors.slice(1).map((e: { message: string }) => e.message)).toEqual([
    expect.stringContaining(`row starting at position ${start(1)}: Field doc`),
    expect.stringContaining(`row starting at position ${start(3)}: No such field: nope.`),
    expect.stringContaining(`row starting at position ${start(4)}: Could not decode base64`),
  ]);
  // Atomic: the good rows of a failed load are not there either.
  expect(await ids(table)).toEqual([]);
});

test('an upload cut on its way (its client killed) makes no job; the id is free, and the next upload loads', async () => {
  const table = await makeTable();
  const jobId = uniqueName('job');
  const body = uploadBody(table, jobId, [good('a'), good('b'), good('c')]);
  // Cut inside the data, past the job's configuration: the original emulator had made the job by then.
  // Long enough for the emulator to have read what was sent.
  await abandonedUpload(body, body.indexOf(good('b')), 300);
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(await jobStatus(jobId)).toBe(404);
  expect(await ids(table)).toEqual([]);
  const answer = await upload(table, jobId, [good('a'), good('b'), good('c')]);
  expect(answer.status).toBe(200);
  expect(await ids(table)).toEqual(['a', 'b', 'c']);
});

test('an upload that arrived whole runs to its end though its client is gone: DONE, its rows loaded', async () => {
  const table = await makeTable();
  const jobId = uniqueName('job');
  // Rows enough that the load is still being made when the client goes.
  const lines = Array.from({ length: 5_000 }, (_, i) => good(`r${String(i).padStart(5, '0')}`));
  const body = uploadBody(table, jobId, lines);
  await abandonedUpload(body, Buffer.byteLength(body), 0);
  let status = await jobStatus(jobId);
  for (let i = 0; i < 100 && (status === 404 || status.state !== 'DONE'); i++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    status = await jobStatus(jobId);
  }
  expect(status).toEqual({ state: 'DONE' });
  expect(await ids(table)).toEqual(lines.map((l) => JSON.parse(l).id));
});

test('a load into a table that is not there is a failed job (notFound), not a failed request', async () => {
  const jobId = uniqueName('job');
  const answer = await upload('no_such_table', jobId, [good('a')]);
  expect(answer.status).toBe(200);
  const [metadata] = await clients.bigquery.job(jobId).getMetadata();
  expect(metadata.status.state).toBe('DONE');
  expect(metadata.status.errorResult.message).toMatch(/no_such_table/);
});

test('our client: values exact, a second submission under the same id is not a second load, states read back', async () => {
  const table = await makeTable();
  const jobs = createLoadJobs({ bigquery: clients.bigquery, project, dataset, table, location: null });
  const row = {
    id: 'x',
    n: '9007199254740993',
    price: '-99999999999999999999999999999.999999999',
    big: '578960446186580977117854925043439539266.34992332820282019728792003956564819967',
    ts: '0001-01-01T00:00:00.000001Z',
    raw: Buffer.from([0, 255, 1]).toString('base64'),
    doc: '{"a":[1,2]}',
    tags: [{ k: 'p', v: '-9223372036854775808' }],
  };
  const data = Buffer.from(`${JSON.stringify(row)}\n`);
  const jobId = uniqueName('job');
  expect(await jobs.state(jobId)).toEqual({ state: 'missing' });
  expect(await jobs.submit(jobId, data)).toBe(true);
  expect(await jobs.submit(jobId, data)).toBe(false);
  expect(await jobs.state(jobId)).toEqual({ state: 'done', destination: { dataset, table } });
  // The id taken by this table's job: another table's load under it is refused, naming both tables; the
  // same table's is this job (a lost answer submitted again).
  const other = await makeTable();
  const otherJobs = createLoadJobs({
    bigquery: clients.bigquery,
    project,
    dataset,
    table: other,
    location: null,
  });
  expect(await otherJobs.submit(jobId, data)).toBe(false);
  await expect(claimExisting(otherJobs, jobId, { dataset, table: other })).rejects.toMatchObject({
    code: 'load_job_collision',
    message: expect.stringContaining(`loads ${dataset}.${table}, not ${dataset}.${other}`),
  });
  await expect(claimExisting(jobs, jobId, { dataset, table })).resolves.toBeUndefined();
  const [rows] = await clients.bigquery.query({
    query: `SELECT CAST(n AS STRING) n, CAST(price AS STRING) price, CAST(big AS STRING) big,
      CAST(UNIX_MICROS(ts) AS STRING) AS ts, TO_BASE64(raw) raw, TO_JSON_STRING(doc) doc,
      CAST(tags[OFFSET(0)].v AS STRING) v FROM \`${dataset}.${table}\``,
  });
  expect(rows).toEqual([
    {
      n: row.n,
      price: row.price,
      big: row.big,
      ts: '-62135596799999999',
      raw: row.raw,
      doc: row.doc,
      v: '-9223372036854775808',
    },
  ]);

  const bad = uniqueName('job');
  expect(await jobs.submit(bad, Buffer.from(`${good('y')}\n{"id":"z","doc":"{"}\n`))).toBe(true);
  const failed = await jobs.state(bad);
  expect(failed).toMatchObject({ state: 'failed', message: expect.stringMatching(/^invalid: /) });
  expect([...(failed as unknown as { badRows: Map<number, string> }).badRows.keys()]).toEqual([
    good('y').length + 1,
  ]);
});
