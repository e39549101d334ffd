import { expect, test } from 'vitest';
import { createPipeline, e2eClients, moduleFile, runCli, runJob, tableOffsets } from '../support/job.js';
import { produce } from '../support/kafka.js';
import { pullAll } from '../support/pubsub.js';

const clients = await e2eClients();

test('a rule rejects records; the rule is fixed; replay moves them into the table; a second replay inserts nothing', async () => {
  const strict = moduleFile(
    "export function validate(order) { return order.n % 5 === 0 ? 'n ' + order.n + ' is a multiple of 5' : true; }",
  );
  const fixed = moduleFile('export async function validate() { return { ok: true }; }');
  const pipeline = await createPipeline(clients, 1, { BQ_WRITE_MODE: 'merge', RULES_MODULE: strict });
  // A second subscription on the dead-letter topic sees every dead letter too: the second replay.
  const second = `${pipeline.deadLetterTopic}-second`;
  await clients.pubsub.topic(pipeline.deadLetterTopic).createSubscription(second);
  await produce(pipeline.topic, [
    ...Array.from({ length: 20 }, (_, i) => ({ partition: 0, value: JSON.stringify({ id: `r${i}`, n: i }) })),
    { partition: 0, value: JSON.stringify({ id: 'bad', n: 'twenty' }) },
  ]);
  const run = await runJob(pipeline.env);
  expect(run.summary).toMatchObject({ rowsWritten: 16, deadLettered: 5 });

  const listed = await runCli(
    ['dead-letters', '--subscription', pipeline.deadLetterSubscription],
    pipeline.env,
  );
  expect(listed.code).toBe(0);
  expect(listed.stdout).toContain(`${pipeline.topic}:0:5  rule  n 5 is a multiple of 5`);
  expect(listed.stdout).toContain(
    `${pipeline.topic}:0:20  schema  n: must be an INT64, not the string "twenty"`,
  );

  const replayed = await runCli(['replay-dead-letters', '--subscription', pipeline.deadLetterSubscription], {
    ...pipeline.env,
    RULES_MODULE: fixed,
  });
  // A letter that fails again stays: the replay has not finished, exit 1, saying how many.
  expect(replayed.code).toBe(1);
  expect(replayed.stdout).toContain('replayed 4, still failing 1');
  expect(replayed.stdout).toContain('1 letters fail again and stay in the subscription: exit 1');
  expect(replayed.stdout).toContain('schema: n: must be an INT64');
  expect((await tableOffsets(clients, pipeline)).get(0)).toEqual([...Array(20).keys()]);
  // The record that still fails stays in the subscription; the replayed ones were acknowledged.
  expect(
    (await pullAll(clients, pipeline.deadLetterSubscription)).map((m) => m.attributes.source_offset),
  ).toEqual(['20']);

  const again = await runCli(['replay-dead-letters', '--subscription', second], {
    ...pipeline.env,
    RULES_MODULE: fixed,
  });
  expect(again.stdout).toContain('replayed 4, still failing 1');
  expect((await tableOffsets(clients, pipeline)).get(0)).toEqual([...Array(20).keys()]);
});
