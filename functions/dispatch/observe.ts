/**
 * What the dispatcher reads of a pipeline, and nothing more (its account may only read): Kafka's
 * watermarks against the checkpoints and leases in Firestore, and the summaries of the runs of the rate's
 * window. No record is read.
 */
import type { Firestore } from '@google-cloud/firestore';
import { leaseHeld, livenessOf, partitionDocOf, partitionsOf } from '../checkpoints/partition-doc.js';
import type { Source } from '../kernel/ports.js';
import { partitionId } from '../kernel/records.js';
import type { QuietPartition } from './alerts-due.js';
import { type RunRate, rateWindowMs } from './sizing.js';

export interface PipelineView {
  /** Records waiting on the partitions runs drain (a paused partition's wait for an operator, not a task). */
  readonly backlog: number;
  /** The partitions runs drain (paused ones left out). */
  readonly partitions: number;
  readonly paused: number;
  /** Distinct tasks behind live leases (taskOfOwner): the tasks running now, as Firestore sees them. */
  readonly leaseOwners: number;
  /** The partitions not paused, for the alerts a quiet pipeline still owes (alerts-due.ts). */
  readonly quiet: readonly QuietPartition[];
}

export async function viewPipeline(
  deps: { readonly firestore: Firestore; readonly source: Source },
  pipelineId: string,
  topics: readonly string[],
  now: number,
): Promise<PipelineView> {
  const [marks, docs] = await Promise.all([
    deps.source.watermarks(topics),
    partitionsOf(deps.firestore, pipelineId).get(),
  ]);
  const byId = new Map(docs.docs.map((d) => [d.id, partitionDocOf(d)]));
  let backlog = 0;
  let paused = 0;
  const owners = new Set<string>();
  const quiet: QuietPartition[] = [];
  for (const mark of marks) {
    const doc = byId.get(partitionId(mark));
    const task = leaseHeld(doc, now) ? taskOfOwner(doc!.leaseOwner!) : undefined;
    if (task !== undefined) owners.add(task);
    if (doc?.paused === true) {
      paused++;
      continue;
    }
    // A partition never drained starts at its log start, as `status` counts it.
    backlog += Math.max(0, mark.end - (doc?.nextOffset ?? mark.logStart));
    quiet.push({
      topic: mark.topic,
      partition: mark.partition,
      logStart: mark.logStart,
      end: mark.end,
      ...(doc === undefined
        ? {}
        : {
            state: {
              nextOffset: doc.nextOffset ?? null,
              lastProgressAt: doc.lastProgressAt?.toMillis() ?? null,
              liveness: livenessOf(doc),
            },
          }),
    });
  }
  return { backlog, partitions: marks.length - paused, paused, leaseOwners: owners.size, quiet };
}

/**
 * The task behind a lease owner: a run drains each route group under `{runId}-r{n}` (job/run-job.ts), one
 * task all the same; an operator's `seek` (`seek:…`, cli/operations.ts) is no task.
 */
export function taskOfOwner(owner: string): string | undefined {
  if (owner.startsWith('seek:')) return undefined;
  return owner.replace(/-r\d+$/, '');
}

/** The run summaries of the rate's window, as the sizing rule reads them. */
export async function recentRuns(firestore: Firestore, pipelineId: string, now: number): Promise<RunRate[]> {
  const snapshot = await firestore
    .collection('pipelines')
    .doc(pipelineId)
    .collection('runs')
    .where('recordedAt', '>=', new Date(now - rateWindowMs))
    .get();
  return snapshot.docs.map((d) => runRateOf(d.data()));
}

/**
 * What a run's document teaches the rate: the records it drained, read or recovered (a run whose load job
 * outlasted it commits nothing; the next run's recovery commits its records: counted there, or the
 * dispatcher never learns a rate while every job outlasts its run, issue #78).
 */
export function runRateOf(data: FirebaseFirestore.DocumentData): RunRate {
  return {
    endedAt: data.recordedAt.toMillis(),
    recordsRead: Number(data.recordsRead ?? 0) + Number(data.recordsRecovered ?? 0),
    durationMs: Number(data.durationMs ?? 0),
    stopReason: data.stopReason,
  };
}
