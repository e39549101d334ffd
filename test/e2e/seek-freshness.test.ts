/**
 * After a backward seek, freshness (and so the freshness SLO) treats the replayed range as no outage: it
 * counts from the first record waiting behind the replay, in `status` while the replay waits and in the
 * run that replays. Records two hours old (confluent-kafka's CreateTime) are drained, a new one arrives,
 * an operator seeks back to 0: freshness is the new record's age, not 7,200 s.
 */
import { expect, test } from 'vitest';
import { createPipeline, e2eClients, errorsOf, runCli, runJob } from '../support/job.js';
import { pythonProduce } from '../support/producers.js';

const clients = await e2eClients();
const hex = (value: object) => Buffer.from(JSON.stringify(value)).toString('hex');

test('a replay is no outage: freshness counts from the record behind it, in status and in the run', async () => {
  const pipeline = await createPipeline(clients, 1, { BQ_WRITE_MODE: 'storage-write' });
  const twoHoursAgo = Date.now() - 7_200_000;
  await pythonProduce({
    topic: pipeline.topic,
    format: 'raw',
    partition: 0,
    timestamp: twoHoursAgo,
    values: JSON.stringify(Array.from({ length: 10 }, (_, n) => hex({ id: `old-${n}`, n }))),
  });
  const first = await runJob(pipeline.env);
  expect(first.code, errorsOf(first.lines)).toBe(0);
  expect(first.summary).toMatchObject({ rowsWritten: 10, freshnessSeconds: 0 });

  const thirtySecondsAgo = Date.now() - 30_000;
  await pythonProduce({
    topic: pipeline.topic,
    format: 'raw',
    partition: 0,
    timestamp: thirtySecondsAgo,
    values: JSON.stringify([hex({ id: 'new', n: 10 })]),
  });
  const seek = await runCli(
    [
      'seek',
      '--topic',
      pipeline.topic,
      '--partition',
      '0',
      '--offset',
      '0',
      '--reason',
      'reload after a fix',
    ],
    pipeline.env,
  );
  expect(seek.code, seek.stderr).toBe(0);

  const status = await runCli(['status', '--json'], pipeline.env);
  expect(status.code, status.stderr).toBe(0);
  const [line] = JSON.parse(status.stdout) as Record<string, number | null>[];
  expect(line).toMatchObject({ checkpoint: 0, lag: 11, replayUntil: 10 });
  // The new record's age (30 s and the time since), not the replayed records' two hours.
  expect(line!.freshnessSeconds).toBeGreaterThanOrEqual(30);
  expect(line!.freshnessSeconds).toBeLessThan(600);

  const replay = await runJob(pipeline.env);
  expect(replay.code, errorsOf(replay.lines)).toBe(0);
  expect(replay.summary).toMatchObject({ recordsRead: 11, freshnessSeconds: 0 });
  // Latency counts the new record only: the replayed ones are two hours old by design.
  expect((replay.summary.latencyMs as { count: number }).count).toBe(1);
  const after = JSON.parse((await runCli(['status', '--json'], pipeline.env)).stdout) as Record<
    string,
    unknown
  >[];
  expect(after[0]).toMatchObject({ checkpoint: 11, lag: 0, replayUntil: null, freshnessSeconds: 0 });
});

test('a seek forward, then back: what was never drained is no replay, in status and in the run (#78)', async () => {
  const pipeline = await createPipeline(clients, 1, { BQ_WRITE_MODE: 'storage-write' });
  const produceAt = (timestamp: number, ids: string[]) =>
    pythonProduce({
      topic: pipeline.topic,
      format: 'raw',
      partition: 0,
      timestamp,
      values: JSON.stringify(ids.map((id, n) => hex({ id, n }))),
    });
  const seekTo = async (offset: number) => {
    const seek = await runCli(
      ['seek', '--topic', pipeline.topic, '--partition', '0', '--offset', String(offset), '--reason', 'x'],
      pipeline.env,
    );
    expect(seek.code, seek.stderr).toBe(0);
  };
  // Five records two hours old, drained; five an hour old and one new arrive.
  await produceAt(Date.now() - 7_200_000, ['a0', 'a1', 'a2', 'a3', 'a4']);
  expect((await runJob(pipeline.env)).code).toBe(0);
  await produceAt(Date.now() - 3_600_000, ['b5', 'b6', 'b7', 'b8', 'b9']);
  await produceAt(Date.now() - 30_000, ['new']);
  // An operator skips [5, 10) ahead, then seeks back to 0: the replay goes through records never drained.
  await seekTo(10);
  await seekTo(0);

  const status = await runCli(['status', '--json'], pipeline.env);
  const [line] = JSON.parse(status.stdout) as Record<string, number | null>[];
  // The replay ends where the records never drained begin: freshness is the hour-old record's, the gap
  // shown, not the new record's 30 s (what counting [5, 10) as a replay showed).
  expect(line).toMatchObject({ checkpoint: 0, lag: 11, replayUntil: 5 });
  expect(line!.freshnessSeconds).toBeGreaterThanOrEqual(3_600);
  expect(line!.freshnessSeconds).toBeLessThan(7_200);

  const run = await runJob(pipeline.env);
  expect(run.code, errorsOf(run.lines)).toBe(0);
  // [0, 5) the table holds (a replay: counted, not written again); [5, 11) written.
  expect(run.summary).toMatchObject({ recordsRead: 11, rowsWritten: 6, freshnessSeconds: 0 });
  // Latency counts [5, 11): the records never drained and the new one; the replayed [0, 5) left out.
  expect((run.summary.latencyMs as { count: number }).count).toBe(6);
});
