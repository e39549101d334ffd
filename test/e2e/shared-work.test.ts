/**
 * Tasks share the work (#13): an execution of 4 tasks, run as 4 separate processes of the real CLI on one
 * 16-partition topic, with one task SIGKILLed right after its first commit, holding leases on partitions whose records wait. The
 * three others drain their own shares, then take the dead task's partitions once its leases lapse: all of
 * it is drained in that execution, and in the exactly-once default mode nothing is in the table twice.
 */
import { expect, test } from 'vitest';
import {
  checkpointsOf,
  createPipeline,
  e2eClients,
  runVerify,
  startJob,
  tableOffsets,
} from '../support/job.js';
import { produce } from '../support/kafka.js';

const clients = await e2eClients();

test('4 tasks, one SIGKILLed early: the others drain its share in the same execution, each record once', async () => {
  const partitions = 16;
  const perPartition = 400;
  const pipeline = await createPipeline(clients, partitions, {
    BQ_WRITE_MODE: 'storage-write',
    LEASE_TTL_SECONDS: '4',
    BATCH_MAX_RECORDS: '40',
    DRAIN_BUDGET_SECONDS: '90',
    CLOUD_RUN_TASK_COUNT: '4',
    CLOUD_RUN_EXECUTION: 'exec-1',
  });
  await produce(
    pipeline.topic,
    Array.from({ length: partitions * perPartition }, (_, i) => ({
      partition: i % partitions,
      value: JSON.stringify({ id: `r${i}`, n: i, note: 'x'.repeat(200) }),
    })),
  );

  // Task 1 dies right after its first commit (the fault hook SIGKILLs it: no release, no summary), holding
  // leases on partitions whose records wait.
  const tasks = [0, 1, 2, 3].map((index) =>
    startJob({
      ...pipeline.env,
      CLOUD_RUN_TASK_INDEX: String(index),
      ...(index === 1 ? { KBD_FAULT_POINT: 'after-commit' } : {}),
    }),
  );
  const partitionDocs = clients.firestore.collection(`pipelines/${pipeline.id}/partitions`);
  const heldByTask1 = async () =>
    (await partitionDocs.get()).docs.filter((d) => String(d.get('leaseOwner') ?? '').includes('-t1-'));
  expect((await tasks[1]!.exited).signal).toBe('SIGKILL');
  // It left leases behind on partitions whose records wait: the case this test is about.
  const orphaned = (await heldByTask1()).filter((d) => (d.get('nextOffset') ?? 0) < perPartition);
  expect(orphaned.length).toBeGreaterThan(0);

  const survivors = [tasks[0]!, tasks[2]!, tasks[3]!];
  const ended = await Promise.all(survivors.map((t) => t.exited));
  expect(
    ended.map((e) => e.code),
    JSON.stringify(
      survivors.map((t) => t.lines.filter((l) => l.severity === 'ERROR' || l.severity === 'WARNING')),
    ),
  ).toEqual([0, 0, 0]);
  const summaries = survivors.map((t) => t.summary() as { stopReason: string; partitions: SummaryPart[] });
  const warnings = survivors.map((t) =>
    t.lines
      .filter((l) => l.severity !== 'INFO' && l.severity !== 'DEBUG' && l.event !== 'run_summary')
      .map((l) => `${l.time} ${l.runId} ${l.message} ${JSON.stringify(l.error ?? '')}`.slice(0, 300)),
  );
  for (const s of summaries) expect(s.stopReason, JSON.stringify(warnings, null, 1)).toBe('caught_up');

  // Every partition drained to its end in this execution, the orphaned ones by the survivors.
  const checkpoints = await checkpointsOf(clients, pipeline);
  for (let p = 0; p < partitions; p++) expect(checkpoints.get(p), `partition ${p}`).toBe(perPartition);
  const takenOver = summaries.flatMap((s) => s.partitions.filter((p) => p.shared && p.read > 0));
  for (const doc of orphaned) {
    expect(
      takenOver.map((p) => p.partition),
      `orphaned partition ${doc.get('partition')}`,
    ).toContain(doc.get('partition'));
  }

  // Each record once (storage-write: exactly once), and verify agrees.
  const table = await tableOffsets(clients, pipeline);
  for (let p = 0; p < partitions; p++) {
    const offsets = table.get(p) ?? [];
    expect(offsets.length, `partition ${p} rows`).toBe(perPartition);
    expect(new Set(offsets).size, `partition ${p} distinct`).toBe(perPartition);
  }
  const verify = await runVerify(pipeline.env);
  expect(verify.code).toBe(0);
  console.log(
    `shared work: ${orphaned.length} partitions orphaned by the killed task, taken over: ` +
      `${takenOver.map((p) => `${p.partition}(${p.read})`).join(' ')}`,
  );
}, 300_000);

interface SummaryPart {
  partition: number;
  read: number;
  shared?: boolean;
}
