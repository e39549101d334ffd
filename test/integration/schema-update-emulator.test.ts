/**
 * The patched BigQuery emulator (stack/bigquery-emulator/schema-update.patch) applies a schema update
 * through tables.patch to the table's storage, as BigQuery does, seen through Google's own client: added
 * columns (top level, nested in a RECORD, in a REPEATED RECORD) can be written and read, old rows keep their
 * values with the new columns empty, REQUIRED can be relaxed; and it refuses, with an invalid error and no
 * change, what BigQuery refuses. Unpatched, the schema changed and the storage did not: a row with the
 * new column failed ("Column b is not present in table"), and refused changes were taken.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { stackClients, uniqueName } from '../support/stack.js';

const clients = await stackClients();
const dataset = uniqueName('schema_emulator');
const fields = [
  { name: 'a', type: 'STRING', mode: 'REQUIRED' },
  { name: 'r', type: 'RECORD', fields: [{ name: 'x', type: 'INT64' }] },
  { name: 'arr', type: 'RECORD', mode: 'REPEATED', fields: [{ name: 'x', type: 'INT64' }] },
];
const table = () => clients.bigquery.dataset(dataset).table('t');

beforeAll(async () => {
  await clients.bigquery.createDataset(dataset);
  await clients.bigquery.dataset(dataset).createTable('t', { schema: { fields } });
  await table().insert([
    { a: 'one', r: { x: 1 }, arr: [{ x: 5 }, { x: 6 }] },
    { a: 'two', r: null, arr: [] },
  ]);
});
afterAll(() => clients.close());

test('added columns, nested ones too, and a relaxed mode reach the storage; old rows keep their values', async () => {
  const evolved = structuredClone(fields) as {
    name: string;
    type: string;
    mode?: string;
    fields?: unknown[];
  }[];
  evolved[0]!.mode = 'NULLABLE';
  evolved[1]!.fields!.push({ name: 'y', type: 'STRING', mode: 'NULLABLE' });
  evolved[2]!.fields!.push({ name: 'z', type: 'STRING', mode: 'NULLABLE' });
  evolved.push(
    { name: 'b', type: 'INT64', mode: 'NULLABLE' },
    { name: 'tags', type: 'STRING', mode: 'REPEATED' },
  );
  await table().setMetadata({ schema: { fields: evolved as never } });

  await table().insert([
    { a: null, r: { x: 2, y: 'why' }, arr: [{ x: 7, z: 'zed' }], b: 5, tags: ['p', 'q'] },
  ]);
  const [rows] = await clients.bigquery.query({
    query: `SELECT a, r.x AS x, r.y AS y, ARRAY_LENGTH(arr) AS n, arr[SAFE_OFFSET(0)].z AS z, b, ARRAY_LENGTH(tags) AS t
            FROM \`${dataset}.t\` ORDER BY b, a`,
  });
  expect(rows).toEqual([
    { a: 'one', x: 1, y: null, n: 2, z: null, b: null, t: 0 },
    { a: 'two', x: null, y: null, n: 0, z: null, b: null, t: 0 },
    { a: null, x: 2, y: 'why', n: 1, z: 'zed', b: 5, t: 2 },
  ]);
});

test.each([
  ['a removed column', (f: Field[]) => f.filter((x) => x.name !== 'b'), 'Field b is missing'],
  [
    'a changed type',
    (f: Field[]) => f.map((x) => (x.name === 'b' ? { ...x, type: 'STRING' } : x)),
    'changed type',
  ],
  [
    'a new REQUIRED column',
    (f: Field[]) => [...f, { name: 'c', type: 'STRING', mode: 'REQUIRED' }],
    'required',
  ],
  [
    'NULLABLE made REQUIRED',
    (f: Field[]) => f.map((x) => (x.name === 'b' ? { ...x, mode: 'REQUIRED' } : x)),
    'changed mode',
  ],
])('%s is refused as invalid, and nothing changes', async (_name, change, message) => {
  const [before] = await table().getMetadata();
  const error = await table()
    .setMetadata({ schema: { fields: change(before.schema.fields as Field[]) as never } })
    .then(
      () => undefined,
      (e: unknown) => e as { code: number; errors: { reason: string; message: string }[] },
    );
  expect(error?.code).toBe(400);
  expect(error!.errors[0]!.reason).toBe('invalid');
  expect(error!.errors[0]!.message).toContain(message);
  const [after] = await table().getMetadata();
  expect(after.schema).toEqual(before.schema);
  const [count] = await clients.bigquery.query({ query: `SELECT COUNT(*) AS c FROM \`${dataset}.t\`` });
  expect(count[0]).toEqual({ c: 3 });
});

interface Field {
  name: string;
  type: string;
  mode?: string;
}
