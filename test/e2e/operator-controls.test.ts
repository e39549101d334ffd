import { describe, expect, test } from 'vitest';
import { createFirestoreCheckpoints } from '../../functions/checkpoints/firestore-checkpoints.js';
import {
  checkpointsOf,
  createPipeline,
  e2eClients,
  errorsOf,
  type Pipeline,
  runCli,
  runCliInTerminal,
  runJob,
  runVerify,
  tableOffsets,
  waitFor,
} from '../support/job.js';
import { produce } from '../support/kafka.js';

const clients = await e2eClients();

const records = (partition: number, from: number, count: number) =>
  Array.from({ length: count }, (_, i) => ({
    partition,
    value: JSON.stringify({ id: `p${partition}-${from + i}`, n: from + i }),
  }));

async function auditOf(pipeline: Pipeline) {
  const docs = await clients.firestore.collection(`pipelines/${pipeline.id}/audit`).get();
  return docs.docs.map((d) => d.data());
}

async function firstOffsets(pipeline: Pipeline) {
  const table = await tableOffsets(clients, pipeline);
  return [0, 1].map((p) => table.get(p)?.[0] ?? null);
}

describe('START_POSITION', () => {
  test('earliest, latest, timestamp and explicit offsets each start where they say; a checkpoint always wins', async () => {
    const forms: [string, (before: number) => (number | null)[]][] = [
      ['earliest', () => [0, 0]],
      ['latest', () => [null, null]],
      ['timestamp', () => [5, 5]],
      ['offsets', () => [3, 0]],
    ];
    for (const [form, expected] of forms) {
      const pipeline = await createPipeline(clients, 2);
      await produce(pipeline.topic, [...records(0, 0, 5), ...records(1, 0, 5)]);
      const between = Date.now();
      await waitFor('the clock to move past the first records', async () => Date.now() > between + 5);
      await produce(pipeline.topic, [...records(0, 5, 5), ...records(1, 5, 5)]);
      const position = {
        earliest: 'earliest',
        latest: 'latest',
        timestamp: `timestamp:${new Date(between + 3).toISOString()}`,
        offsets: `offsets:${pipeline.topic}:0=3`,
      }[form]!;
      const first = await runJob({ ...pipeline.env, START_POSITION: position });
      expect(first.code, form).toBe(0);
      expect(await firstOffsets(pipeline), form).toEqual(expected(between));
      expect([...(await checkpointsOf(clients, pipeline)).values()], form).toEqual([10, 10]);

      // An existing checkpoint is never overridden: the next run, told to start at earliest, goes on.
      await produce(pipeline.topic, records(0, 10, 2));
      const next = await runJob({ ...pipeline.env, START_POSITION: 'earliest' });
      expect(
        next.summary.partitions.find((p) => p.partition === 0),
        form,
      ).toMatchObject({ from: 10, to: 12, read: 2 });
    }
  });
});

describe('seek, pause, resume', () => {
  test('seek backwards in merge mode replays without a duplicate, and leaves an audit record', async () => {
    const pipeline = await createPipeline(clients, 2, { BQ_WRITE_MODE: 'merge' });
    await produce(pipeline.topic, [...records(0, 0, 20), ...records(1, 0, 20)]);
    expect((await runJob(pipeline.env)).code).toBe(0);

    const dry = await runCli(
      [
        'seek',
        '--topic',
        pipeline.topic,
        '--partition',
        '0',
        '--offset',
        '5',
        '--reason',
        'replay check',
        '--dry-run',
      ],
      pipeline.env,
    );
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('would move');
    expect((await checkpointsOf(clients, pipeline)).get(0)).toBe(20);
    expect(await auditOf(pipeline)).toEqual([]);

    const moved = await runCli(
      ['seek', '--topic', pipeline.topic, '--partition', '0', '--offset', '5', '--reason', 'replay check'],
      pipeline.env,
    );
    expect(moved.code).toBe(0);
    expect(moved.stdout).toContain('merge mode inserts none of them twice');
    expect((await checkpointsOf(clients, pipeline)).get(0)).toBe(5);
    expect(await auditOf(pipeline)).toEqual([
      expect.objectContaining({
        action: 'seek',
        topic: pipeline.topic,
        partition: 0,
        from: 20,
        to: 5,
        reason: 'replay check',
        forced: false,
      }),
    ]);

    const replay = await runJob(pipeline.env);
    expect(replay.summary.partitions.find((p) => p.partition === 0)).toMatchObject({
      from: 5,
      to: 20,
      read: 15,
    });
    const table = await tableOffsets(clients, pipeline);
    expect(table.get(0)).toEqual([...Array(20).keys()]);
    const verify = await runVerify(pipeline.env);
    expect(verify.verdicts.filter((v) => v.ok !== true)).toEqual([]);
    expect(verify.code).toBe(0);
  });

  test('seek backwards in storage-write mode: what the table holds is not written again, what an operator deleted is, once', async () => {
    const pipeline = await createPipeline(clients, 2, { BQ_WRITE_MODE: 'storage-write' });
    await produce(pipeline.topic, [
      ...records(0, 0, 20),
      { partition: 0, value: '{not json' },
      ...records(0, 21, 4),
      ...records(1, 0, 20),
    ]);
    expect((await runJob(pipeline.env)).code).toBe(0);
    // The operator deletes two rows (say they were wrong downstream) and replays from offset 5.
    await clients.bigquery.query(
      `DELETE FROM \`${pipeline.dataset}.${pipeline.table}\` WHERE _kafka_partition = 0 AND _kafka_offset IN (7, 8)`,
    );
    const moved = await runCli(
      ['seek', '--topic', pipeline.topic, '--partition', '0', '--offset', '5', '--reason', 'replay 7 and 8'],
      pipeline.env,
    );
    expect(moved.code).toBe(0);
    expect(moved.stdout).toContain('those the tables still hold are not written again');
    expect((await checkpointsOf(clients, pipeline)).get(0)).toBe(5);

    const replay = await runJob(pipeline.env);
    expect(replay.code, errorsOf(replay.lines)).toBe(0);
    expect(replay.summary.partitions.find((p) => p.partition === 0)).toMatchObject({
      from: 5,
      to: 25,
      read: 20,
      rowsWritten: 2,
      deadLettered: 0,
    });
    const table = await tableOffsets(clients, pipeline);
    expect(table.get(0)).toEqual([...Array(25).keys()].filter((o) => o !== 20));
    expect(table.get(1)).toEqual([...Array(20).keys()]);
    const verify = await runVerify(pipeline.env);
    expect(verify.verdicts.filter((v) => v.ok !== true)).toEqual([]);
    expect(verify.code).toBe(0);
  });

  test('seek refuses while a run holds the lease, and outside the log unless forced; nothing moves', async () => {
    const pipeline = await createPipeline(clients, 1);
    await produce(pipeline.topic, records(0, 0, 10));
    expect((await runJob(pipeline.env)).code).toBe(0);

    const running = createFirestoreCheckpoints(clients.firestore, pipeline.id);
    const lease = await running.acquire({ topic: pipeline.topic, partition: 0 }, 'a-running-drain', 60_000);
    const refused = await runCli(
      ['seek', '--topic', pipeline.topic, '--offset', '2', '--reason', 'x'],
      pipeline.env,
    );
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain('leased by a running drain');
    expect(refused.stdout).toContain('pause the schedule first (gcloud scheduler jobs pause');
    await running.release(lease!);

    const outside = await runCli(
      ['seek', '--topic', pipeline.topic, '--offset', '50', '--reason', 'x'],
      pipeline.env,
    );
    expect(outside.code).toBe(2);
    expect(outside.stderr).toContain('outside');
    expect((await checkpointsOf(clients, pipeline)).get(0)).toBe(10);
    expect(await auditOf(pipeline)).toEqual([]);

    const forced = await runCli(
      ['seek', '--topic', pipeline.topic, '--offset', '50', '--reason', 'skip ahead', '--force'],
      pipeline.env,
    );
    expect(forced.code).toBe(0);
    expect(await auditOf(pipeline)).toEqual([expect.objectContaining({ from: 10, to: 50, forced: true })]);
  });

  test('a --timestamp seek that would move a partition forwards lists it and moves nothing (exit 2) unless --allow-forward', async () => {
    const pipeline = await createPipeline(clients, 2);
    await produce(pipeline.topic, [...records(0, 0, 10), ...records(1, 0, 10)]);
    expect((await runJob(pipeline.env)).code).toBe(0);
    // Partition 1 has 5 records not drained yet, all before the time; partition 0 gets 5 after it.
    await produce(pipeline.topic, records(1, 10, 5));
    const time = new Date(Date.now() + 20);
    await new Promise((resolve) => setTimeout(resolve, 40));
    await produce(pipeline.topic, records(0, 10, 5));
    const seek = (...more: string[]) =>
      runCli(
        ['seek', '--topic', pipeline.topic, '--timestamp', time.toISOString(), '--reason', 'x', ...more],
        pipeline.env,
      );

    const refused = await seek();
    expect(refused.code).toBe(2);
    expect(refused.stdout).toContain(`${pipeline.topic}~1 would move forwards from 10 to 15`);
    expect(refused.stdout).not.toContain(`${pipeline.topic}~0 would move`);
    expect(refused.stdout).toContain('nothing was moved');
    expect(refused.stdout).toContain('--allow-forward');
    expect(await checkpointsOf(clients, pipeline)).toEqual(
      new Map([
        [0, 10],
        [1, 10],
      ]),
    );
    expect(await auditOf(pipeline)).toEqual([]);

    const allowed = await seek('--allow-forward');
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stdout).toContain(`moved ${pipeline.topic}~1 from 10 to 15 (forwards)`);
    expect(await checkpointsOf(clients, pipeline)).toEqual(
      new Map([
        [0, 10],
        [1, 15],
      ]),
    );
  });

  test('bad arguments exit 2 with a clear message and change nothing', async () => {
    const pipeline = await createPipeline(clients, 2);
    await produce(pipeline.topic, records(0, 0, 3));
    expect((await runJob(pipeline.env)).code).toBe(0);
    const before = await checkpointsOf(clients, pipeline);
    for (const [args, message] of [
      [['seek', '--topic', 'no-such-topic', '--offset', '1', '--reason', 'x'], 'unknown topic'],
      [
        ['seek', '--topic', pipeline.topic, '--partition', '7', '--offset', '1', '--reason', 'x'],
        'out of range',
      ],
      [
        ['seek', '--topic', pipeline.topic, '--timestamp', '31/01/2026', '--reason', 'x'],
        'not an ISO-8601 time',
      ],
      [['seek', '--topic', pipeline.topic, '--offset', '1'], '--reason'],
      [['seek', '--topic', pipeline.topic, '--offset', '1', '--latest', '--reason', 'x'], 'one of'],
      [['pause', '--topic', pipeline.topic, '--partition', 'x', '--reason', 'x'], 'not a partition number'],
    ] as [string[], string][]) {
      const result = await runCli(args, pipeline.env);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toContain(message);
    }
    expect(await checkpointsOf(clients, pipeline)).toEqual(before);
    expect(await auditOf(pipeline)).toEqual([]);
  });

  test('a paused partition is neither drained nor touched; after resume it is drained from where it was', async () => {
    const pipeline = await createPipeline(clients, 2);
    await produce(pipeline.topic, [...records(0, 0, 5), ...records(1, 0, 5)]);
    expect((await runJob(pipeline.env)).code).toBe(0);
    const paused = await runCli(
      ['pause', '--topic', pipeline.topic, '--partition', '0', '--reason', 'poison upstream'],
      pipeline.env,
    );
    expect(paused.code).toBe(0);

    await produce(pipeline.topic, [...records(0, 5, 5), ...records(1, 5, 5)]);
    const during = await runJob(pipeline.env);
    expect(during.summary.partitions.find((p) => p.partition === 0)).toMatchObject({
      skipped: 'paused',
      read: 0,
    });
    expect(during.summary.partitions.find((p) => p.partition === 1)).toMatchObject({ from: 5, to: 10 });
    expect((await checkpointsOf(clients, pipeline)).get(0)).toBe(5);
    const status = await runCli(['status', '--json'], pipeline.env);
    expect(JSON.parse(status.stdout)).toEqual([
      expect.objectContaining({ partition: 0, checkpoint: 5, highWatermark: 10, lag: 5, paused: true }),
      expect.objectContaining({ partition: 1, checkpoint: 10, lag: 0, paused: false }),
    ]);
    // What an operator sees on a terminal 120 columns wide: nothing wider, the paused partition marked.
    const seen = await runCliInTerminal(['status'], pipeline.env, 120);
    expect(seen.code).toBe(0);
    expect(seen.lines[0]).toMatch(/^ {2}partition +checkpoint +lag +freshness +last progress/);
    expect(seen.lines.find((line) => line.includes(`${pipeline.topic}~0`))).toMatch(/^✗ .* 5 +5 .*paused$/);
    expect(seen.lines.find((line) => line.includes(`${pipeline.topic}~1`))).toMatch(/^ {2}/);
    const verified = await runCliInTerminal(['verify'], pipeline.env, 120);
    expect(verified.code).toBe(0);
    expect(verified.lines.at(-1)).toBe('verify: 2 partitions, no hole, no gap, no duplicate');
    for (const line of [...seen.lines, ...verified.lines]) expect(line.length, line).toBeLessThanOrEqual(120);
    expect(verified.lines.join('\n')).not.toContain('(index)');

    expect(
      (
        await runCli(
          ['resume', '--topic', pipeline.topic, '--partition', '0', '--reason', 'fixed'],
          pipeline.env,
        )
      ).code,
    ).toBe(0);
    const after = await runJob(pipeline.env);
    expect(after.summary.partitions.find((p) => p.partition === 0)).toMatchObject({
      from: 5,
      to: 10,
      read: 5,
    });
    expect((await auditOf(pipeline)).map((a) => [a.action, a.reason]).sort()).toEqual([
      ['pause', 'poison upstream'],
      ['resume', 'fixed'],
    ]);
  });
});
