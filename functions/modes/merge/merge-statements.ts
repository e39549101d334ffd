/**
 * merge mode's SQL and names: the staging table of a task's run, a flush's batch id, the MERGE that
 * inserts a batch's rows not yet in the target, and the query that confirms they all are. Pure.
 */
import { createHash } from 'node:crypto';
import type { RowToInsert } from '../../kernel/records.js';

export type StagingKind = 'rows' | 'dead-letters';

export function stagingPrefix(pipelineId: string, taskIndex: number): string {
  return `_kbd_staging_${pipelineId.replaceAll('-', '_')}_t${taskIndex}_`;
}

/** A run's staging table; the error table's has its own (`dl` before the run's hash), under the same prefix. */
export function stagingTableName(
  pipelineId: string,
  taskIndex: number,
  runId: string,
  kind: StagingKind = 'rows',
): string {
  const run = createHash('sha256').update(runId).digest('hex').slice(0, 12);
  return `${stagingPrefix(pipelineId, taskIndex)}${kind === 'rows' ? '' : 'dl'}${run}`;
}

/** The offset ranges a flush covers, as `topic:partition:first-last`, sorted. */
export function offsetRanges(rows: readonly RowToInsert[]): string[] {
  const ranges = new Map<string, [number, number]>();
  for (const { record } of rows) {
    const key = `${record.topic}:${record.partition}`;
    const range = ranges.get(key);
    if (range === undefined) ranges.set(key, [record.offset, record.offset]);
    else ranges.set(key, [Math.min(range[0], record.offset), Math.max(range[1], record.offset)]);
  }
  return [...ranges].map(([key, [from, to]]) => `${key}:${from}-${to}`).sort();
}

/** Deterministic: the same run, attempt and offset ranges give the same batch id. */
export function batchId(runId: string, attempt: number, rows: readonly RowToInsert[]): string {
  return createHash('sha256')
    .update(`${runId}\n${attempt}\n${offsetRanges(rows).join('\n')}`)
    .digest('hex')
    .slice(0, 24);
}

/** Whole UTC days the batch's Kafka timestamps fall in: the MERGE touches only those partitions. */
export function timestampDays(rows: readonly RowToInsert[]): { from: string; to: string } {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const { record } of rows) {
    min = Math.min(min, record.timestamp);
    max = Math.max(max, record.timestamp);
  }
  const day = 86_400_000;
  return {
    from: new Date(Math.floor(min / day) * day).toISOString(),
    to: new Date((Math.floor(max / day) + 1) * day).toISOString(),
  };
}

/**
 * The one statement that makes a flush land, at most once per row. The batch id is inlined (it is our
 * own hex digest) because the local emulator ignores query parameters in MERGE.
 */
export function mergeStatement(
  target: { dataset: string; table: string; columns: readonly string[] },
  staging: string,
  batch: string,
  days: { from: string; to: string },
): string {
  if (!/^[0-9a-f]+$/.test(batch)) throw new RangeError(`batch id ${batch} is not a hex digest`);
  const columns = target.columns.map((c) => `\`${c}\``);
  return [
    `MERGE \`${target.dataset}.${target.table}\` T`,
    `USING \`${target.dataset}.${staging}\` S`,
    'ON T._kafka_topic = S._kafka_topic AND T._kafka_partition = S._kafka_partition AND T._kafka_offset = S._kafka_offset',
    `AND T._kafka_timestamp >= TIMESTAMP('${days.from}') AND T._kafka_timestamp < TIMESTAMP('${days.to}')`,
    // Also in the join, so that only this batch's staged rows are joined at all (the emulator, like any
    // engine without pruning, would otherwise join every staged row of the day).
    `AND S._kbd_batch = '${batch}'`,
    `WHEN NOT MATCHED BY TARGET AND S._kbd_batch = '${batch}' THEN`,
    `INSERT (${columns.join(', ')}) VALUES (${columns.map((c) => `S.${c}`).join(', ')})`,
  ].join('\n');
}

/**
 * The query that confirms a MERGE: how many of the batch's keys the target holds. Offsets and partitions
 * are integers and topics Kafka topic names ([a-zA-Z0-9._-]), so they are inlined (the emulator cannot
 * bind numeric parameters); anything else is refused. A partition's offsets are said as ranges where they
 * run on (a flush's usually do, but for its dead letters), the rest in IN lists of at most
 * `offsetsPerList`: a short query on BigQuery whatever the flush's size, and within the emulator's 1,000
 * arguments a function.
 */
export function confirmStatement(
  target: { dataset: string; table: string },
  rows: readonly RowToInsert[],
  days: { from: string; to: string },
): string {
  const byPartition = new Map<string, number[]>();
  for (const { record } of rows) {
    if (!/^[a-zA-Z0-9._-]+$/.test(record.topic))
      throw new RangeError(`topic ${record.topic} is not a Kafka topic name`);
    if (!Number.isSafeInteger(record.offset) || !Number.isSafeInteger(record.partition))
      throw new RangeError(`${record.partition}:${record.offset} is not a partition and offset`);
    const key = `${record.topic}\u0000${record.partition}`;
    byPartition.set(key, [...(byPartition.get(key) ?? []), record.offset]);
  }
  const clauses = [...byPartition].map(([key, offsets]) => {
    const [topic, partition] = key.split('\u0000');
    return `(_kafka_topic = '${topic}' AND _kafka_partition = ${partition} AND ${offsetCondition(offsets)})`;
  });
  return [
    `SELECT COUNT(DISTINCT CONCAT(_kafka_topic, ':', CAST(_kafka_partition AS STRING), ':', CAST(_kafka_offset AS STRING))) AS present`,
    `FROM \`${target.dataset}.${target.table}\``,
    `WHERE _kafka_timestamp >= TIMESTAMP('${days.from}') AND _kafka_timestamp < TIMESTAMP('${days.to}')`,
    `AND ${anyOf(clauses)}`,
  ].join('\n');
}

/** Offsets in one IN list at most (the emulator allows a function 1,000 arguments). */
export const offsetsPerList = 500;
/** Terms in one OR at most: more are grouped in parentheses. */
const termsPerOr = 100;
/** A run of at least this many consecutive offsets is said as a range. */
const shortestRange = 3;

/** `_kafka_offset` in these offsets: ranges for runs, IN lists for the rest. */
function offsetCondition(offsets: readonly number[]): string {
  const sorted = [...new Set(offsets)].sort((a, b) => a - b);
  const terms: string[] = [];
  const singles: number[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    if (j - i + 1 >= shortestRange) terms.push(`_kafka_offset BETWEEN ${sorted[i]} AND ${sorted[j]}`);
    else singles.push(...sorted.slice(i, j + 1));
    i = j + 1;
  }
  for (let i = 0; i < singles.length; i += offsetsPerList)
    terms.push(`_kafka_offset IN (${singles.slice(i, i + offsetsPerList).join(', ')})`);
  return anyOf(terms);
}

/** `(a OR b OR …)`, nested in groups so that no OR has more than `termsPerOr` terms. */
function anyOf(terms: readonly string[]): string {
  if (terms.length <= termsPerOr) return `(${terms.join(' OR ')})`;
  const groups: string[] = [];
  for (let i = 0; i < terms.length; i += termsPerOr) groups.push(anyOf(terms.slice(i, i + termsPerOr)));
  return anyOf(groups);
}
