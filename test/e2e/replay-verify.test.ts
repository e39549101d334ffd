import { describe, expect, test } from 'vitest';
import {
  createPipeline,
  e2eClients,
  moduleFile,
  type Pipeline,
  runCli,
  runJob,
  runVerify,
  tableOffsets,
  waitFor,
} from '../support/job.js';
import { produce } from '../support/kafka.js';

const clients = await e2eClients();

const strict = moduleFile(
  "export function validate(order) { return order.n % 5 === 0 ? 'n ' + order.n + ' is a multiple of 5' : true; }",
);
const fixed = moduleFile('export async function validate() { return { ok: true }; }');

/** 2 partitions of 20 records: 4 of each rejected by the rule (replayable), 1 broken JSON (not). */
async function drainedWithLetters(mode: string): Promise<Pipeline> {
  const pipeline = await createPipeline(clients, 2, { BQ_WRITE_MODE: mode, RULES_MODULE: strict });
  await produce(
    pipeline.topic,
    [0, 1].flatMap((partition) => [
      ...Array.from({ length: 20 }, (_, n) => ({
        partition,
        value: JSON.stringify({ id: `p${partition}-${n}`, n }),
      })),
      { partition, value: '{broken' },
    ]),
  );
  const run = await runJob(pipeline.env);
  expect(run.summary).toMatchObject({ stopReason: 'caught_up', rowsWritten: 32, deadLettered: 10 });
  return pipeline;
}

const replay = (pipeline: Pipeline, env: Record<string, string> = {}) =>
  runCli(['replay-dead-letters', '--subscription', pipeline.deadLetterSubscription], {
    ...pipeline.env,
    RULES_MODULE: fixed,
    ...env,
  });

async function sql(query: string): Promise<void> {
  await clients.bigquery.query({ query });
}

describe.each(['storage-write', 'merge'])('%s mode: verify after replay-dead-letters', (mode) => {
  test('clean after the replay; a row deleted or added by hand is caught', async () => {
    const pipeline = await drainedWithLetters(mode);
    const before = await runVerify(pipeline.env);
    expect(before.code).toBe(0);

    const replayed = await replay(pipeline);
    // The two broken JSON letters fail again and stay: exit 1.
    expect(replayed.code).toBe(1);
    expect(replayed.stdout).toContain('replayed 8, still failing 2');
    expect(replayed.stdout).toContain('replayed 4 into partition');

    const after = await runVerify(pipeline.env);
    expect(after.code).toBe(0);
    expect(after.verdicts).toEqual(
      [0, 1].map((partition) =>
        expect.objectContaining({
          partition,
          ok: true,
          ledgerRows: 16,
          deadLetters: 5,
          replayed: 4,
          replayedMissing: 0,
          unknownRows: 0,
          tableRows: 20,
          errorTableRows: 5,
        }),
      ),
    );
    const status = await runCli(['status', '--json'], pipeline.env);
    expect(
      (JSON.parse(status.stdout) as { partition: number; replayed: number }[]).map((s) => s.replayed),
    ).toEqual([4, 4]);

    // A row whose origin is neither committed as a row nor replayed: the broken record's offset (20).
    const table = `\`${pipeline.dataset}.${pipeline.table}\``;
    await sql(
      `INSERT INTO ${table} (id, n, _kafka_topic, _kafka_partition, _kafka_offset, _kafka_timestamp, _ingested_at)
       VALUES ('forged', 1, '${pipeline.topic}', 0, 20, CURRENT_TIMESTAMP(), CURRENT_TIMESTAMP())`,
    );
    const forged = await runVerify(pipeline.env);
    expect(forged.code).toBe(1);
    expect(forged.verdicts[0]).toMatchObject({ partition: 0, ok: false, unknownRows: 1, replayedMissing: 0 });
    expect(forged.verdicts[1]).toMatchObject({ partition: 1, ok: true });

    await sql(`DELETE FROM ${table} WHERE _kafka_partition = 0 AND _kafka_offset = 20`);
    expect((await runVerify(pipeline.env)).code).toBe(0);

    // A replayed row deleted: the letter the replay log says is in the table is not.
    await sql(`DELETE FROM ${table} WHERE _kafka_partition = 1 AND _kafka_offset = 5`);
    const deleted = await runVerify(pipeline.env);
    expect(deleted.code).toBe(1);
    expect(deleted.verdicts[1]).toMatchObject({
      partition: 1,
      ok: false,
      replayedMissing: 1,
      unknownRows: 0,
    });
  });
});

test('a replay killed after its rows are durable, before its record: run again, each letter once, verify clean', async () => {
  const pipeline = await drainedWithLetters('storage-write');
  const killed = await replay(pipeline, { KBD_FAULT_POINT: 'after-replay-write' });
  expect(killed.code).toBeNull(); // SIGKILL: no exit code
  const offsets = await tableOffsets(clients, pipeline);
  expect(offsets.get(0)).toEqual([...Array(20).keys()]); // the rows are durable
  // and the replay log named their table before the write (pending): verify counts the rows it finds.
  expect((await runVerify(pipeline.env)).code).toBe(0);

  // Its letters were never acknowledged: Pub/Sub delivers them again once their deadline passes. The
  // route moved to another table meanwhile: refused, naming both, nothing written there (finding 6 of #77).
  const moved = await waitFor('the killed replay’s letters back on the subscription', async () => {
    const run = await replay(pipeline, { BQ_TABLE: 'events_moved' });
    return run.stdout.includes('still failing 10') ? run : undefined;
  });
  expect(moved.code).toBe(1);
  expect(moved.stdout).toContain(
    `began to write it into ${pipeline.env.BQ_DATASET}.events (and was stopped before it knew the row durable), and the routes now send it to ${pipeline.env.BQ_DATASET}.events_moved: refused`,
  );
  const again = await waitFor('the refused letters back on the subscription', async () => {
    const run = await replay(pipeline);
    return run.stdout.includes('replayed 8,') ? run : undefined;
  });
  expect(again.code).toBe(1); // the two broken JSON letters stay
  expect(await tableOffsets(clients, pipeline)).toEqual(
    new Map([
      [0, [...Array(20).keys()]],
      [1, [...Array(20).keys()]],
    ]),
  );
  const verified = await runVerify(pipeline.env);
  expect(verified.code).toBe(0);
  expect(verified.verdicts.map((v) => v.replayed)).toEqual([4, 4]);
});
