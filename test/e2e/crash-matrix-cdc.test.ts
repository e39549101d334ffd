/**
 * The crash matrix in cdc mode (test/support/crash-matrix.ts's phases): keyed upserts, deletes and values
 * that are no JSON, written by kcat while the job is killed at each of the mode's points, frozen there as a
 * zombie and woken after another run took over, and stopped from outside (SIGKILL, SIGTERM) at random
 * moments. Its own invariant: the table ends equal to each key's last change (deletes applied, a key never
 * twice), each bad value in the error table once, no checkpoint ever back, `verify` clean.
 */
import { expect, test } from 'vitest';
import { cdcTables, randomChanges, upsertSchema } from '../support/cdc-tables.js';
import { crashPoints, expectEveryPoint, faultPhases, watchCheckpoints } from '../support/crash-matrix.js';
import { e2eClients, runVerify } from '../support/job.js';

const clients = await e2eClients();
const { cdcPipeline, tableState, expectedUpserts, produceChanges, untilCaughtUp } = cdcTables(clients);

test('cdc: every fault point ×2 and a zombie at each, random SIGKILLs and SIGTERMs: each key exact', async () => {
  const partitions = 3;
  const pipeline = await cdcPipeline(partitions, upsertSchema, {
    CHANGE_FORMAT: 'upsert',
    BQ_PRIMARY_KEY: 'id',
    BATCH_MAX_RECORDS: '20',
    LEASE_TTL_SECONDS: '3',
  });
  let produced = 0;
  let bad = 0;
  let producing = true;
  const producer = (async () => {
    while (producing) {
      // Every 13th change a value that is no JSON: a dead letter that changes nothing.
      const changes = randomChanges(30, 40, produced).map((c, i) => ({
        ...c,
        bad: (produced + i) % 13 === 12,
      }));
      await produceChanges(pipeline, partitions, changes);
      bad += changes.filter((c) => c.bad).length;
      produced += 30;
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  })();
  const watcher = watchCheckpoints(clients, pipeline);

  const phases = await faultPhases(clients, pipeline, crashPoints.cdc, true);
  producing = false;
  await producer;
  const runs = await untilCaughtUp(pipeline);
  const regressions = await watcher.stop();

  expectEveryPoint(crashPoints.cdc, phases, true);
  expect(regressions).toEqual([]);
  expect(await tableState(pipeline, ['v', 'note'])).toEqual(await expectedUpserts(pipeline));
  // Each bad value in the error table once.
  const [letters] = await clients.bigquery.query({
    query: `SELECT _kafka_partition AS p, _kafka_offset AS o FROM \`${pipeline.dataset}.${pipeline.table}_dead_letters\``,
  });
  const origins = (letters as { p: number; o: number }[]).map((l) => `${l.p}:${l.o}`);
  expect(new Set(origins).size).toBe(origins.length);
  expect(origins.length).toBe(bad);
  const verify = await runVerify(pipeline.env);
  expect(verify.code, JSON.stringify(verify.verdicts)).toBe(0);
  console.log(
    `cdc: ${produced} changes, fault deaths ${JSON.stringify(Object.fromEntries(phases.faultDeaths))}, ` +
      `zombies ${JSON.stringify(Object.fromEntries(phases.zombies))}, ${phases.kills} SIGKILLs and ` +
      `${phases.terms} SIGTERMs, caught up in ${runs} run(s)`,
  );
});
