/**
 * Schema evolution end to end (#14): records with a field the table lacks are quarantined as `schema` dead
 * letters; the schema file gains the field; the next run evolves the table (audited) and
 * `replay-dead-letters` lands them, each once. A change BigQuery cannot make stops the run with exit 2 and
 * writes nothing. Two tasks evolving one table at once both succeed.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import {
  checkpointsOf,
  createPipeline,
  e2eClients,
  runCli,
  runJob,
  schemaFields,
  tableOffsets,
} from '../support/job.js';
import { produce } from '../support/kafka.js';
import { uniqueName } from '../support/stack.js';

const clients = await e2eClients();

function schemaFile(fields: unknown[]): string {
  const file = join(tmpdir(), `${uniqueName('schema')}.json`);
  writeFileSync(file, JSON.stringify(fields));
  return file;
}

async function columns(dataset: string): Promise<string[]> {
  const [metadata] = await clients.bigquery.dataset(dataset).table('events').getMetadata();
  return (metadata.schema.fields as { name: string }[]).map((f) => f.name);
}

const withEmail = [...schemaFields, { name: 'email', type: 'STRING', mode: 'NULLABLE' }];

test('quarantine → evolve → replay: records with a new field land once the schema file has it, each once', async () => {
  const pipeline = await createPipeline(clients, 1, { BQ_WRITE_MODE: 'storage-write' });
  await produce(pipeline.topic, [
    ...Array.from({ length: 5 }, (_, i) => ({ partition: 0, value: JSON.stringify({ id: `r${i}`, n: i }) })),
    ...Array.from({ length: 3 }, (_, i) => ({
      partition: 0,
      value: JSON.stringify({ id: `e${i}`, n: 5 + i, email: `user${i}@example.com` }),
    })),
  ]);
  const first = await runJob(pipeline.env);
  expect(first.summary).toMatchObject({ rowsWritten: 5, deadLettered: 3 });
  const listed = await runCli(
    ['dead-letters', '--subscription', pipeline.deadLetterSubscription],
    pipeline.env,
  );
  expect(listed.stdout).toContain(`${pipeline.topic}:0:5  schema`);
  expect(listed.stdout).toContain('email');

  // The schema file gains the field: the next run evolves the table before it writes anything.
  const evolved = { ...pipeline.env, BQ_SCHEMA_FILE: schemaFile(withEmail) };
  const second = await runJob(evolved);
  expect(second.code).toBe(0);
  expect(await columns(pipeline.dataset)).toContain('email');
  expect(second.lines).toContainEqual(
    expect.objectContaining({ message: 'table schema evolved', kind: 'add', column: 'email' }),
  );
  const audit = await clients.firestore.collection(`pipelines/${pipeline.id}/audit`).get();
  expect(audit.docs.map((d) => d.data())).toContainEqual(
    expect.objectContaining({ action: 'schema_change', change: 'add', column: 'email', table: 'events' }),
  );

  const replayed = await runCli(
    ['replay-dead-letters', '--subscription', pipeline.deadLetterSubscription],
    evolved,
  );
  expect(replayed.code).toBe(0);
  expect(replayed.stdout).toContain('replayed 3, still failing 0');
  expect((await tableOffsets(clients, pipeline)).get(0)).toEqual([...Array(8).keys()]);
  const [rows] = await clients.bigquery.query({
    query: `SELECT _kafka_offset AS o, email FROM \`${pipeline.dataset}.events\` WHERE email IS NOT NULL ORDER BY o`,
  });
  expect(rows).toEqual([
    { o: 5, email: 'user0@example.com' },
    { o: 6, email: 'user1@example.com' },
    { o: 7, email: 'user2@example.com' },
  ]);
  // The old rows are intact, with the new column empty.
  const [old] = await clients.bigquery.query({
    query: `SELECT COUNT(*) AS c FROM \`${pipeline.dataset}.events\` WHERE email IS NULL AND id LIKE 'r%'`,
  });
  expect(old[0]).toEqual({ c: 5 });
});

test('a change BigQuery cannot make stops the run with exit 2, naming the column, and writes nothing', async () => {
  const pipeline = await createPipeline(clients, 1, { BQ_WRITE_MODE: 'storage-write' });
  await produce(pipeline.topic, [{ partition: 0, value: JSON.stringify({ id: 'a', n: 1 }) }]);
  expect((await runJob(pipeline.env)).code).toBe(0);
  await produce(pipeline.topic, [{ partition: 0, value: JSON.stringify({ id: 'b', n: 'two' }) }]);

  const retyped = schemaFields.map((f) => (f.name === 'n' ? { ...f, type: 'STRING' } : f));
  const run = await runJob({ ...pipeline.env, BQ_SCHEMA_FILE: schemaFile(retyped) });
  expect(run.code).toBe(2);
  const error = run.lines.find((l) => l.event === 'config_error');
  expect(error).toMatchObject({ variable: 'BQ_SCHEMA_FILE' });
  expect(String(error?.message)).toContain('column n changes type from INT64 to STRING');
  // Nothing moved and nothing was written; the table is as it was.
  expect((await checkpointsOf(clients, pipeline)).get(0)).toBe(1);
  expect((await tableOffsets(clients, pipeline)).get(0)).toEqual([0]);
  expect(await columns(pipeline.dataset)).toEqual(expect.arrayContaining(['id', 'n', 'note']));

  const removed = schemaFields.filter((f) => f.name !== 'note');
  const again = await runJob({ ...pipeline.env, BQ_SCHEMA_FILE: schemaFile(removed) });
  expect(again.code).toBe(2);
  expect(String(again.lines.find((l) => l.event === 'config_error')?.message)).toContain('column note');
});

test('two tasks evolving the same table at once: both go on, the column is added once, nothing is lost', async () => {
  const pipeline = await createPipeline(clients, 4, {
    BQ_WRITE_MODE: 'storage-write',
    CLOUD_RUN_TASK_COUNT: '2',
  });
  await produce(
    pipeline.topic,
    Array.from({ length: 40 }, (_, i) => ({
      partition: i % 4,
      value: JSON.stringify({ id: `r${i}`, n: i }),
    })),
  );
  expect((await runJob({ ...pipeline.env, CLOUD_RUN_TASK_INDEX: '0' })).code).toBe(0);
  await produce(
    pipeline.topic,
    Array.from({ length: 40 }, (_, i) => ({
      partition: i % 4,
      value: JSON.stringify({ id: `s${i}`, n: i, email: `u${i}@example.com` }),
    })),
  );
  const file = schemaFile(withEmail);
  const runs = await Promise.all(
    ['0', '1'].map((task) => runJob({ ...pipeline.env, BQ_SCHEMA_FILE: file, CLOUD_RUN_TASK_INDEX: task })),
  );
  expect(runs.map((r) => r.code)).toEqual([0, 0]);
  expect((await columns(pipeline.dataset)).filter((c) => c === 'email')).toHaveLength(1);
  const offsets = await tableOffsets(clients, pipeline);
  for (let p = 0; p < 4; p++) expect(offsets.get(p), `partition ${p}`).toEqual([...Array(20).keys()]);
  const [rows] = await clients.bigquery.query({
    query: `SELECT COUNT(*) AS c FROM \`${pipeline.dataset}.events\` WHERE email IS NOT NULL`,
  });
  expect(rows[0]).toEqual({ c: 40 });
});
