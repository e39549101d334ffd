/**
 * The patched BigQuery emulator (stack/bigquery-emulator/row-errors.patch) refuses, row by row and at
 * append time, what BigQuery refuses: JSON text that does not parse and GEOGRAPHY values that are not valid
 * WKT or GeoJSON on the sphere (ranges, degenerate lines and rings, rings whose edges cross). Seen through Google's own clients: the Storage Write API answers row errors
 * with their index and appends nothing of the request (PENDING and `_default` streams); insertAll answers
 * an `invalid` insert error with the row's index. Each test fails against the build without the patch,
 * which stored these rows (and then failed a whole commit on the JSON).
 */
import { adapt, managedwriter } from '@google-cloud/bigquery-storage';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { stackClients, stackEnv, stackWriter, uniqueName } from '../support/stack.js';

const clients = await stackClients();
const env = stackEnv() as unknown as Record<string, string>;
const writer = await stackWriter();
const fields = [
  { name: 'id', type: 'STRING' },
  { name: 'j', type: 'JSON' },
  { name: 'g', type: 'GEOGRAPHY' },
  { name: 'tags', type: 'RECORD', mode: 'REPEATED', fields: [{ name: 'place', type: 'GEOGRAPHY' }] },
];
const descriptor = adapt.convertStorageSchemaToProto2Descriptor(
  adapt.convertBigQuerySchemaToStorageTableSchema({ fields }),
  'root',
);
const dataset = uniqueName('row_errors');
const connections: { close(): void }[] = [];

beforeAll(async () => {
  await clients.bigquery.createDataset(dataset);
});
afterAll(async () => {
  for (const c of connections) c.close();
  writer.close();
  await clients.close();
});

async function freshTable(): Promise<{ table: string; parent: string }> {
  const table = uniqueName('t');
  await clients.bigquery.dataset(dataset).createTable(table, { schema: { fields } });
  return { table, parent: `projects/${env.GOOGLE_CLOUD_PROJECT}/datasets/${dataset}/tables/${table}` };
}

async function connect(streamId: string) {
  const connection = await writer.createStreamConnection({ streamId });
  connection.on('error', () => {});
  const json = new managedwriter.JSONWriter({ connection, protoDescriptor: descriptor });
  connections.push(json);
  return json;
}

const ids = async (table: string) =>
  (await clients.bigquery.query(`SELECT id FROM \`${dataset}.${table}\` ORDER BY id`))[0].map(
    (r: { id: string }) => r.id,
  );

type Row = { id: string; j?: string; g?: string; tags?: { place: string }[] };
const good = (id: string): Row => ({ id, j: '{"a":1}', g: 'POINT(1 2)' });

describe('rows BigQuery refuses, refused at append time', () => {
  test('PENDING stream: row errors name the refused rows; nothing of the request is appended', async () => {
    const { table, parent } = await freshTable();
    const stream = await writer.createWriteStream({
      streamType: managedwriter.PendingStream,
      destinationTable: parent,
    });
    const json = await connect(stream);
    const rows: Row[] = [
      good('a'),
      { id: 'b', j: '{broken' },
      good('c'),
      { id: 'd', g: 'not a geography' },
      { id: 'e', tags: [{ place: 'POINT(0 0)' }, { place: 'LINESTRING(1 1)' }] },
    ];
    const refused = await json.appendRows(rows as never, 0).getResult();
    expect(refused.rowErrors?.map((e) => [Number(e.index), e.code])).toEqual([
      [1, 'FIELDS_ERROR'],
      [3, 'FIELDS_ERROR'],
      [4, 'FIELDS_ERROR'],
    ]);
    expect(refused.rowErrors?.map((e) => e.message)).toEqual([
      'Field j: the JSON value does not parse',
      'Field g: invalid GEOGRAPHY: not WKT or GeoJSON: unknown geometry type NOT',
      'Field tags[1].place: invalid GEOGRAPHY: a LineString needs at least two distinct points',
    ]);
    // The same request without them, at the same offset: offset 0 is free, so nothing was appended.
    const accepted = await json.appendRows([rows[0], rows[2]] as never, 0).getResult();
    expect(accepted.error).toBeFalsy();
    expect(Number(accepted.appendResult?.offset?.value ?? 0)).toBe(0);
    const finalized = await writer.finalizeWriteStream({ name: stream });
    expect(Number(finalized.rowCount)).toBe(2);
    await writer.batchCommitWriteStream({ parent, writeStreams: [stream] });
    expect(await ids(table)).toEqual(['a', 'c']);
  });

  test('the _default stream refuses them the same way', async () => {
    const { table, parent } = await freshTable();
    const json = await connect(`${parent}/streams/_default`);
    const refused = await json.appendRows([good('a'), { id: 'b', j: '[1,' }] as never).getResult();
    expect(refused.rowErrors?.map((e) => Number(e.index))).toEqual([1]);
    expect(await ids(table)).toEqual([]);
    await json.appendRows([good('a')] as never).getResult();
    expect(await ids(table)).toEqual(['a']);
  });

  test.each([
    ['POINT(1 2)', null],
    ['point ( -180 90 )', null],
    ['POINT EMPTY', null],
    ['LINESTRING(0 0, 1 1)', null],
    ['POLYGON((0 0, 1 0, 1 1, 0 0))', null],
    ['MULTIPOINT((1 2), (3 4))', null],
    ['MULTIPOINT(1 2, 3 4)', null],
    ['MULTIPOLYGON(((0 0, 1 0, 1 1, 0 0)), ((5 5, 6 5, 6 6, 5 5)))', null],
    ['GEOMETRYCOLLECTION(POINT(1 2), LINESTRING(0 0, 1 1))', null],
    ['{"type":"Point","coordinates":[1,2]}', null],
    ['{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}', null],
    ['not a geography', 'not WKT or GeoJSON: unknown geometry type NOT'],
    ['POINT(200 100)', 'longitude 200 is outside [-180, 180]'],
    ['POINT(10 100)', 'latitude 100 is outside [-90, 90]'],
    ['LINESTRING(1 1)', 'a LineString needs at least two distinct points'],
    ['LINESTRING(1 1, 1 1)', 'a LineString needs at least two distinct points'],
    ['POLYGON((0 0, 1 0, 0 0))', 'a polygon ring must be closed and have at least four points'],
    ['POLYGON((0 0, 1 0, 1 1, 2 2))', 'a polygon ring must be closed and have at least four points'],
    ['POINT(1 2) trailing', 'unexpected "trailing" after the geometry'],
    ['POLYGON((0 0, 2 2, 2 0, 0 2, 0 0))', 'edge 0 crosses edge 2'],
    ['{"type":"Point","coordinates":[1,95]}', 'latitude 95 is outside [-90, 90]'],
    ['{"type":"Blob","coordinates":[]}', 'unknown GeoJSON geometry type "Blob"'],
  ])('insertAll takes %s: %s', async (g, refusal) => {
    const { table } = await freshTable();
    const result = await clients.bigquery
      .dataset(dataset)
      .table(table)
      .insert([{ id: 'ok' }, { id: 'x', g }], { raw: false })
      .then(
        () => [] as { index: number; errors: { reason: string; message: string }[] }[],
        (error: { errors?: { row: unknown; errors: { reason: string; message: string }[] }[] }) =>
          (error.errors ?? []).map((e) => ({
            index: (e.row as { id: string }).id === 'ok' ? 0 : 1,
            errors: e.errors,
          })),
      );
    if (refusal === null) {
      expect(result).toEqual([]);
      expect(await ids(table)).toEqual(['ok', 'x']);
    } else {
      expect(result).toEqual([
        { index: 1, errors: [{ reason: 'invalid', message: `Field g: invalid GEOGRAPHY: ${refusal}` }] },
      ]);
      expect(await ids(table)).toEqual(['ok']);
    }
  });

  test('insertAll: JSON that does not parse is an invalid row, the others go in', async () => {
    const { table } = await freshTable();
    const failure = await clients.bigquery
      .dataset(dataset)
      .table(table)
      .insert([
        { id: 'a', j: '{"ok":true}' },
        { id: 'b', j: '{broken' },
      ])
      .then(
        () => undefined,
        (error: { errors?: { row: { id: string }; errors: { reason: string; message: string }[] }[] }) =>
          error,
      );
    expect(failure?.errors?.map((e) => [e.row.id, e.errors[0]?.reason, e.errors[0]?.message])).toEqual([
      ['b', 'invalid', 'Field j: the JSON value does not parse'],
    ]);
    expect(await ids(table)).toEqual(['a']);
  });
});
