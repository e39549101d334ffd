import { asError } from '../kernel/errors.js';
import { partitionId } from '../kernel/records.js';
import type { RunSummary } from '../kernel/summary.js';
import { ownedBy } from './assignment.js';
import { measureFreshness } from './freshness-phase.js';
import { startLeaseKeeper } from './lease-keeper.js';
import { drainPartitions } from './read-phase.js';
import { releaseAll } from './release-phase.js';
import { createDrainRun, type DrainContext, type DrainOptions, type DrainPorts } from './run-state.js';
import { settleTaken } from './settle-phase.js';
import { shareWork } from './share-phase.js';

/**
 * One bounded run: lease this task's partitions, drain each from its checkpoint up to the end offset seen
 * at start, and commit each batch only after its rows and dead letters are durable; then, with several
 * tasks, other tasks' partitions whose records wait. Stops when caught up, at the budget, or on the
 * signal; always releases what it leased, and records its summary.
 */
export async function runDrain(
  ports: DrainPorts,
  options: DrainOptions,
  context: DrainContext,
): Promise<RunSummary> {
  const run = createDrainRun(ports, options, context);
  const { logger, now, timers, startedAt } = run;
  const stopKeeping = startLeaseKeeper(
    () => run.record.partitions.values(),
    ports,
    { ...options, logger, now },
    timers,
  );
  let failure: Error | undefined;
  try {
    const all = await ports.source.watermarks(options.topics);
    const mine = ownedBy(all, options.taskIndex, options.taskCount);
    await drainPartitions(run, mine, false);
    if (options.taskCount > 1 && !run.stop.signal.aborted) {
      const ids = new Set(mine.map(partitionId));
      await shareWork(
        run,
        all.filter((m) => !ids.has(partitionId(m))),
      );
    }
    await settleTaken(run);
  } catch (thrown) {
    failure = asError(thrown);
    logger.error('run failed', { error: failure });
  } finally {
    run.stop.dispose();
    stopKeeping();
    await run.reader?.close().catch((error: unknown) => logger.warn('closing the source failed', { error }));
    await releaseAll(run);
  }
  await measureFreshness(run);
  context.latency?.merge(run.record.latency());

  const summary = run.record.summary(options, {
    stopReason: failure === undefined ? (run.stop.reason ?? 'caught_up') : 'error',
    durationMs: now() - startedAt,
    ...(failure === undefined ? {} : { failure }),
  });
  await ports.checkpoints
    .recordRun(summary)
    .catch((error: unknown) => logger.warn('recording the run summary failed', { error }));
  return summary;
}
