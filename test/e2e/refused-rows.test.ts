/**
 * One refusal policy for every write mode: a row BigQuery refuses (here, as the patched emulator refuses
 * them: JSON text that does not parse, a GEOGRAPHY off the sphere) becomes a `rejected` dead letter
 * carrying BigQuery's message, the rest of its batch is written and committed, the checkpoint moves past
 * it, and the next run has nothing left to do. Before, in storage-write mode, one such row failed the
 * whole flush at every run, forever.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import {
  checkpointsOf,
  createPipeline,
  deadLetterOffsets,
  e2eClients,
  errorsOf,
  runJob,
  runVerify,
  tableOffsets,
} from '../support/job.js';
import { produce } from '../support/kafka.js';

const clients = await e2eClients();

const fields = [
  { name: 'id', type: 'STRING', mode: 'REQUIRED' },
  { name: 'j', type: 'JSON' },
  { name: 'g', type: 'GEOGRAPHY' },
];

/** Offsets 3 and 11 of partition 0 and 6 of partition 1 are refused by BigQuery; the rest are rows. */
const refusedAt = new Map([
  [0, [3, 11]],
  [1, [6]],
]);
function value(partition: number, offset: number): string {
  const id = `p${partition}-${offset}`;
  if (!(refusedAt.get(partition) ?? []).includes(offset))
    return JSON.stringify({ id, j: { n: offset }, g: 'POINT(1 2)' });
  return offset % 2 === 1
    ? JSON.stringify({ id, j: '{broken' })
    : JSON.stringify({ id, g: 'POINT(200 100)' });
}

describe.each(['storage-write', 'insert-all', 'merge'])('%s mode', (mode) => {
  test('refused rows become rejected dead letters; nothing is stuck; a second run is idle', async () => {
    const schemaFile = join(tmpdir(), `refused-rows-${mode}-${Date.now()}.schema.json`);
    writeFileSync(schemaFile, JSON.stringify(fields));
    const pipeline = await createPipeline(clients, 2, { BQ_WRITE_MODE: mode, BQ_SCHEMA_FILE: schemaFile });
    await produce(
      pipeline.topic,
      [0, 1].flatMap((partition) =>
        Array.from({ length: 15 }, (_, offset) => ({ partition, value: value(partition, offset) })),
      ),
    );

    const first = await runJob(pipeline.env);
    expect(first.code, errorsOf(first.lines)).toBe(0);
    expect(first.summary).toMatchObject({
      stopReason: 'caught_up',
      recordsRead: 30,
      rowsWritten: 27,
      deadLettered: 3,
    });

    const offsets = await tableOffsets(clients, pipeline);
    for (const [partition, refused] of refusedAt) {
      const expected = [...Array(15).keys()].filter((o) => !refused.includes(o));
      expect(offsets.get(partition)).toEqual(expected);
    }
    const { messages, offsets: lettered } = await deadLetterOffsets(clients, pipeline);
    for (const [partition, refused] of refusedAt) expect(lettered.get(partition)).toEqual(refused);
    // Each letter says it was BigQuery that refused the row, and why.
    for (const m of messages) {
      expect(m.attributes.error_kind).toBe('rejected');
      expect(m.attributes.error_message).toMatch(/JSON value does not parse|longitude 200 is outside/);
    }
    expect([...(await checkpointsOf(clients, pipeline)).values()]).toEqual([15, 15]);

    const second = await runJob(pipeline.env);
    expect(second.code, errorsOf(second.lines)).toBe(0);
    expect(second.summary).toMatchObject({ stopReason: 'caught_up', recordsRead: 0 });

    const verify = await runVerify(pipeline.env);
    expect(verify.code, JSON.stringify(verify.verdicts)).toBe(0);
  });
});
