import type { DocumentReference, Firestore } from '@google-cloud/firestore';
import { PartitionWaitsError } from '../../kernel/errors.js';

/**
 * The load jobs a table may still take today, counted in Firestore across every task and run
 * (`pipelines/{pipeline}/loads/{dataset}.{table}@{day}`, the day in UTC): BigQuery allows 1,500 load jobs
 * a table a day, failed ones included, and a job refused for quota would fail its flush.
 *
 * Paced through the day: by a moment of the day, the loads taken may reach the day's budget in proportion
 * to the time gone, plus one run's share (`burst`), never the whole budget. A quiet morning leaves loads
 * for a busy afternoon; a run that has spent what the clock allows leaves its records for the next run
 * (the partition waits, its checkpoint where it was) instead of spending the evening's loads at noon. A
 * load is counted before it is submitted: a run that dies between the two has spent one for nothing,
 * which only errs on the safe side.
 */
export interface LoadQuota {
  /** Counts one load of the table; throws PartitionWaitsError when the table may take none now. */
  take(): Promise<void>;
}

export interface LoadQuotaOptions {
  readonly firestore: Firestore;
  readonly pipelineId: string;
  readonly dataset: string;
  readonly table: string;
  readonly perDay: number;
  /** A run's share of the day: how far ahead of the clock the loads may run. */
  readonly burst: number;
  readonly now: () => number;
}

export function createLoadQuota(options: LoadQuotaOptions): LoadQuota {
  const { firestore, perDay, burst } = options;
  const loads = firestore.collection('pipelines').doc(options.pipelineId).collection('loads');
  return {
    async take() {
      const now = options.now();
      const day = new Date(now).toISOString().slice(0, 10);
      const allowed = loadsAllowed(now, perDay, burst);
      const doc = loads.doc(`${options.dataset}.${options.table}@${day}`);
      const took = await countOne(doc, allowed, {
        table: `${options.dataset}.${options.table}`,
        day,
        updatedAt: now,
      });
      if (!took) {
        throw new PartitionWaitsError(
          `table ${options.dataset}.${options.table} has taken the ${allowed} load jobs allowed so far today ` +
            `(of ${perDay}, LOAD_JOBS_PER_TABLE_PER_DAY, paced through the day): its records wait for a later run`,
          undefined,
          { heldBack: true },
        );
      }
    },
  };
}

/** Tasks counting the same table's loads at once: each lost race reads again, this many times at most. */
const countAttempts = 20;

/**
 * One more on the day's count unless it has reached `allowed`: a read, then a write conditioned on what
 * was read (created only if still missing, else updated only if unchanged since), again on a lost race.
 * Not a transaction: a task killed inside one would hold the document's lock, and the next run's count
 * would wait for it (the emulator aborts it after 20 s).
 */
async function countOne(
  doc: DocumentReference,
  allowed: number,
  fields: { table: string; day: string; updatedAt: number },
): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    const snapshot = await doc.get();
    const count = Number(snapshot.get('count') ?? 0);
    if (count >= allowed) return false;
    try {
      if (snapshot.exists) {
        await doc.update({ ...fields, count: count + 1 }, { lastUpdateTime: snapshot.updateTime! });
      } else {
        await doc.create({ ...fields, count: 1 });
      }
      return true;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      // FAILED_PRECONDITION (written since the read), ALREADY_EXISTS (created since): read again.
      if ((code !== 9 && code !== 6) || attempt >= countAttempts) throw error;
    }
  }
}

/** The loads a table may have taken by `now` (epoch ms): its share of the day so far plus a run's burst. */
export function loadsAllowed(now: number, perDay: number, burst: number): number {
  const msOfDay = now % 86_400_000;
  return Math.min(perDay, Math.floor((perDay * msOfDay) / 86_400_000) + burst);
}
