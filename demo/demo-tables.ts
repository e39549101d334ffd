/** What the demo prints: each part in a few lines that say what to notice, tables at most `width` wide. */
import { ageText, durationText } from '../functions/cli/human-tables.js';
import { textTable } from '../functions/cli/text-table.js';
import type { PartitionSummary, RunSummary } from '../functions/kernel/summary.js';

export interface TableRow {
  readonly kafka_partition: number;
  readonly rows_in_table: number;
  readonly min_offset: number;
  readonly max_offset: number;
}
export interface DeadLetterRow {
  readonly partition: string;
  readonly offset: string;
  readonly kind: string;
  readonly reason: string;
}
export interface CheckpointRow {
  readonly partition: string;
  readonly nextOffset: number;
  readonly rowsWritten: number;
  readonly deadLettered: number;
}

export function summaryLines(summary: RunSummary, width: number): string[] {
  const seconds = (summary.durationMs / 1000).toFixed(1);
  return [
    `run: ${summary.stopReason} in ${seconds} s: ${summary.recordsRead} records read, ` +
      `${summary.rowsWritten} rows written, ${summary.deadLettered} dead letters, ${summary.commits} commits`,
    freshnessLine(summary),
    ...textTable<PartitionSummary>(
      summary.partitions,
      [
        { header: 'partition', value: (p) => `${p.topic}~${p.partition}`, shrink: 'first' },
        { header: 'from', value: (p) => p.from },
        { header: 'to', value: (p) => p.to },
        { header: 'rows', value: (p) => p.rowsWritten },
        { header: 'dead letters', value: (p) => p.deadLettered },
        { header: 'lag', value: (p) => p.lag },
        { header: 'note', value: (p) => p.waiting ?? p.skipped ?? '', shrink: 'last' },
      ],
      { width, problem: (p) => p.skipped === 'error' || p.waiting !== undefined },
    ),
  ];
}

/** How fresh the table is at the run's end, and how long the records took to get there. */
function freshnessLine(summary: RunSummary): string {
  const { latencyMs: l, freshnessSeconds: f } = summary;
  const fresh =
    f === null
      ? 'freshness unknown'
      : f === 0
        ? 'nothing waits (freshness 0 s)'
        : `the oldest record waiting is ${ageText(f)} old`;
  const took =
    l === undefined || l.count === 0
      ? 'no record committed'
      : `records took ${durationText(l.p50!)} (median), ${durationText(l.p99!)} (p99) from Kafka to committed`;
  return `${fresh}; ${took}`;
}

export function tableLines(table: string, rows: readonly TableRow[], width: number): string[] {
  const total = rows.reduce((sum, r) => sum + r.rows_in_table, 0);
  return [
    `BigQuery ${table}: ${total} rows, one per record, each with its origin (_kafka_partition, _kafka_offset)`,
    ...textTable(
      rows,
      [
        { header: 'partition', value: (r) => r.kafka_partition },
        { header: 'rows', value: (r) => r.rows_in_table },
        { header: 'first offset', value: (r) => r.min_offset },
        { header: 'last offset', value: (r) => r.max_offset },
      ],
      { width },
    ),
  ];
}

export function deadLetterLines(topic: string, letters: readonly DeadLetterRow[], width: number): string[] {
  if (letters.length === 0) return [`dead letters on ${topic}: none new since the last demo`];
  return [
    `dead letters on ${topic}: ${letters.length} new; each keeps its value, its origin and why it was refused`,
    ...textTable(
      letters.slice(0, 8),
      [
        { header: 'partition', value: (l) => Number(l.partition) },
        { header: 'offset', value: (l) => Number(l.offset) },
        { header: 'kind', value: (l) => l.kind },
        { header: 'reason', value: (l) => l.reason, shrink: 'last' },
      ],
      { width },
    ),
    ...(letters.length > 8 ? [`  … and ${letters.length - 8} more`] : []),
  ];
}

export function checkpointLines(path: string, docs: readonly CheckpointRow[], width: number): string[] {
  return [
    `checkpoints in Firestore (${path}): the next run starts at nextOffset`,
    ...textTable(
      docs,
      [
        { header: 'partition', value: (d) => d.partition, shrink: 'first' },
        { header: 'nextOffset', value: (d) => d.nextOffset },
        { header: 'rows written', value: (d) => d.rowsWritten },
        { header: 'dead letters', value: (d) => d.deadLettered },
      ],
      { width },
    ),
  ];
}
