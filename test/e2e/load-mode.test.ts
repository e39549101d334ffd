/**
 * `load` mode end to end, on what is its own (its crash matrix, refused rows and exact values live with
 * the other modes' in crash-matrix, refused-rows and formats): what a run reads of the table is one load
 * job (streamed as it is read), counted in Firestore against the table's day and named in the ledger; and a day's budget spent holds the records back (the partitions wait, `backlog` opens on
 * the alert topic, the run exits 0) until loads are allowed again.
 */
import { expect, test } from 'vitest';
import {
  checkpointsOf,
  createPipeline,
  e2eClients,
  errorsOf,
  runJob,
  runVerify,
  tableOffsets,
} from '../support/job.js';
import { produce } from '../support/kafka.js';
import { pullAll } from '../support/pubsub.js';
import { uniqueName } from '../support/stack.js';

const clients = await e2eClients();

const values = (partitions: number, count: number) =>
  Array.from({ length: partitions }, (_, partition) =>
    Array.from({ length: count }, (_, i) => ({
      partition,
      value: JSON.stringify({ id: `p${partition}-${i}`, n: i }),
    })),
  ).flat();

/** The table's load counter for the day (UTC) of `at`, as the drain keeps it. */
function counterOf(pipeline: { id: string; dataset: string; table: string }, at = Date.now()) {
  const day = new Date(at).toISOString().slice(0, 10);
  return clients.firestore.doc(`pipelines/${pipeline.id}/loads/${pipeline.dataset}.${pipeline.table}@${day}`);
}

/** Moments, one a UTC day, from `from` to `to`: a test that runs across midnight counts on both days. */
function daysBetween(from: number, to: number): number[] {
  const dayOf = (t: number) => new Date(t).toISOString().slice(0, 10);
  return dayOf(from) === dayOf(to) ? [from] : [from, to];
}

test("a run's reading of the table is one load job, streamed: counted once for the day, named in the ledger, done in BigQuery", async () => {
  const partitions = 3;
  // createPipeline's hourly runs with the whole day's loads: a run may take 62, whatever the hour.
  const pipeline = await createPipeline(clients, partitions, {
    BQ_WRITE_MODE: 'load',
    BATCH_MAX_RECORDS: '40',
  });
  await produce(pipeline.topic, values(partitions, 100));
  const began = Date.now();
  const drained = await runJob(pipeline.env);
  const ended = Date.now();
  expect(drained.code, errorsOf(drained.lines)).toBe(0);
  expect(drained.summary).toMatchObject({ stopReason: 'caught_up', recordsRead: 300, rowsWritten: 300 });
  const offsets = await tableOffsets(clients, pipeline);
  for (let p = 0; p < partitions; p++) expect(offsets.get(p)).toEqual([...Array(100).keys()]);

  // The jobs, as the ledger names them: one for the run's 9 batches (3 a partition: the load spans what
  // the run read, issue #67), done in BigQuery, and the day's counter holds exactly as many.
  const jobIds = new Set<string>();
  for (let p = 0; p < partitions; p++) {
    const ledger = await clients.firestore
      .collection(`pipelines/${pipeline.id}/partitions/${pipeline.topic}~${p}/ledger`)
      .get();
    for (const entry of ledger.docs)
      for (const job of (entry.get('streams') as string[] | undefined) ?? []) jobIds.add(job);
  }
  expect(jobIds.size).toBe(1);
  for (const id of jobIds) {
    // The pipeline, dataset and table, a digest of the three (no two tables share a prefix), the range's.
    expect(id).toMatch(
      new RegExp(`^kbd_load_${pipeline.id}_${pipeline.dataset}_events_t[0-9a-f]{16}_[0-9a-f]{32}_1_s$`),
    );
    const [metadata] = await clients.bigquery.job(id).getMetadata();
    expect(metadata.status).toEqual({ state: 'DONE' });
  }
  let counted = 0;
  for (const at of daysBetween(began, ended))
    counted += Number((await counterOf(pipeline, at).get()).get('count') ?? 0);
  expect(counted).toBe(jobIds.size);
  const verify = await runVerify(pipeline.env);
  expect(verify.code, JSON.stringify(verify.verdicts)).toBe(0);
});

test("a day too short for the schedule is refused; the day's loads spent: records held back, backlog opens, exit 0; then they land once", async () => {
  const alertTopic = uniqueName('alerts').replaceAll('_', '-');
  const [topic] = await clients.pubsub.createTopic(alertTopic);
  const [subscription] = await topic.createSubscription(`${alertTopic}-sub`);
  const pipeline = await createPipeline(clients, 2, {
    BQ_WRITE_MODE: 'load',
    ALERT_TOPIC: alertTopic,
    LOAD_JOBS_PER_TABLE_PER_DAY: '40',
    SCHEDULE_PERIOD_SECONDS: '300',
  });
  await produce(pipeline.topic, values(2, 25));
  // 40 loads a day cannot serve a run every 5 minutes: refused at start, naming the variables.
  const refused = await runJob(pipeline.env);
  expect(refused.code).toBe(2);
  expect(refused.summary).toMatchObject({ variable: 'LOAD_JOBS_PER_TABLE_PER_DAY' });
  expect(refused.summary.error).toMatch(
    /288 runs \(SCHEDULE_PERIOD_SECONDS=300\) of 1 tasks \(CLOUD_RUN_TASK_COUNT\)/,
  );
  pipeline.env.SCHEDULE_PERIOD_SECONDS = '3600';
  // Every load of the day taken (by earlier runs, say); the next day's too, should the run start after
  // midnight UTC.
  const spent = [Date.now(), Date.now() + 86_400_000];
  for (const at of spent) await counterOf(pipeline, at).set({ count: 40 });

  const held = await runJob(pipeline.env);
  expect(held.code, errorsOf(held.lines)).toBe(0);
  expect(held.summary).toMatchObject({ stopReason: 'stalled', rowsWritten: 0, lag: 50 });
  for (const p of held.summary.partitions)
    expect(p.waiting).toMatch(
      /has taken the \d+ load jobs allowed so far today \(of 40, LOAD_JOBS_PER_TABLE_PER_DAY/,
    );
  expect([...(await checkpointsOf(clients, pipeline)).values()].every((o) => o === null || o === 0)).toBe(
    true,
  );
  const alerts = async () =>
    (await pullAll(clients, subscription.name)).map(
      (m) =>
        JSON.parse(m.data.toString()) as { kind: string; state: string; partition: number; detail: string },
    );
  const opened = await alerts();
  expect(opened.map((a) => `${a.kind}:${a.state}:${a.partition}`).sort()).toEqual([
    'backlog:open:0',
    'backlog:open:1',
  ]);
  expect(opened[0]!.detail).toMatch(/25 records held back: table .* has taken the \d+ load jobs/);

  // A new day (the counters gone): the records land, each once, and backlog resolves. With loads to spare
  // at any hour: a day's first minutes allow a run's share alone (1 of 40 a day at this schedule), and
  // each partition's batch may be a load of its own.
  for (const at of spent) await counterOf(pipeline, at).delete();
  pipeline.env.LOAD_JOBS_PER_TABLE_PER_DAY = '1500';
  const drained = await runJob(pipeline.env);
  expect(drained.code, errorsOf(drained.lines)).toBe(0);
  expect(drained.summary).toMatchObject({ stopReason: 'caught_up', rowsWritten: 50 });
  const offsets = await tableOffsets(clients, pipeline);
  for (const p of [0, 1]) expect(offsets.get(p)).toEqual([...Array(25).keys()]);
  expect((await alerts()).map((a) => `${a.kind}:${a.state}:${a.partition}`).sort()).toEqual([
    'backlog:resolved:0',
    'backlog:resolved:1',
  ]);
});
