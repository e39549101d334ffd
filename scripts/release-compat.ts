/**
 * G7 checked from outside, in `load` mode (issue #67's streamed loads): an earlier release and this checkout
 * take over each other's work in flight. `npm run release-compat [-- REV]` (REV: a git revision, by default
 * the last code before #67, 3748a04: flush-by-flush loads; the release of 2026-12-03 has no load mode and
 * refuses BQ_WRITE_MODE=load at start, exit 2) checks the revision out beside this checkout (`$TMPDIR/kbd-release-REV`,
 * this checkout's node_modules linked in), then, on the local stack, for each fault point of `load` mode:
 * one side's run killed there with its work in flight (an intent recorded, an upload not completed, a job
 * submitted and not committed...), the other side's run taking over until caught up, and the reverse; then
 * every produced record must be in the table or the error table exactly once, and `verify` (this
 * checkout's) clean. Prints a verdict a scenario and exits 1 if any fails. Not part of the suite: it needs
 * the repository's history and starts the older release through tsx (seconds a run).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createPipeline,
  leasesFree,
  type Pipeline,
  runJob,
  runVerify,
  startJob,
  tableOffsets,
  waitFor,
} from '../test/support/job.js';
import { produce } from '../test/support/kafka.js';
import { stackClients } from '../test/support/stack.js';
import { buildTestCli, testCli } from '../test/support/test-cli.js';

const root = join(import.meta.dirname, '..');
const rev = process.argv[2] ?? '3748a04';
// Outside the checkout: a second biome.json (or tsconfig) under it would trouble the checkout's tools.
const worktree = join(tmpdir(), `kbd-release-${rev}`);
if (!existsSync(worktree)) {
  execFileSync('git', ['worktree', 'add', '--detach', worktree, rev], { cwd: root, stdio: 'inherit' });
  symlinkSync(join(root, 'node_modules'), join(worktree, 'node_modules'));
}
await buildTestCli();
const sides = { old: join(worktree, 'bin', 'kafka-bigquery-drain.mjs'), new: testCli } as const;
type Side = keyof typeof sides;
/** The CLI the helpers start (test/support/test-cli.ts reads it per start). */
const use = (side: Side) => {
  process.env.KBD_E2E_CLI = sides[side];
};

// RELEASE_COMPAT_POINTS=a,b runs only those.
const points = (
  process.env.RELEASE_COMPAT_POINTS ?? 'after-error-table,after-intent,after-load-submitted,after-load-done,mid-commit'
).split(',');
const partitions = 3;
const clients = await stackClients();
const failures: string[] = [];

/** 60 records a partition, every 7th malformed; per partition, the offsets produced and which were bad. */
async function produceSome(pipeline: Pipeline, from: number): Promise<void> {
  const messages = [];
  for (let p = 0; p < partitions; p++)
    for (let i = from; i < from + 60; i++)
      messages.push({ partition: p, value: i % 7 === 6 ? `{bad ${i}` : JSON.stringify({ id: `r${i}`, n: i }) });
  await produce(pipeline.topic, messages);
}

async function scenario(killed: Side, point: string): Promise<void> {
  const takesOver: Side = killed === 'old' ? 'new' : 'old';
  const name = `${killed} killed at ${point}, ${takesOver} takes over`;
  const pipeline = await createPipeline(clients, partitions, {
    BQ_WRITE_MODE: 'load',
    BATCH_MAX_RECORDS: '10',
    LEASE_TTL_SECONDS: '3',
    LOAD_JOBS_PER_TABLE_PER_DAY: '1500',
    SCHEDULE_PERIOD_SECONDS: '86400',
  });
  await produceSome(pipeline, 0);
  use(killed);
  const job = startJob({ ...pipeline.env, KBD_FAULT_POINT: point });
  const { signal } = await job.exited;
  await produceSome(pipeline, 60);
  await waitFor('the killed run’s leases to lapse', () => leasesFree(clients, pipeline), 30_000);
  use(takesOver);
  const runs: string[] = [];
  for (let i = 0; i < 6; i++) {
    const { code, summary } = await runJob(pipeline.env);
    runs.push(`${code}/${summary.stopReason}/${summary.recordsRead}`);
    const lag = summary.partitions.reduce((n, p) => n + Number(p.lag ?? 0), 0);
    if (code === 0 && summary.stopReason === 'caught_up' && lag === 0) break;
    await waitFor('leases to lapse', () => leasesFree(clients, pipeline), 30_000);
  }
  use('new');
  const table = await tableOffsets(clients, pipeline);
  const [letters] = await clients.bigquery.query({
    query: `SELECT _kafka_partition AS p, _kafka_offset AS o FROM \`${pipeline.dataset}.${pipeline.table}_dead_letters\``,
  });
  const problems: string[] = [];
  for (let p = 0; p < partitions; p++) {
    const rows = table.get(p) ?? [];
    const bad = (letters as { p: number; o: number }[]).filter((r) => Number(r.p) === p).map((r) => Number(r.o));
    const expectRows = [...Array(120).keys()].filter((o) => o % 7 !== 6);
    const expectBad = [...Array(120).keys()].filter((o) => o % 7 === 6);
    const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b).join(',');
    if (sorted(rows) !== sorted(expectRows))
      problems.push(`partition ${p}: ${rows.length} rows (${rows.length - new Set(rows).size} twice), 103 expected`);
    if (sorted(bad) !== sorted(expectBad))
      problems.push(`partition ${p}: ${bad.length} error-table rows, ${expectBad.length} expected`);
  }
  const verify = await runVerify(pipeline.env);
  if (verify.code !== 0) problems.push(`verify exit ${verify.code}`);
  const verdict = problems.length === 0 ? 'ok' : `FAILED: ${problems.join('; ')}`;
  console.log(`${name} (killed: ${signal ?? 'not killed'}; runs ${runs.join(' ')}): ${verdict}`);
  if (problems.length > 0) failures.push(name);
}

try {
  for (const point of points) for (const killed of ['new', 'old'] as const) await scenario(killed, point);
} finally {
  await clients.close();
}
console.log(failures.length === 0 ? `release ${rev} and this checkout: every scenario ok` : `${failures.length} failed`);
process.exit(failures.length === 0 ? 0 : 1);
