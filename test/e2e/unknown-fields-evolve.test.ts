/**
 * UNKNOWN_FIELDS=evolve end to end (#41), records from kcat: a JSON field the table lacks, met mid-topic,
 * gets a NULLABLE column of the type its first value says before any row that needs it is written (the
 * partition waits for the next run, which writes it); a later value of another type is a `schema` dead
 * letter, the column unchanged; the caps hold (columns a run adds, columns the table may reach); every
 * column added is in the audit trail, and `verify` finds every offset.
 */
import { expect, test } from 'vitest';
import { createPipeline, e2eClients, errorsOf, runJob, runVerify } from '../support/job.js';
import { kcatProduce } from '../support/producers.js';

const clients = await e2eClients();

test('columns added mid-topic and between runs, a conflicting type a dead letter, the caps holding', async () => {
  const pipeline = await createPipeline(clients, 1, {
    BQ_WRITE_MODE: 'storage-write',
    UNKNOWN_FIELDS: 'evolve',
    EVOLVE_COLUMNS_PER_RUN: '3',
    // id, n and note (the schema file's), price and tags, then three more.
    EVOLVE_COLUMNS_MAX: '8',
  });
  const columns = async () => {
    const [metadata] = await clients.bigquery.dataset(pipeline.dataset).table(pipeline.table).getMetadata();
    return (
      (metadata.schema.fields as { name: string; type: string; mode?: string }[])
        .filter((f) => !f.name.startsWith('_'))
        // BigQuery answers with the legacy names (INTEGER, FLOAT, BOOLEAN), the emulator as it was told.
        .map((f) => {
          const type = ({ INTEGER: 'INT64', FLOAT: 'FLOAT64', BOOLEAN: 'BOOL' } as Record<string, string>)[
            f.type
          ];
          return `${f.name} ${f.mode ?? 'NULLABLE'} ${type ?? f.type}`;
        })
    );
  };
  const runUntilCaughtUp = async () => {
    for (let i = 0; i < 5; i++) {
      const { code, summary, lines } = await runJob(pipeline.env);
      expect(code, errorsOf(lines)).toBe(0);
      if (summary.partitions.every((p) => p.lag === 0)) return i + 1;
    }
    throw new Error('did not catch up in 5 runs');
  };

  await kcatProduce(
    pipeline.topic,
    0,
    [
      '{"id":"r0","n":0}',
      '{"id":"r1","n":1,"note":"known"}',
      '{"id":"r2","n":2,"price":9.5,"tags":["a","b"],"gone":null}',
      '{"id":"r3","n":3,"price":3}',
      '{"id":"r4","n":4,"price":"cheap"}',
    ],
    'none',
  );
  // Mid-topic: the run that meets price and tags adds them and holds that batch back; the next writes it.
  expect(await runUntilCaughtUp()).toBeGreaterThan(1);
  expect(await columns()).toEqual([
    'id REQUIRED STRING',
    'n NULLABLE INT64',
    'note NULLABLE STRING',
    'price NULLABLE FLOAT64',
    'tags REPEATED STRING',
  ]);
  const [rows] = await clients.bigquery.query({
    query: `SELECT id, n, note, price, tags FROM \`${pipeline.dataset}.${pipeline.table}\` ORDER BY id`,
  });
  expect(JSON.parse(JSON.stringify(rows))).toEqual([
    { id: 'r0', n: 0, note: null, price: null, tags: [] },
    { id: 'r1', n: 1, note: 'known', price: null, tags: [] },
    { id: 'r2', n: 2, note: null, price: 9.5, tags: ['a', 'b'] },
    { id: 'r3', n: 3, note: null, price: 3, tags: [] },
  ]);
  const [letters] = await clients.bigquery.query({
    query: `SELECT _kafka_offset AS o, error_kind AS kind, error_message AS message FROM \`${pipeline.dataset}.${pipeline.table}_dead_letters\``,
  });
  expect(letters).toEqual([{ o: 4, kind: 'schema', message: expect.stringContaining('price') }]);

  // Between runs, four new fields: a run adds three (EVOLVE_COLUMNS_PER_RUN), the next finds the table at
  // EVOLVE_COLUMNS_MAX and dead-letters the record that needs the fourth; the others are written.
  await kcatProduce(
    pipeline.topic,
    0,
    ['{"id":"r5","a1":1,"a2":true,"a3":{"x":"y"},"a4":"z"}', '{"id":"r6","a1":2}'],
    'none',
  );
  await runUntilCaughtUp();
  expect((await columns()).slice(5)).toEqual(['a1 NULLABLE INT64', 'a2 NULLABLE BOOL', 'a3 NULLABLE RECORD']);
  const [late] = await clients.bigquery.query({
    query: `SELECT _kafka_offset AS o, error_message AS message FROM \`${pipeline.dataset}.${pipeline.table}_dead_letters\` WHERE _kafka_offset = 5`,
  });
  expect(late).toEqual([{ o: 5, message: expect.stringContaining('EVOLVE_COLUMNS_MAX (8 columns)') }]);
  const [r6] = await clients.bigquery.query({
    query: `SELECT a1 FROM \`${pipeline.dataset}.${pipeline.table}\` WHERE id = 'r6'`,
  });
  expect(r6).toEqual([{ a1: 2 }]);

  // Every column added is in the audit trail, by the run that added it.
  const audit = await clients.firestore.collection(`pipelines/${pipeline.id}/audit`).get();
  const added = audit.docs
    .filter((d) => d.get('action') === 'schema_change')
    .map((d) => d.get('column') as string)
    .sort();
  expect(added).toEqual(['a1', 'a2', 'a3', 'price', 'tags']);
  const verify = await runVerify(pipeline.env);
  expect(verify.code).toBe(0);
  expect(verify.verdicts).toEqual([expect.objectContaining({ ok: true, ledgerRows: 5, deadLetters: 2 })]);
}, 300_000);
