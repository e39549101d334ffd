import type { BigQuery } from '@google-cloud/bigquery';
import { forEachLimited } from '../kernel/concurrency.js';
import type { PartitionRef } from '../kernel/records.js';
import { deadLetterTableName } from '../schema/table-schema.js';
import { bigQueryError } from './bigquery-tables.js';
import type { HeldOffsets } from './contracts.js';

export interface TableStats {
  /** Rows with offsets in [ledger start, checkpoint). */
  readonly rows: number;
  readonly distinctOffsets: number;
  readonly minOffset: number | null;
  readonly maxOffset: number | null;
}

export interface OffsetRange {
  readonly topic: string;
  readonly partition: number;
  readonly from: number;
  readonly to: number;
}

/**
 * What a replayed range's target and error tables hold of one partition's [from, to): two queries (the
 * exactly-once modes that write the error table themselves read it before writing a range again).
 */
export async function heldOffsets(
  bigquery: BigQuery,
  target: { dataset: string; table: string },
  partition: PartitionRef,
  from: number,
  to: number,
): Promise<HeldOffsets> {
  const range = { topic: partition.topic, partition: partition.partition, from, to };
  const errorTable = deadLetterTableName(target.table);
  const held = (table: string) =>
    offsetsHeld(bigquery, { dataset: target.dataset, table }, range).catch((error: unknown) => {
      // No error table yet: no dead letter was ever written there.
      if (table === errorTable && /not found/i.test(String((error as Error).message)))
        return new Map<number, number>();
      throw error;
    });
  return { rows: await held(target.table), deadLetters: await held(errorTable) };
}

/**
 * The offsets a table holds of one partition's [from, to), each with the Kafka timestamp (epoch ms) of
 * what it holds there: one query (a replayed range).
 */
export async function offsetsHeld(
  bigquery: BigQuery,
  target: { dataset: string; table: string },
  range: OffsetRange,
): Promise<Map<number, number>> {
  for (const n of [range.partition, range.from, range.to]) {
    if (!Number.isSafeInteger(n)) throw new RangeError(`${n} is not an offset or a partition`);
  }
  if (!/^[a-zA-Z0-9._-]+$/.test(range.topic))
    throw new RangeError(`${range.topic} is not a Kafka topic name`);
  try {
    const [rows] = await bigquery.query({
      query: `SELECT _kafka_offset AS offset_, UNIX_MILLIS(MIN(_kafka_timestamp)) AS ts_
              FROM \`${target.dataset}.${target.table}\`
              WHERE ${everyPartition} AND _kafka_topic = '${range.topic}' AND _kafka_partition = ${range.partition}
                AND _kafka_offset >= ${range.from} AND _kafka_offset < ${range.to}
              GROUP BY _kafka_offset`,
    });
    return new Map(
      (rows as { offset_: number; ts_: number }[]).map((r) => [Number(r.offset_), Number(r.ts_)]),
    );
  } catch (error) {
    throw bigQueryError(error, `read the offsets ${target.table} holds`);
  }
}

/**
 * A filter on the partitioning column that keeps every row: a table made with a required partition filter
 * (BQ_REQUIRE_PARTITION_FILTER) refuses queries without one, and these must read all of a partition's rows.
 */
const everyPartition = "_kafka_timestamp >= TIMESTAMP('0001-01-01')";

/** Ranges per query: a thousand partitions cost a handful of aggregate queries, not a thousand. */
const rangesPerQuery = 200;

/**
 * Aggregate queries of one table at once: one. Four at once (a thousand partitions' verify) made the
 * BigQuery emulator answer "i/o timeout" on a loaded machine; real BigQuery would take them.
 */
const queriesAtOnce = 1;
const empty: TableStats = { rows: 0, distinctOffsets: 0, minOffset: null, maxOffset: null };

/**
 * What a table holds of each partition's offsets in [from, to): aggregate queries grouped by partition,
 * never a scan per row. `verify` reconciles the ledger with it; storage-write recovery decides a gone
 * stream's fate by it. Keyed by `topic:partition`. Offsets and partitions are integers and topics Kafka
 * topic names, so they are inlined (the emulator cannot bind numeric parameters); anything else is refused.
 */
export async function tableStatsByPartition(
  bigquery: BigQuery,
  target: { dataset: string; table: string },
  ranges: readonly OffsetRange[],
): Promise<Map<string, TableStats>> {
  const stats = new Map<string, TableStats>();
  for (const r of ranges) {
    for (const n of [r.partition, r.from, r.to]) {
      if (!Number.isSafeInteger(n)) throw new RangeError(`${n} is not an offset or a partition`);
    }
    if (!/^[a-zA-Z0-9._-]+$/.test(r.topic)) throw new RangeError(`${r.topic} is not a Kafka topic name`);
    stats.set(`${r.topic}:${r.partition}`, empty);
  }
  // The queries of a wide pipeline (a thousand partitions: five), one after the other.
  const slices = Array.from({ length: Math.ceil(ranges.length / rangesPerQuery) }, (_, i) =>
    ranges.slice(i * rangesPerQuery, (i + 1) * rangesPerQuery),
  );
  await forEachLimited(slices, queriesAtOnce, async (slice) => {
    const clauses = slice.map(
      (r) =>
        `(_kafka_topic = '${r.topic}' AND _kafka_partition = ${r.partition} AND _kafka_offset >= ${r.from} AND _kafka_offset < ${r.to})`,
    );
    try {
      const [rows] = await bigquery.query({
        query: `SELECT _kafka_topic AS topic_, _kafka_partition AS partition_, COUNT(*) AS rows_,
                  COUNT(DISTINCT _kafka_offset) AS distinct_, MIN(_kafka_offset) AS min_, MAX(_kafka_offset) AS max_
                FROM \`${target.dataset}.${target.table}\`
                WHERE ${everyPartition} AND (${clauses.join('\n OR ')})
                GROUP BY _kafka_topic, _kafka_partition`,
      });
      for (const r of rows as {
        topic_: string;
        partition_: number;
        rows_: number;
        distinct_: number;
        min_: number | null;
        max_: number | null;
      }[]) {
        stats.set(`${r.topic_}:${Number(r.partition_)}`, {
          rows: Number(r.rows_),
          distinctOffsets: Number(r.distinct_),
          minOffset: r.min_ === null ? null : Number(r.min_),
          maxOffset: r.max_ === null ? null : Number(r.max_),
        });
      }
    } catch (error) {
      throw bigQueryError(error, `count rows of ${target.table}`);
    }
  });
  return stats;
}

/** One partition's range (see tableStatsByPartition). */
export async function tableStats(
  bigquery: BigQuery,
  target: { dataset: string; table: string },
  topic: string,
  partition: number,
  from: number,
  to: number,
): Promise<TableStats> {
  const stats = await tableStatsByPartition(bigquery, target, [{ topic, partition, from, to }]);
  return stats.get(`${topic}:${partition}`)!;
}

/**
 * Of each partition's listed offsets, how many the table holds (the rows a replay of dead letters wrote):
 * one aggregate query for them all. Keyed by `topic:partition`; a partition holding none is absent.
 */
export async function heldAmong(
  bigquery: BigQuery,
  target: { dataset: string; table: string },
  lists: readonly { topic: string; partition: number; offsets: readonly number[] }[],
): Promise<Map<string, number>> {
  const held = new Map<string, number>();
  const clauses: string[] = [];
  for (const l of lists) {
    for (const n of [l.partition, ...l.offsets]) {
      if (!Number.isSafeInteger(n)) throw new RangeError(`${n} is not an offset or a partition`);
    }
    if (!/^[a-zA-Z0-9._-]+$/.test(l.topic)) throw new RangeError(`${l.topic} is not a Kafka topic name`);
    if (l.offsets.length > 0)
      clauses.push(
        `(_kafka_topic = '${l.topic}' AND _kafka_partition = ${l.partition} AND _kafka_offset IN (${l.offsets.join(', ')}))`,
      );
  }
  if (clauses.length === 0) return held;
  try {
    const [rows] = await bigquery.query({
      query: `SELECT _kafka_topic AS topic_, _kafka_partition AS partition_, COUNT(DISTINCT _kafka_offset) AS held_
              FROM \`${target.dataset}.${target.table}\`
              WHERE ${everyPartition} AND (${clauses.join('\n OR ')})
              GROUP BY _kafka_topic, _kafka_partition`,
    });
    for (const r of rows as { topic_: string; partition_: number; held_: number }[])
      held.set(`${r.topic_}:${Number(r.partition_)}`, Number(r.held_));
  } catch (error) {
    throw bigQueryError(error, `look up replayed rows of ${target.table}`);
  }
  return held;
}
