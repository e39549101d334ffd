import { afterAll, expect, test } from 'vitest';
import { stackClients, uniqueName } from '../support/stack.js';

const clients = await stackClients();
afterAll(() => clients.close());

test('bigquery: nested schema, insertAll, a MERGE that inserts only missing keys (twice), read back', async () => {
  const bq = clients.bigquery;
  const [dataset] = await bq.createDataset(uniqueName('smoke'));
  const schema = [
    { name: 'id', type: 'INT64', mode: 'REQUIRED' },
    { name: 'tags', type: 'STRING', mode: 'REPEATED' },
    {
      name: 'customer',
      type: 'RECORD',
      mode: 'NULLABLE',
      fields: [
        { name: 'name', type: 'STRING' },
        { name: 'address', type: 'RECORD', fields: [{ name: 'city', type: 'STRING' }] },
      ],
    },
  ];
  const [target] = await dataset.createTable('target', { schema });
  const [staging] = await dataset.createTable('staging', { schema });

  await target.insert(
    [{ insertId: '1', json: { id: 1, tags: ['a'], customer: { name: 'Ann', address: { city: 'Oslo' } } } }],
    { raw: true },
  );
  await staging.insert(
    [
      {
        insertId: '1',
        json: { id: 1, tags: ['changed'], customer: { name: 'Ann', address: { city: 'Oslo' } } },
      },
      {
        insertId: '2',
        json: { id: 2, tags: ['b', 'c'], customer: { name: 'Bo', address: { city: 'Rome' } } },
      },
    ],
    { raw: true },
  );

  const merge = `MERGE \`${dataset.id}.target\` T USING \`${dataset.id}.staging\` S ON T.id = S.id
    WHEN NOT MATCHED THEN INSERT ROW`;
  await bq.query({ query: merge });
  await bq.query({ query: merge });

  const [rows] = await bq.query({
    query: `SELECT id, tags, customer.name AS name, customer.address.city AS city FROM \`${dataset.id}.target\` ORDER BY id`,
  });
  expect(rows).toEqual([
    { id: 1, tags: ['a'], name: 'Ann', city: 'Oslo' },
    { id: 2, tags: ['b', 'c'], name: 'Bo', city: 'Rome' },
  ]);
});
