/**
 * The patched BigQuery emulator (stack/bigquery-emulator/insert-all.patch) behaves like BigQuery in
 * tabledata.insertAll, seen through Google's own client:
 * - BYTES are decoded from base64. Unpatched, it stored the base64 text itself as the bytes: every
 *   `_kafka_key` of the insert-all and merge modes, and every dead letter's value in merge mode's error
 *   table, came back base64-encoded once too often, and no test of ours could tell right from wrong.
 * - A failed row's index is sent when it is 0. Unpatched, it was left out, and the client reported the
 *   first row's failure for no row at all: our sink took that row for written.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { stackClients, uniqueName } from '../support/stack.js';

const clients = await stackClients();
const dataset = uniqueName('bytes_emulator');
const b64 = (text: string) => Buffer.from(text).toString('base64');

beforeAll(async () => {
  await clients.bigquery.createDataset(dataset);
  await clients.bigquery.dataset(dataset).createTable('t', {
    schema: {
      fields: [
        { name: 'id', type: 'INT64' },
        { name: 'b', type: 'BYTES' },
        { name: 'many', type: 'BYTES', mode: 'REPEATED' },
        { name: 'nested', type: 'RECORD', fields: [{ name: 'payload', type: 'BYTES' }] },
      ],
    },
  });
});
afterAll(() => clients.close());

test('BYTES, REPEATED BYTES and BYTES in a RECORD are stored as the bytes their base64 encodes', async () => {
  await clients.bigquery
    .dataset(dataset)
    .table('t')
    .insert(
      [
        {
          insertId: '1',
          json: {
            id: 1,
            b: b64('k1'),
            many: [b64('x'), b64('yz')],
            nested: { payload: b64('\u0000\u00ff') },
          },
        },
        { insertId: '2', json: { id: 2, b: null } },
      ],
      { raw: true },
    );
  const [rows] = await clients.bigquery.query({
    query: `SELECT id, LENGTH(b) AS n, TO_HEX(b) AS hex, ARRAY_LENGTH(many) AS m,
                   (SELECT STRING_AGG(TO_HEX(x), ',') FROM UNNEST(many) AS x) AS many_hex,
                   TO_HEX(nested.payload) AS inner_hex
            FROM \`${dataset}.t\` ORDER BY id`,
  });
  expect(rows[0]).toMatchObject({ n: 2, hex: '6b31', m: 2, many_hex: '78,797a', inner_hex: '00c3bf' });
  expect(rows[1]).toMatchObject({ n: null, hex: null });
});

test('a BYTES value that is not base64 makes its row invalid; the other rows go in', async () => {
  const error = await clients.bigquery
    .dataset(dataset)
    .table('t')
    .insert(
      [
        // The first row of the request: its index is 0.
        { insertId: '3', json: { id: 3, b: 'not base64!' } },
        { insertId: '4', json: { id: 4, b: b64('ok') } },
        { insertId: '5', json: { id: 5, unknown: 1 } },
      ],
      { raw: true, skipInvalidRows: true },
    )
    .then(
      () => undefined,
      (e: unknown) =>
        e as { name: string; errors: { row: { insertId: string }; errors: { reason: string }[] }[] },
    );
  expect(error?.name).toBe('PartialFailureError');
  expect(error!.errors.map((e) => [e.row.insertId, e.errors[0]!.reason])).toEqual([
    ['3', 'invalid'],
    ['5', 'invalid'],
  ]);
  const [rows] = await clients.bigquery.query({
    query: `SELECT id, TO_HEX(b) AS hex FROM \`${dataset}.t\` WHERE id >= 3 ORDER BY id`,
  });
  expect(rows).toEqual([{ id: 4, hex: Buffer.from('ok').toString('hex') }]);
});
