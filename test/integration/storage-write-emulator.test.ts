/**
 * The patched BigQuery emulator (stack/bigquery-emulator/storage-write.patch) behaves like BigQuery on each
 * point exactly-once depends on, seen through Google's own client (managedwriter): appends at an explicit
 * offset, a stream committed at most once and atomically, commit only after finalize, commit_time, and the
 * `_default` stream without GetWriteStream, and requests of up to 10 MB. No test of ours can then pass because
 * the emulator is lenient.
 */
import { adapt, managedwriter } from '@google-cloud/bigquery-storage';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { stackClients, stackEnv, stackWriter, uniqueName } from '../support/stack.js';

const clients = await stackClients();
const env = stackEnv() as unknown as Record<string, string>;
const writer = await stackWriter();
const fields = [
  { name: 'id', type: 'STRING' },
  { name: 'n', type: 'INT64' },
];
const descriptor = adapt.convertStorageSchemaToProto2Descriptor(
  adapt.convertBigQuerySchemaToStorageTableSchema({ fields }),
  'root',
);
const dataset = uniqueName('sw_emulator');
let table = '';
let parent = '';
const connections: { close(): void }[] = [];

beforeAll(async () => {
  await clients.bigquery.createDataset(dataset);
});
afterAll(async () => {
  for (const c of connections) c.close();
  writer.close();
  await clients.close();
});

async function freshTable(): Promise<void> {
  table = uniqueName('t');
  await clients.bigquery.dataset(dataset).createTable(table, { schema: { fields } });
  parent = `projects/${env.GOOGLE_CLOUD_PROJECT}/datasets/${dataset}/tables/${table}`;
}

async function pendingStream() {
  const stream = await writer.createWriteStreamFullResponse({
    streamType: managedwriter.PendingStream,
    destinationTable: parent,
  });
  const connection = await writer.createStreamConnection({ streamId: stream.name! });
  connection.on('error', () => {});
  const json = new managedwriter.JSONWriter({ connection, protoDescriptor: descriptor });
  connections.push(json);
  return {
    name: stream.name!,
    append: (ids: string[], offset?: number) =>
      json
        .appendRows(
          ids.map((id) => ({ id })),
          offset,
        )
        .getResult(),
  };
}

async function ids(): Promise<string[]> {
  const [rows] = await clients.bigquery.query({
    query: `SELECT id FROM \`${dataset}.${table}\` ORDER BY id`,
  });
  return rows.map((r: { id: string }) => r.id);
}

describe('the patched emulator, as BigQuery', () => {
  test('an append at an offset below the end is ALREADY_EXISTS, beyond it OUT_OF_RANGE, and neither appends', async () => {
    await freshTable();
    const stream = await pendingStream();
    expect((await stream.append(['a', 'b'], 0)).appendResult?.offset?.value).toBe('0');
    const again = await stream.append(['c'], 0);
    expect(again.error?.code).toBe(6);
    const beyond = await stream.append(['c'], 5);
    expect(beyond.error?.code).toBe(11);
    expect((await stream.append(['c'], 2)).appendResult?.offset?.value).toBe('2');
    expect((await writer.finalizeWriteStream({ name: stream.name })).rowCount).toBe('3');
    await writer.batchCommitWriteStream({ parent, writeStreams: [stream.name] });
    expect(await ids()).toEqual(['a', 'b', 'c']);
  });

  test('a stream commits once: the second commit is STREAM_ALREADY_COMMITTED and adds nothing; commit_time is reported', async () => {
    await freshTable();
    const stream = await pendingStream();
    await stream.append(['a', 'b'], 0);
    await writer.finalizeWriteStream({ name: stream.name });
    expect((await writer.getWriteStream({ streamId: stream.name })).commitTime ?? null).toBeNull();
    const first = await writer.batchCommitWriteStream({ parent, writeStreams: [stream.name] });
    expect(first.streamErrors ?? []).toEqual([]);
    expect(first.commitTime?.seconds).toBeDefined();
    const second = await writer.batchCommitWriteStream({ parent, writeStreams: [stream.name] });
    expect(second.streamErrors?.map((e) => e.code)).toEqual(['STREAM_ALREADY_COMMITTED']);
    expect(second.commitTime ?? null).toBeNull();
    expect((await writer.getWriteStream({ streamId: stream.name })).commitTime?.seconds).toBe(
      first.commitTime?.seconds,
    );
    expect(await ids()).toEqual(['a', 'b']);
  });

  test('a stream that is not finalized does not commit; a batch with any error commits none of its streams', async () => {
    await freshTable();
    const open = await pendingStream();
    await open.append(['open'], 0);
    const done = await pendingStream();
    await done.append(['done'], 0);
    await writer.finalizeWriteStream({ name: done.name });
    const response = await writer.batchCommitWriteStream({ parent, writeStreams: [done.name, open.name] });
    expect(response.streamErrors?.map((e) => [e.code, e.entity])).toEqual([
      ['INVALID_STREAM_STATE', open.name],
    ]);
    expect(response.commitTime ?? null).toBeNull();
    expect(await ids()).toEqual([]);
    // A finalized stream takes no more rows.
    await writer.finalizeWriteStream({ name: open.name });
    expect((await open.append(['late'], 1)).error?.code).toBe(9);
    await writer.batchCommitWriteStream({ parent, writeStreams: [done.name, open.name] });
    expect(await ids()).toEqual(['done', 'open']);
  });

  test('an append request of 8 MB is taken (BigQuery allows 10 MB; the emulator refused over 4 MB)', async () => {
    await freshTable();
    const stream = await pendingStream();
    // 8 rows of 1 MB each: one request of about 8 MB.
    const big = Array.from({ length: 8 }, (_, i) => `${i}${'x'.repeat(1024 * 1024)}`);
    const result = await stream.append(big, 0);
    expect(result.error ?? null).toBeNull();
    expect((await writer.finalizeWriteStream({ name: stream.name })).rowCount).toBe('8');
  });

  test('GetWriteStream on a stream it does not know answers NOT_FOUND', async () => {
    await freshTable();
    await expect(
      writer.getWriteStream({ streamId: `${parent}/streams/no-such-stream` }),
    ).rejects.toMatchObject({
      code: grpc.status.NOT_FOUND,
    });
  });

  test('the _default stream takes rows without a GetWriteStream first (it used to hang)', async () => {
    await freshTable();
    const connection = await writer.createStreamConnection({ streamId: `${parent}/streams/_default` });
    connection.on('error', () => {});
    const json = new managedwriter.JSONWriter({ connection, protoDescriptor: descriptor });
    connections.push(json);
    const result = await Promise.race([
      json.appendRows([{ id: 'x' }, { id: 'y' }]).getResult(),
      new Promise((resolve) => setTimeout(() => resolve('no answer in 10 s'), 10_000)),
    ]);
    expect(result).toMatchObject({ appendResult: {} });
    expect(await ids()).toEqual(['x', 'y']);
  });
});
