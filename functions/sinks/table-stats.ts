import type { BigQuery } from '@google-cloud/bigquery';
import type { TableStats } from '../verify/reconcile.js';
import { bigQueryError } from './bigquery-sink.js';

/**
 * What a table holds of one partition's offsets in [from, to): one aggregate query, never a scan per row.
 * `verify` reconciles the ledger with it; storage-write recovery decides a gone stream's fate by it.
 */
export async function tableStats(
  bigquery: BigQuery,
  target: { dataset: string; table: string },
  topic: string,
  partition: number,
  from: number,
  to: number,
): Promise<TableStats> {
  for (const n of [partition, from, to]) {
    if (!Number.isSafeInteger(n)) throw new RangeError(`${n} is not an offset or a partition`);
  }
  try {
    // Integers are inlined (checked above): the local emulator cannot bind numeric query parameters.
    const [rows] = await bigquery.query({
      query: `SELECT COUNT(*) AS rows_, COUNT(DISTINCT _kafka_offset) AS distinct_, MIN(_kafka_offset) AS min_, MAX(_kafka_offset) AS max_
        FROM \`${target.dataset}.${target.table}\`
        WHERE _kafka_topic = @topic AND _kafka_partition = ${partition} AND _kafka_offset >= ${from} AND _kafka_offset < ${to}`,
      params: { topic },
    });
    const r = rows[0] as { rows_: number; distinct_: number; min_: number | null; max_: number | null };
    return {
      rows: Number(r.rows_),
      distinctOffsets: Number(r.distinct_),
      minOffset: r.min_,
      maxOffset: r.max_,
    };
  } catch (error) {
    throw bigQueryError(error, 'verify');
  }
}
