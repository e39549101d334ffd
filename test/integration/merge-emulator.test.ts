/**
 * The stack's patch to the emulator's SQL engine (stack/bigquery-emulator/googlesqlite-merge.patch): a
 * MERGE's equality join is checked natively before its predicate, and the table of matched pairs is built
 * only when a WHEN clause reads it. These tests prove that what a MERGE does is unchanged, through the
 * official BigQuery client and plain SQL: which rows match (by value, NULL never), updates and inserts in
 * one statement, keys of types compared only by the predicate, extra conditions in ON, and rows written
 * through different APIs. The time a MERGE takes against a large target is printed, not asserted.
 */
import { afterAll, expect, test } from 'vitest';
import { stackClients, uniqueName } from '../support/stack.js';

const clients = await stackClients();
afterAll(() => clients.close());

async function dataset(): Promise<string> {
  const name = uniqueName('merge_sql');
  await clients.bigquery.createDataset(name);
  return name;
}

async function query(sql: string): Promise<Record<string, unknown>[]> {
  const [rows] = await clients.bigquery.query({ query: sql });
  return rows as Record<string, unknown>[];
}

async function table(ds: string, name: string, schema: string, rows: string): Promise<void> {
  await query(`CREATE TABLE \`${ds}.${name}\` (${schema})`);
  if (rows !== '') await query(`INSERT INTO \`${ds}.${name}\` VALUES ${rows}`);
}

test('NOT MATCHED BY TARGET inserts exactly the source rows whose keys the target lacks; a NULL key never matches', async () => {
  const ds = await dataset();
  await table(
    ds,
    't',
    'topic STRING, p INT64, o INT64, v STRING',
    `('a', 0, 1, 'old'), ('a', 0, 2, 'old'), ('b', 1, 1, 'old')`,
  );
  await table(
    ds,
    's',
    'topic STRING, p INT64, o INT64, v STRING',
    `('a', 0, 2, 'new'), ('a', 0, 3, 'new'), ('b', 0, 1, 'new'), ('b', 1, 1, 'new'), (NULL, 0, 1, 'null key')`,
  );
  await query(
    `MERGE \`${ds}.t\` T USING \`${ds}.s\` S ON T.topic = S.topic AND T.p = S.p AND T.o = S.o
     WHEN NOT MATCHED BY TARGET THEN INSERT (topic, p, o, v) VALUES (S.topic, S.p, S.o, S.v)`,
  );
  const rows = await query(`SELECT topic, p, o, v FROM \`${ds}.t\` ORDER BY v, topic, p, o`);
  expect(rows).toEqual([
    { topic: 'a', p: 0, o: 3, v: 'new' },
    { topic: 'b', p: 0, o: 1, v: 'new' },
    { topic: null, p: 0, o: 1, v: 'null key' },
    { topic: 'a', p: 0, o: 1, v: 'old' },
    { topic: 'a', p: 0, o: 2, v: 'old' },
    { topic: 'b', p: 1, o: 1, v: 'old' },
  ]);
});

test('WHEN MATCHED UPDATE and WHEN NOT MATCHED INSERT in one MERGE: matched rows updated, the others inserted', async () => {
  const ds = await dataset();
  await table(ds, 't', 'k INT64, v STRING', `(1, 'one'), (2, 'two')`);
  await table(ds, 's', 'k INT64, v STRING', `(2, 'TWO'), (3, 'THREE')`);
  await query(
    `MERGE \`${ds}.t\` T USING \`${ds}.s\` S ON T.k = S.k
     WHEN MATCHED THEN UPDATE SET v = S.v
     WHEN NOT MATCHED THEN INSERT (k, v) VALUES (S.k, S.v)`,
  );
  expect(await query(`SELECT k, v FROM \`${ds}.t\` ORDER BY k`)).toEqual([
    { k: 1, v: 'one' },
    { k: 2, v: 'TWO' },
    { k: 3, v: 'THREE' },
  ]);
});

test('keys the native check leaves to the predicate (TIMESTAMP, FLOAT64) and conditions besides equality still decide', async () => {
  const ds = await dataset();
  await table(
    ds,
    't',
    'ts TIMESTAMP, x FLOAT64, n INT64',
    `(TIMESTAMP '2026-01-01 00:00:00+00', 1.5, 10), (TIMESTAMP '2026-01-02 00:00:00+00', 2.5, 10)`,
  );
  await table(
    ds,
    's',
    'ts TIMESTAMP, x FLOAT64, n INT64',
    `(TIMESTAMP '2026-01-01 00:00:00+00', 1.5, 5), (TIMESTAMP '2026-01-02 00:00:00+00', 2.5, 20), (TIMESTAMP '2026-01-03 00:00:00+00', 3.5, 1)`,
  );
  // Matched only where the time and the float are equal and the target's n is below the source's.
  await query(
    `MERGE \`${ds}.t\` T USING \`${ds}.s\` S ON T.ts = S.ts AND T.x = S.x AND T.n < S.n
     WHEN NOT MATCHED BY TARGET THEN INSERT (ts, x, n) VALUES (S.ts, S.x, S.n)`,
  );
  const rows = await query(`SELECT x, n FROM \`${ds}.t\` ORDER BY x, n`);
  expect(rows).toEqual([
    { x: 1.5, n: 5 },
    { x: 1.5, n: 10 },
    { x: 2.5, n: 10 },
    { x: 3.5, n: 1 },
  ]);
});

test('a target written by insertAll and a source by DML: equal values match whatever wrote them', async () => {
  const ds = await dataset();
  await table(ds, 't', 'id STRING, n INT64, ok BOOL', '');
  await clients.bigquery
    .dataset(ds)
    .table('t')
    .insert([
      { id: 'x', n: 1, ok: true },
      { id: 'é ünïcode', n: 2, ok: false },
    ]);
  await table(
    ds,
    's',
    'id STRING, n INT64, ok BOOL',
    `('x', 1, TRUE), ('é ünïcode', 2, FALSE), ('x', 1, FALSE)`,
  );
  await query(
    `MERGE \`${ds}.t\` T USING \`${ds}.s\` S ON T.id = S.id AND T.n = S.n AND T.ok = S.ok
     WHEN NOT MATCHED BY TARGET THEN INSERT (id, n, ok) VALUES (S.id, S.n, S.ok)`,
  );
  expect(await query(`SELECT id, n, ok FROM \`${ds}.t\` ORDER BY id, ok`)).toEqual([
    { id: 'x', n: 1, ok: false },
    { id: 'x', n: 1, ok: true },
    { id: 'é ünïcode', n: 2, ok: false },
  ]);
});

test('a MERGE of 900 rows into targets of 1,000 and 10,000 rows (time printed, not asserted)', async () => {
  const ds = await dataset();
  const figures: string[] = [];
  for (const size of [1_000, 10_000]) {
    const target = `t${size}`;
    await query(
      `CREATE TABLE \`${ds}.${target}\` AS SELECT 'orders' AS topic, 0 AS p, o, CAST(o AS STRING) AS v FROM UNNEST(GENERATE_ARRAY(0, ${size - 1})) AS o`,
    );
    await query(
      `CREATE TABLE \`${ds}.s${size}\` AS SELECT 'orders' AS topic, 0 AS p, o, CAST(o AS STRING) AS v FROM UNNEST(GENERATE_ARRAY(${size - 450}, ${size + 449})) AS o`,
    );
    const started = Date.now();
    await query(
      `MERGE \`${ds}.${target}\` T USING \`${ds}.s${size}\` S ON T.topic = S.topic AND T.p = S.p AND T.o = S.o
       WHEN NOT MATCHED BY TARGET THEN INSERT (topic, p, o, v) VALUES (S.topic, S.p, S.o, S.v)`,
    );
    figures.push(`${size} rows: ${Date.now() - started} ms`);
    const [{ c, d }] = (await query(
      `SELECT COUNT(*) AS c, COUNT(DISTINCT o) AS d FROM \`${ds}.${target}\``,
    )) as [{ c: number; d: number }];
    expect([c, d]).toEqual([size + 450, size + 450]);
  }
  console.log(`MERGE of 900 rows (450 new) into ${figures.join(', into ')}`);
});
