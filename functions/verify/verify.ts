import type { BigQuery } from '@google-cloud/bigquery';
import type { Firestore } from '@google-cloud/firestore';
import { type LedgerEntry, ledgerEntryOf } from '../checkpoints/ledger-entry.js';
import { partitionDocOf, partitionsOf } from '../checkpoints/partition-doc.js';
import { replaysOf } from '../checkpoints/replay-log.js';
import { forEachLimited } from '../kernel/concurrency.js';
import { heldAmong, type OffsetRange, type TableStats, tableStatsByPartition } from '../sinks/table-stats.js';
import { type PartitionVerdict, reconcile } from './reconcile.js';

/**
 * `kafka-bigquery-drain verify`: per partition, the continuity ledger (Firestore) against the target table
 * (BigQuery): aggregate queries grouped by partition over each committed offset range (a handful for a
 * thousand partitions), never a scan per row.
 */
export async function verifyPipeline(
  clients: { firestore: Firestore; bigquery: BigQuery },
  target: {
    pipelineId: string;
    /**
     * The tables the topics feed: one, or a group's (routes sharing a topic by `when`), reconciled
     * together: each offset's row in exactly one of them.
     */
    tables: readonly VerifiedTable[];
    topics: readonly string[];
    /** cdc mode: the table holds each key's last change (see reconcile). */
    changes?: boolean;
  },
): Promise<PartitionVerdict[]> {
  const partitions = await partitionsOf(clients.firestore, target.pipelineId).get();
  const found: { range: OffsetRange; checkpoint: number | null; ledger: LedgerEntry[] }[] = [];
  await forEachLimited(partitions.docs, 32, async (doc) => {
    const data = partitionDocOf(doc);
    if (data === undefined || !target.topics.includes(data.topic)) return;
    const { topic, partition } = data;
    const checkpoint = data.nextOffset ?? null;
    const ledger = await readLedger(doc.ref);
    // After an operator's reset (seek) history is reconciled from where it restarted.
    const lastReset = ledger.findLast((e) => e.reset === true);
    const from = lastReset?.to ?? ledger[0]?.from ?? checkpoint ?? 0;
    found.push({ range: { topic, partition, from, to: checkpoint ?? from }, checkpoint, ledger });
  });
  const ranges = found.map((f) => f.range);
  const { tables } = target;
  const rows = await summed(tables.map((t) => tableStatsByPartition(clients.bigquery, t, ranges)));
  const withLetters = tables.flatMap((t) =>
    t.deadLetterTable === undefined ? [] : [{ dataset: t.dataset, table: t.deadLetterTable }],
  );
  const letters =
    withLetters.length === 0
      ? undefined
      : await summed(
          withLetters.map((t) =>
            tableStatsByPartition(clients.bigquery, t, ranges).catch((error: unknown) => {
              // No error table yet: no dead letter was ever written there.
              if (/not found/i.test((error as Error).message)) return new Map<string, TableStats>();
              throw error;
            }),
          ),
        );
  const beyond = target.changes
    ? await summed(
        tables.map((t) =>
          tableStatsByPartition(
            clients.bigquery,
            t,
            ranges.map((r) => ({ ...r, from: r.to, to: Number.MAX_SAFE_INTEGER })),
          ),
        ),
      )
    : undefined;
  const replayed = await summedReplays(
    await Promise.all(
      tables.map((t) => replayedInto(clients, { ...t, pipelineId: target.pipelineId }, ranges)),
    ),
  );
  const none: TableStats = { rows: 0, distinctOffsets: 0, minOffset: null, maxOffset: null };
  return found
    .map(({ range, checkpoint, ledger }) => {
      const id = `${range.topic}:${range.partition}`;
      return reconcile(
        { topic: range.topic, partition: range.partition, checkpoint },
        ledger,
        rows.get(id) ?? none,
        letters === undefined ? undefined : (letters.get(id) ?? none),
        beyond === undefined ? undefined : { beyondCheckpoint: (beyond.get(id) ?? none).rows },
        replayed.get(id),
      );
    })
    .sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
}

/** A table a pipeline's topics feed, with its error table where the mode writes one. */
export interface VerifiedTable {
  readonly dataset: string;
  readonly table: string;
  readonly deadLetterTable?: string;
}

/** Per partition, the stats of several tables added up (an offset's rows in any of them count alike). */
async function summed(stats: readonly Promise<Map<string, TableStats>>[]): Promise<Map<string, TableStats>> {
  const all = await Promise.all(stats);
  const total = new Map<string, TableStats>();
  for (const map of all) {
    for (const [id, s] of map) {
      const t = total.get(id);
      total.set(
        id,
        t === undefined
          ? s
          : {
              rows: t.rows + s.rows,
              distinctOffsets: t.distinctOffsets + s.distinctOffsets,
              minOffset: either(t.minOffset, s.minOffset, Math.min),
              maxOffset: either(t.maxOffset, s.maxOffset, Math.max),
            },
      );
    }
  }
  return total;
}

function either(a: number | null, b: number | null, pick: (x: number, y: number) => number) {
  return a === null ? b : b === null ? a : pick(a, b);
}

function summedReplays(maps: readonly Map<string, { count: number; held: number }>[]) {
  const total = new Map<string, { count: number; held: number }>();
  for (const map of maps)
    for (const [id, r] of map) {
      const t = total.get(id) ?? { count: 0, held: 0 };
      total.set(id, { count: t.count + r.count, held: t.held + r.held });
    }
  return total;
}

/**
 * Per partition, the dead letters of its reconciled range that replays wrote into this table (the replay
 * log), and how many of them the table holds.
 */
async function replayedInto(
  clients: { firestore: Firestore; bigquery: BigQuery },
  target: { pipelineId: string; dataset: string; table: string },
  ranges: readonly OffsetRange[],
): Promise<Map<string, { count: number; held: number }>> {
  const table = `${target.dataset}.${target.table}`;
  const letters = (await replaysOf(clients.firestore, target.pipelineId)).filter((l) => l.table === table);
  const listsOf = (pending: boolean) =>
    ranges
      .map((r) => ({
        topic: r.topic,
        partition: r.partition,
        offsets: letters
          .filter(
            (l) =>
              (l.pending === true) === pending &&
              l.topic === r.topic &&
              l.partition === r.partition &&
              l.offset >= r.from &&
              l.offset < r.to,
          )
          .map((l) => l.offset),
      }))
      .filter((l) => l.offsets.length > 0);
  const [durable, pending] = [listsOf(false), listsOf(true)];
  const [held, heldPending] = await Promise.all([
    heldAmong(clients.bigquery, target, durable),
    pending.length === 0 ? new Map<string, number>() : heldAmong(clients.bigquery, target, pending),
  ]);
  // A durable letter must be in the table; a pending one (its replay killed after the log named the
  // table, before it marked the row durable) counts where the table holds its row.
  const out = new Map<string, { count: number; held: number }>();
  for (const [lists, counted] of [
    [durable, held],
    [pending, heldPending],
  ] as const)
    for (const l of lists) {
      const id = `${l.topic}:${l.partition}`;
      const n = counted.get(id) ?? 0;
      const t = out.get(id) ?? { count: 0, held: 0 };
      out.set(id, { count: t.count + (lists === durable ? l.offsets.length : n), held: t.held + n });
    }
  for (const [id, t] of out) if (t.count === 0) out.delete(id);
  return out;
}

async function readLedger(partition: FirebaseFirestore.DocumentReference): Promise<LedgerEntry[]> {
  const docs = await partition.collection('ledger').orderBy('committedAt').get();
  return docs.docs.map(ledgerEntryOf);
}
