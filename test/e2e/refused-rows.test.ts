/**
 * One refusal policy for every write mode: a row BigQuery refuses (here, as the patched emulator refuses
 * it: a polygon whose edges cross, which the drain's own validator does not check) becomes a `rejected` dead letter
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

/**
 * Offsets 3 and 11 of partition 0 and 6 of partition 1 are polygons whose edges cross (a bow tie): valid
 * GEOGRAPHY text that the drain's validator lets through and BigQuery refuses, so `rejected`. Offset 9 of
 * partition 1 holds JSON text that does not parse, which the validator refuses up front (`schema`). The
 * rest are rows.
 */
const bowTie = 'POLYGON((0 0, 2 2, 2 0, 0 2, 0 0))';
const refusedAt = new Map([
  [0, [3, 11]],
  [1, [6]],
]);
const invalidAt = new Map([[1, [9]]]);
function value(partition: number, offset: number): string {
  const id = `p${partition}-${offset}`;
  if ((refusedAt.get(partition) ?? []).includes(offset)) return JSON.stringify({ id, g: bowTie });
  if ((invalidAt.get(partition) ?? []).includes(offset)) return JSON.stringify({ id, j: '{broken' });
  return JSON.stringify({ id, j: { n: offset }, g: 'POINT(1 2)' });
}
const lettersOf = (partition: number) =>
  [...(refusedAt.get(partition) ?? []), ...(invalidAt.get(partition) ?? [])].sort((a, b) => a - b);

describe.each(['storage-write', 'insert-all', 'merge', 'load'])('%s mode', (mode) => {
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

    let first = await runJob(pipeline.env);
    if (mode === 'load') {
      // The run's one load fails on the rows BigQuery refuses and loads nothing: the run fails (a retry
      // is safe, as Cloud Run's is); the retry reads the range again flush by flush, which names them.
      expect(first.code).toBe(1);
      expect(first.summary).toMatchObject({ stopReason: 'error', recordsRead: 0 });
      expect(errorsOf(first.lines)).toMatch(/the run's load job \S+ failed .*3 row\(s\) refused/);
      first = await runJob(pipeline.env);
    }
    expect(first.code, errorsOf(first.lines)).toBe(0);
    expect(first.summary).toMatchObject({
      stopReason: 'caught_up',
      recordsRead: 30,
      rowsWritten: 26,
      deadLettered: 4,
    });

    const offsets = await tableOffsets(clients, pipeline);
    for (const partition of [0, 1]) {
      const expected = [...Array(15).keys()].filter((o) => !lettersOf(partition).includes(o));
      expect(offsets.get(partition)).toEqual(expected);
    }
    const { messages, offsets: lettered } = await deadLetterOffsets(clients, pipeline);
    // Pub/Sub publishing is at least once: load's failed first run published its `schema` letter already.
    for (const partition of [0, 1])
      expect([...new Set(lettered.get(partition))]).toEqual(lettersOf(partition));
    // A refused row's letter says that BigQuery refused it, and why; the invalid JSON never reached it.
    const kinds = [
      ...new Set(
        messages.map((m) =>
          JSON.stringify([
            Number(m.attributes.source_partition),
            Number(m.attributes.source_offset),
            m.attributes.error_kind,
          ]),
        ),
      ),
    ]
      .map((k) => JSON.parse(k) as [number, number, string])
      .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    expect(kinds).toEqual([
      [0, 3, 'rejected'],
      [0, 11, 'rejected'],
      [1, 6, 'rejected'],
      [1, 9, 'schema'],
    ]);
    for (const m of messages.filter((l) => l.attributes.error_kind === 'rejected')) {
      expect(m.attributes.error_message).toMatch(/Field g: invalid GEOGRAPHY: edge 0 crosses edge 2/);
    }
    expect([...(await checkpointsOf(clients, pipeline)).values()]).toEqual([15, 15]);

    const second = await runJob(pipeline.env);
    expect(second.code, errorsOf(second.lines)).toBe(0);
    expect(second.summary).toMatchObject({ stopReason: 'caught_up', recordsRead: 0 });

    const verify = await runVerify(pipeline.env);
    expect(verify.code, JSON.stringify(verify.verdicts)).toBe(0);
  });
});
