/**
 * What a replay takes from the error tables: the key and headers of dead letters too large for Pub/Sub's
 * attributes. In storage-write, merge and load modes the drain writes each dead letter once into its
 * route's error table (`{table}_dead_letters`), key and headers whole; the letter's origin finds it.
 */
import type { BigQuery } from '@google-cloud/bigquery';
import { type Route, routesOfTopic } from '../config/routes.js';
import { parseExactHeaders } from '../kernel/exact-headers.js';
import type { Position } from '../kernel/records.js';
import { deadLetterTableName } from '../schema/table-schema.js';
import type { KeptLetter } from './letter-record.js';

/** The copies the error tables hold of these letters, by `topic:partition:offset`. */
export async function errorTableCopies(
  bigquery: BigQuery,
  routes: readonly Route[],
  origins: readonly Position[],
): Promise<Map<string, KeptLetter>> {
  // A letter is in the error table of the route that refused it: any route of its topic may have.
  const byTable = new Map<string, Position[]>();
  for (const origin of origins) {
    for (const route of routesOfTopic(routes, origin.topic)) {
      const table = `${route.dataset}.${deadLetterTableName(route.table)}`;
      byTable.set(table, [...(byTable.get(table) ?? []), origin]);
    }
  }
  const copies = new Map<string, KeptLetter>();
  for (const [table, wanted] of byTable) {
    // The topic as a parameter; partition and offset are whole numbers (recordOf checked), written as such.
    const params: Record<string, string> = {};
    const where = wanted.map((o, i) => {
      params[`t${i}`] = o.topic;
      return `(_kafka_topic = @t${i} AND _kafka_partition = ${Math.trunc(o.partition)} AND _kafka_offset = ${Math.trunc(o.offset)})`;
    });
    // SELECT *: an error table made before `kafka_headers` existed has no such column to name.
    const [rows] = await bigquery.query({
      query: `SELECT * FROM \`${table}\` WHERE ${where.join(' OR ')}`,
      params,
    });
    for (const row of rows as Record<string, unknown>[]) {
      const origin = `${row._kafka_topic}:${row._kafka_partition}:${row._kafka_offset}`;
      copies.set(origin, copyOf(row));
    }
  }
  return copies;
}

function copyOf(row: Record<string, unknown>): KeptLetter {
  const key = row._kafka_key;
  const exact = row.kafka_headers;
  const headers =
    typeof exact === 'string'
      ? (parseExactHeaders(exact) ??
        'its kafka_headers in the error table are not [name, base64 value] pairs')
      : row.headers === null || row.headers === undefined
        ? []
        : 'the error table holds its headers as text only (written by an older drain): it cannot be replayed as it was';
  return {
    key: Buffer.isBuffer(key) ? key : typeof key === 'string' ? Buffer.from(key, 'base64') : null,
    headers,
  };
}
