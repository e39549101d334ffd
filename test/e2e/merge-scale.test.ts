/**
 * Merge mode at scale on the local stack: 3,000 records, kills at random, then clean runs of 20 s that
 * must catch up within a few runs. Before the emulator's MERGE was patched (googlesqlite-merge.patch) each
 * MERGE cost |target| x |staged| predicate calls and these runs fell further behind as the table grew: the
 * same test ended "not caught up after 40 clean runs".
 */
import { expect, test } from 'vitest';
import {
  createPipeline,
  e2eClients,
  leasesFree,
  runJob,
  runVerify,
  startJob,
  tableOffsets,
  waitFor,
} from '../support/job.js';
import { produce } from '../support/kafka.js';

const clients = await e2eClients();
const partitions = 4;
const perPartition = 750;
const malformedEvery = 13;
const cleanRunsAllowed = 8;

test('merge mode: 3,000 records, 15 SIGKILLs, then clean runs of 20 s catch up: every record once, verify clean', async () => {
  const pipeline = await createPipeline(clients, partitions, {
    BQ_WRITE_MODE: 'merge',
    DRAIN_BUDGET_SECONDS: '20',
    LEASE_TTL_SECONDS: '3',
    // Small flushes: many MERGEs, into a table that grows, and kills that land between them.
    BATCH_MAX_RECORDS: '50',
  });
  await produce(
    pipeline.topic,
    Array.from({ length: partitions * perPartition }, (_, i) => ({
      partition: i % partitions,
      value: i % malformedEvery === 0 ? `{malformed ${i}` : JSON.stringify({ id: `r${i}`, n: i }),
    })),
  );

  // Kills at random moments of runs; a run that ends by itself first (it drained everything) ends them.
  let kills = 0;
  let finished = false;
  while (kills < 15 && !finished) {
    const job = startJob(pipeline.env);
    await new Promise((resolve) => setTimeout(resolve, 1_000 + Math.random() * 4_000));
    const alive = job.child.exitCode === null && job.child.signalCode === null;
    job.child.kill('SIGKILL');
    await job.exited;
    if (alive) kills++;
    else {
      // A run that found the partitions still leased by a killed one ends at once: not finished.
      const summary = job.summary() as
        | { stopReason?: string; lag?: number; partitions?: { skipped?: string }[] }
        | undefined;
      finished =
        summary?.stopReason === 'caught_up' &&
        summary.lag === 0 &&
        (summary.partitions ?? []).every((p) => p.skipped === undefined);
    }
  }
  const drainedDuringKills = (await tableOffsets(clients, pipeline)).size > 0;
  await waitFor('leases of the killed runs to expire', () => leasesFree(clients, pipeline), 30_000);

  const runs: string[] = [];
  for (let run = 1; ; run++) {
    const { code, summary } = await runJob(pipeline.env);
    expect(code, JSON.stringify(summary)).toBe(0);
    runs.push(
      `${summary.recordsRead} read in ${summary.durationMs} ms (${summary.stopReason}, lag ${summary.lag})`,
    );
    if (summary.stopReason === 'caught_up' && summary.lag === 0) break;
    expect(run, `not caught up after ${run} clean runs: ${runs.join(' | ')}`).toBeLessThan(cleanRunsAllowed);
  }
  console.log(
    `merge mode, 3,000 records after ${kills} kills${finished ? ' (a run drained the rest by itself)' : ''}: clean runs ${runs.join(' | ')}`,
  );
  // The kills landed while records were being merged, not only before the first commit.
  expect(drainedDuringKills).toBe(true);

  // Every offset exactly once: a row in the table, or a row in the error table (which merge mode writes
  // itself, exactly once; the Pub/Sub copies of dead letters are at least once).
  const rows = await tableOffsets(clients, pipeline);
  const [errorRows] = await clients.bigquery.query({
    query: `SELECT _kafka_partition AS p, _kafka_offset AS o FROM \`${pipeline.dataset}.${pipeline.table}_dead_letters\``,
  });
  for (let p = 0; p < partitions; p++) {
    const inTable = rows.get(p) ?? [];
    const inErrors = (errorRows as { p: number; o: number }[])
      .filter((r) => Number(r.p) === p)
      .map((r) => Number(r.o));
    expect(
      [...inTable, ...inErrors].sort((a, b) => a - b),
      `partition ${p}`,
    ).toEqual([...Array(perPartition).keys()]);
  }
  const { code, verdicts } = await runVerify(pipeline.env);
  expect(code, JSON.stringify(verdicts)).toBe(0);
});
