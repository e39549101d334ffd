/**
 * An error table made by an older drain, without the `kafka_headers` column: the drain adds the column
 * (at the end, nullable) before it writes a dead letter there, and the letter's headers land in it.
 */
import { describe, expect, test } from 'vitest';
import { deadLetterTableSchema } from '../../functions/schema/table-schema.js';
import { createPipeline, e2eClients, errorsOf, moduleFile, runJob } from '../support/job.js';
import { produce } from '../support/kafka.js';

const clients = await e2eClients();
const refuseAll = moduleFile("export function validate() { return 'refused'; }");

describe.each(['storage-write', 'merge', 'load'])('%s mode', (mode) => {
  test("an older error table gets kafka_headers, and the letter's headers are in it", async () => {
    const pipeline = await createPipeline(clients, 1, { BQ_WRITE_MODE: mode, RULES_MODULE: refuseAll });
    const [dataset] = await clients.bigquery.createDataset(pipeline.dataset);
    const older = deadLetterTableSchema.filter((f) => f.name !== 'kafka_headers');
    await dataset.createTable(`${pipeline.table}_dead_letters`, { schema: { fields: [...older] } });
    await produce(pipeline.topic, [
      { partition: 0, value: JSON.stringify({ id: 'a', n: 1 }), headers: { trace: 'x' } },
    ]);
    const run = await runJob(pipeline.env);
    expect(run.code, errorsOf(run.lines)).toBe(0);
    expect(run.summary).toMatchObject({ deadLettered: 1 });

    const [metadata] = await dataset.table(`${pipeline.table}_dead_letters`).getMetadata();
    const names = (metadata.schema.fields as { name: string }[]).map((f) => f.name);
    expect(names).toEqual([...older.map((f) => f.name), 'kafka_headers']);
    const [rows] = await clients.bigquery.query({
      query: `SELECT kafka_headers FROM \`${pipeline.dataset}.${pipeline.table}_dead_letters\``,
    });
    expect(rows).toEqual([
      { kafka_headers: JSON.stringify([['trace', Buffer.from('x').toString('base64')]]) },
    ]);
  });
});
