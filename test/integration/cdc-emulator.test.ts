/**
 * The patched BigQuery emulator (stack/bigquery-emulator/cdc.patch) applies change data capture as
 * BigQuery documents it (https://cloud.google.com/bigquery/docs/change-data-capture): on a table with a
 * primary key, rows written to the `_default` stream with `_CHANGE_TYPE` UPSERT replace the row with the
 * same key (or insert it) and DELETE removes it; `_CHANGE_SEQUENCE_NUMBER` (one to four '/'-separated
 * sections of up to 16 hex digits, compared section by section) orders a key's changes, and a change lower
 * than the key's last applied one is ignored. Seen through Google's own client (the official JSONWriter,
 * pseudo-columns in its descriptor, as Google's CDC samples do).
 */
import { adapt, managedwriter } from '@google-cloud/bigquery-storage';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { stackClients, stackEnv, stackWriter, uniqueName } from '../support/stack.js';

const clients = await stackClients();
const env = stackEnv() as unknown as Record<string, string>;
const writer = await stackWriter();
const fields = [
  { name: 'id', type: 'INT64', mode: 'REQUIRED' },
  { name: 'name', type: 'STRING' },
  { name: 'salary', type: 'INT64' },
];
const pseudo = [
  { name: '_CHANGE_TYPE', type: 'STRING' },
  { name: '_CHANGE_SEQUENCE_NUMBER', type: 'STRING' },
];
const descriptorOf = (columns: object[]) =>
  adapt.convertStorageSchemaToProto2Descriptor(
    adapt.convertBigQuerySchemaToStorageTableSchema({ fields: [...columns, ...pseudo] as never }),
    'root',
  );
const dataset = uniqueName('cdc');
const connections: { close(): void }[] = [];

beforeAll(async () => {
  await clients.bigquery.createDataset(dataset);
});
afterAll(async () => {
  for (const c of connections) c.close();
  writer.close();
  await clients.close();
});

async function freshTable(options: { key?: string[]; columns?: object[] } = {}) {
  const table = uniqueName('t');
  await clients.bigquery.dataset(dataset).createTable(table, {
    schema: { fields: options.columns ?? fields },
    ...(options.key === undefined ? {} : { tableConstraints: { primaryKey: { columns: options.key } } }),
  } as never);
  const parent = `projects/${env.GOOGLE_CLOUD_PROJECT}/datasets/${dataset}/tables/${table}`;
  return { table, parent };
}

async function connect(streamId: string, columns: object[] = fields) {
  const connection = await writer.createStreamConnection({ streamId });
  connection.on('error', () => {});
  const json = new managedwriter.JSONWriter({ connection, protoDescriptor: descriptorOf(columns) });
  connections.push(json);
  return json;
}

type Change = Record<string, unknown>;
const upsert = (id: number, name: string, salary: number, seq?: string): Change => ({
  id,
  name,
  salary,
  _CHANGE_TYPE: 'UPSERT',
  ...(seq === undefined ? {} : { _CHANGE_SEQUENCE_NUMBER: seq }),
});
const del = (id: number, seq?: string): Change => ({
  id,
  _CHANGE_TYPE: 'DELETE',
  ...(seq === undefined ? {} : { _CHANGE_SEQUENCE_NUMBER: seq }),
});

async function rows(table: string) {
  const [result] = await clients.bigquery.query(
    `SELECT id, name, salary FROM \`${dataset}.${table}\` ORDER BY id`,
  );
  return result.map((r: { id: number; name: string | null; salary: number | null }) => [
    Number(r.id),
    r.name,
    r.salary === null ? null : Number(r.salary),
  ]);
}

async function append(json: managedwriter.JSONWriter, changes: Change[]) {
  const result = await json.appendRows(changes as never).getResult();
  expect(result.error?.message ?? null).toBeNull();
  return result;
}

describe('change data capture on the default stream', () => {
  test("the documentation's example: a DELETE and two UPSERTs by primary key", async () => {
    const { table, parent } = await freshTable({ key: ['id'] });
    const json = await connect(`${parent}/streams/_default`);
    await append(json, [upsert(100, 'Charlie', 2000), upsert(101, 'Tal', 3000), upsert(102, 'Lee', 5000)]);
    await append(json, [del(100), upsert(101, 'Tal', 8000), upsert(105, 'Izumi', 6000)]);
    expect(await rows(table)).toEqual([
      [101, 'Tal', 8000],
      [102, 'Lee', 5000],
      [105, 'Izumi', 6000],
    ]);
  });

  test("a change with a lower sequence number than the key's last applied one is ignored", async () => {
    const { table, parent } = await freshTable({ key: ['id'] });
    const json = await connect(`${parent}/streams/_default`);
    await append(json, [upsert(1, 'ten', 10, 'A')]);
    await append(json, [upsert(1, 'five', 5, '5')]); // a replay of an older change
    expect(await rows(table)).toEqual([[1, 'ten', 10]]);
    await append(json, [del(1, '3')]); // an older delete: ignored too
    expect(await rows(table)).toEqual([[1, 'ten', 10]]);
    await append(json, [upsert(1, 'ten again', 10, 'A')]); // the same number: applied (the same change)
    expect(await rows(table)).toEqual([[1, 'ten again', 10]]);
    await append(json, [del(1, 'B')]);
    expect(await rows(table)).toEqual([]);
    await append(json, [upsert(1, 'nine', 9, '9')]); // older than the delete: the key stays deleted
    expect(await rows(table)).toEqual([]);
    await append(json, [upsert(1, 'twelve', 12, 'C')]);
    expect(await rows(table)).toEqual([[1, 'twelve', 12]]);
  });

  test('sections compare numerically, left to right; hex digits in either case', async () => {
    const { table, parent } = await freshTable({ key: ['id'] });
    const json = await connect(`${parent}/streams/_default`);
    await append(json, [upsert(1, 'a', 1, '0/FFFF'), upsert(2, 'a', 1, 'ff')]);
    await append(json, [upsert(1, 'b', 2, '1/0'), upsert(2, 'b', 2, '0100')]);
    await append(json, [upsert(1, 'c', 3, '0/FFFFFFFFFFFFFFFF'), upsert(2, 'c', 3, 'FE')]);
    expect(await rows(table)).toEqual([
      [1, 'b', 2],
      [2, 'b', 2],
    ]);
  });

  test("within one append, a key's highest sequence number wins, whatever the order", async () => {
    const { table, parent } = await freshTable({ key: ['id'] });
    const json = await connect(`${parent}/streams/_default`);
    await append(json, [
      upsert(1, 'late', 3, '3'),
      upsert(1, 'early', 1, '1'),
      del(2, '2'),
      upsert(2, 'x', 1, '1'),
    ]);
    await append(json, [upsert(3, 'first', 1), upsert(3, 'second', 2)]); // no numbers: order of arrival
    expect(await rows(table)).toEqual([
      [1, 'late', 3],
      [3, 'second', 2],
    ]);
  });

  test('a composite primary key', async () => {
    const columns = [
      { name: 'tenant', type: 'STRING', mode: 'REQUIRED' },
      { name: 'id', type: 'INT64', mode: 'REQUIRED' },
      { name: 'name', type: 'STRING' },
    ];
    const { table, parent } = await freshTable({ key: ['tenant', 'id'], columns });
    const json = await connect(`${parent}/streams/_default`, columns);
    const change = (tenant: string, id: number, name: string | null, type: string, seq: string) => ({
      tenant,
      id,
      ...(name === null ? {} : { name }),
      _CHANGE_TYPE: type,
      _CHANGE_SEQUENCE_NUMBER: seq,
    });
    await append(json, [change('a', 1, 'a1', 'UPSERT', '1'), change('b', 1, 'b1', 'UPSERT', '2')]);
    await append(json, [change('a', 1, null, 'DELETE', '3'), change('b', 1, 'b1 new', 'UPSERT', '4')]);
    const [result] = await clients.bigquery.query(`SELECT tenant, id, name FROM \`${dataset}.${table}\``);
    expect(
      result.map((r: { tenant: string; id: number; name: string }) => [r.tenant, Number(r.id), r.name]),
    ).toEqual([['b', 1, 'b1 new']]);
  });

  test('refused as BigQuery refuses: bad change types and sequence numbers are row errors, nothing appended', async () => {
    // A NULLABLE key column, so that a row can lack it (a REQUIRED one is refused by the proto decoding).
    const columns = fields.map((f) => ({ ...f, mode: 'NULLABLE' }));
    const { table, parent } = await freshTable({ key: ['id'], columns });
    const json = await connect(`${parent}/streams/_default`, columns);
    const result = await json
      .appendRows([
        upsert(1, 'ok', 1, '1'),
        { id: 2, name: 'x', _CHANGE_TYPE: 'INSERT' },
        upsert(3, 'x', 1, 'XYZ'),
        upsert(4, 'x', 1, '1/2/3/4/5'),
        upsert(5, 'x', 1, '12345678901234567'),
        { name: 'no key', _CHANGE_TYPE: 'UPSERT' },
      ] as never)
      .getResult();
    expect(result.rowErrors?.map((e) => [Number(e.index), e.message])).toEqual([
      [1, '_CHANGE_TYPE must be UPSERT or DELETE, not "INSERT"'],
      [2, expect.stringContaining('"XYZ" is not one to four')],
      [3, expect.stringContaining('"1/2/3/4/5" is not one to four')],
      [4, expect.stringContaining('"12345678901234567" is not one to four')],
      [5, 'primary key column id is missing'],
    ]);
    expect(await rows(table)).toEqual([]);
  });

  test('refused without a primary key, and on any stream but the default one', async () => {
    const { parent } = await freshTable();
    const json = await connect(`${parent}/streams/_default`);
    const noKey = await json.appendRows([upsert(1, 'x', 1)] as never).getResult();
    expect(noKey.error?.message).toMatch(/has no primary key/);

    const keyed = await freshTable({ key: ['id'] });
    const stream = await writer.createWriteStream({
      streamType: managedwriter.PendingStream,
      destinationTable: keyed.parent,
    });
    const pending = await connect(stream);
    const refused = await pending.appendRows([upsert(1, 'x', 1)] as never, 0).getResult();
    expect(refused.error?.message).toMatch(/only supported on the _default stream/);
  });

  test('rows without _CHANGE_TYPE on a keyed table are plain appends', async () => {
    const { table, parent } = await freshTable({ key: ['id'] });
    const connection = await writer.createStreamConnection({ streamId: `${parent}/streams/_default` });
    connection.on('error', () => {});
    const plain = new managedwriter.JSONWriter({
      connection,
      protoDescriptor: adapt.convertStorageSchemaToProto2Descriptor(
        adapt.convertBigQuerySchemaToStorageTableSchema({ fields } as never),
        'root',
      ),
    });
    connections.push(plain);
    await plain
      .appendRows([
        { id: 1, name: 'a' },
        { id: 1, name: 'b' },
      ] as never)
      .getResult();
    expect((await rows(table)).length).toBe(2);
  });

  test('the table keeps its primary key and max staleness in its metadata', async () => {
    const table = uniqueName('t');
    await clients.bigquery.dataset(dataset).createTable(table, {
      schema: { fields },
      tableConstraints: { primaryKey: { columns: ['id'] } },
      maxStaleness: '0-0 0 0:15:0',
    } as never);
    const [metadata] = await clients.bigquery.dataset(dataset).table(table).getMetadata();
    expect(metadata.tableConstraints).toEqual({ primaryKey: { columns: ['id'] } });
    expect(metadata.maxStaleness).toBe('0-0 0 0:15:0');
  });
});
