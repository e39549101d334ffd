/**
 * `dispatch [--json] [--min-tasks N] [--max-tasks N]`: what the dispatcher (issue #66) would launch now
 * — the records waiting (as `status` reads them), the tasks still running (partitions whose lease a live
 * run holds, by owner), the rate a task drained in recent runs (their summaries in Firestore) — decided
 * by functions/dispatch/sizing.ts, printed as one `{"event":"dispatch", …}` line. It launches nothing yet.
 */
import { decideTasks, learnedRate, type RunRate, rateWindowMs } from '../dispatch/sizing.js';
import type { GoogleClients } from '../google/clients.js';
import { routeTopics } from '../job/routing.js';
import { partitionStatus } from '../status/partition-status.js';
import { UsageError } from './operations.js';
import { cliServices, readConfig } from './read-config.js';

export async function dispatch(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  let minTasks = 1;
  let maxTasks = Number.POSITIVE_INFINITY;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const next = argv[i + 1] ?? '';
    if (flag === '--json') continue;
    if ((flag === '--min-tasks' || flag === '--max-tasks') && /^[1-9]\d{0,3}$/.test(next)) {
      if (flag === '--min-tasks') minTasks = Number(next);
      else maxTasks = Number(next);
      i++;
    } else throw new UsageError(`unknown or incomplete argument "${flag}"`);
  }
  if (minTasks > maxTasks)
    throw new UsageError(`--min-tasks (${minTasks}) is above --max-tasks (${maxTasks})`);
  const config = readConfig(env);
  if (config === undefined) return 2;
  const { clients, kafka, source } = cliServices(config);
  try {
    const now = Date.now();
    const [partitions, runs] = await Promise.all([
      partitionStatus(
        { firestore: clients.firestore, source },
        { pipelineId: config.pipelineId, routed: await routeTopics(config, kafka) },
      ),
      recentRuns(clients.firestore, config.pipelineId, now),
    ]);
    const backlog = partitions.reduce((sum, p) => sum + Math.max(0, p.lag ?? 0), 0);
    const runningTasks = new Set(partitions.flatMap((p) => (p.leaseOwner === null ? [] : [p.leaseOwner])))
      .size;
    const ratePerTask = learnedRate(runs, now);
    const decision = decideTasks({
      backlog,
      partitionCount: partitions.length,
      runningTasks,
      ratePerTask,
      budgetSeconds: config.budgetSeconds,
      minTasks,
      maxTasks,
    });
    const line = {
      event: 'dispatch',
      pipeline: config.pipelineId,
      backlog,
      partitions: partitions.length,
      runningTasks,
      rate: ratePerTask === null ? null : Math.round(ratePerTask),
      tasks: decision.tasks,
      reason: decision.reason,
    };
    process.stdout.write(`${JSON.stringify(line)}\n`);
    return 0;
  } finally {
    await clients.close();
  }
}

/** The run summaries of the rate's window, as the sizing rule reads them. */
async function recentRuns(
  firestore: GoogleClients['firestore'],
  pipelineId: string,
  now: number,
): Promise<RunRate[]> {
  const snapshot = await firestore
    .collection('pipelines')
    .doc(pipelineId)
    .collection('runs')
    .where('recordedAt', '>=', new Date(now - rateWindowMs))
    .get();
  return snapshot.docs.map((d) => ({
    endedAt: d.get('recordedAt').toMillis(),
    recordsRead: Number(d.get('recordsRead') ?? 0),
    durationMs: Number(d.get('durationMs') ?? 0),
    stopReason: d.get('stopReason'),
  }));
}
