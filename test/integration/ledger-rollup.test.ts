/**
 * The ledger stays small: 2,000 commits on one partition (ten roll-ups at the default 200) leave a bounded
 * number of ledger documents (the roll-up of the old ones and the recent ones), `verify` reads only those,
 * and it still catches a hole in the table before and after the roll-up point, and a hole in the ledger
 * that was rolled up.
 */
import { afterAll, expect, test } from 'vitest';
import { createFirestoreCheckpoints } from '../../functions/checkpoints/firestore-checkpoints.js';
import { ensureTargetTable } from '../../functions/sinks/bigquery-tables.js';
import { verifyPipeline } from '../../functions/verify/verify.js';
import { stackClients, uniqueName } from '../support/stack.js';

const clients = await stackClients();
afterAll(() => clients.close());

// Ten times what a partition keeps before rolling up (200): ten roll-ups, each hole ones behind it.
// KBD_ROLLUP_COMMITS=10000 for the longer run (about 2 minutes; the suite took that in CPU it lacks).
const commits = Number(process.env.KBD_ROLLUP_COMMITS ?? 2_000);

test(
  `${commits} commits on one partition: the ledger stays bounded and verify still catches holes on both sides of the roll-up`,
  { timeout: 600_000 },
  async () => {
    const pipelineId = uniqueName('rollup').replaceAll('_', '-');
    const checkpoints = createFirestoreCheckpoints(clients.firestore, pipelineId);
    const partition = { topic: 'orders', partition: 0 };
    let lease = (await checkpoints.acquire(partition, 'run-a', 600_000))!;
    const started = Date.now();
    const ledgerOf = clients.firestore.collection(`pipelines/${pipelineId}/partitions/orders~0/ledger`);
    for (let i = 0; i < commits; i++) {
      lease = await checkpoints.commit(
        {
          lease,
          fromOffset: i,
          nextOffset: i + 1,
          records: 1,
          rows: 1,
          deadLetters: 0,
          lastRecordTimestamp: 1,
        },
        600_000,
      );
      // A hole in the ledger (its entry for [5, 6) lost), long rolled up by the end.
      if (i === 5)
        await ledgerOf.doc(`${'5'.padStart(20, '0')}-${'6'.padStart(20, '0')}-${lease.epoch}`).delete();
    }
    const commitMs = Date.now() - started;
    const ledger = await ledgerOf.get();
    expect(ledger.size).toBeLessThanOrEqual(201);

    // The table holds every committed offset, then loses one before the roll-up point and one after it.
    const dataset = uniqueName('rollup');
    const table = await ensureTargetTable(clients.bigquery, { dataset, table: 'events', location: null }, [
      { name: 'id', type: 'STRING' },
    ]);
    const row = (o: number) => ({
      _kafka_topic: 'orders',
      _kafka_partition: 0,
      _kafka_offset: o,
      _kafka_timestamp: '2026-01-01T00:00:00Z',
      _ingested_at: '2026-01-01T00:00:00Z',
    });
    const offsets = Array.from({ length: commits }, (_, o) => o).filter(
      (o) => o !== 5 && o !== 100 && o !== commits - 3,
    );
    for (let i = 0; i < offsets.length; i += 500) await table.insert(offsets.slice(i, i + 500).map(row));

    const verdicts = await verifyPipeline(clients, {
      pipelineId,
      tables: [{ dataset, table: 'events' }],
      topics: ['orders'],
    });
    expect(verdicts).toHaveLength(1);
    const v = verdicts[0]!;
    expect(v.ok).toBe(false);
    expect(v.gaps).toEqual(['[5, 6)']); // the rolled-up hole in the ledger
    // Offset 5 is missing from both; 100 (rolled up) and the third-last (recent) only from the table.
    expect(v.missingRows).toBe(2);
    expect(v.commits).toBe(commits - 1);
    expect(v.ledgerRows).toBe(commits - 1);
    console.log(
      `ledger roll-up: ${commits} commits in ${commitMs} ms, ${ledger.size} ledger documents left (what verify reads)`,
    );
  },
);
