import { DrainError } from '../../kernel/errors.js';
import { onceUntilFailure } from '../../kernel/once.js';
import { rowKey } from '../../records/records.js';
import { deadLetterRow, deadLetterTableName, deadLetterTableSchema } from '../../schema/table-schema.js';
import { ensureErrorTable } from '../../sinks/bigquery-tables.js';
import type { ErrorTable } from '../../sinks/contracts.js';
import { createMergeSink, type MergeSinkOptions } from './merge-sink.js';

/**
 * How much of a dead letter's value the error table keeps in merge mode: staging goes through insertAll,
 * whose JSON request (10 MB at most) carries BYTES as base64 (4/3 larger), so 6 MiB, not the 9 MiB a row
 * can have. `value_size` says how large the whole value was; the Pub/Sub dead letter is unchanged.
 */
export const mergeErrorValueBytes = 6 * 1024 * 1024;

/**
 * merge mode's error table, `{table}_dead_letters`, written by the drain: each dead letter becomes a row
 * keyed by origin, staged and merged exactly like the target's rows (one MERGE of the letters not there
 * yet, then a confirming count), before the batch's checkpoint moves. A batch written again after a crash
 * merges its dead letters again and inserts none twice, so the table holds each bad record once, while
 * the Pub/Sub dead letters (at least once) stay for alerting and `replay-dead-letters`.
 */
export function createMergeErrorTable(
  options: Omit<MergeSinkOptions, 'table' | 'schema' | 'stagingKind'> & {
    readonly table: string;
    readonly location: string | null;
  },
): ErrorTable & { close(): Promise<void> } {
  const name = deadLetterTableName(options.table);
  const merge = createMergeSink({
    ...options,
    table: name,
    schema: deadLetterTableSchema,
    stagingKind: 'dead-letters',
  });
  const ready = onceUntilFailure(() =>
    ensureErrorTable(options.bigquery, options, name, deadLetterTableSchema),
  );
  return {
    async write(letters, ingestedAt, signal) {
      if (letters.length === 0) return;
      await ready();
      const rows = letters.map((letter) => ({
        rowKey: rowKey(letter.record),
        record: letter.record,
        row: deadLetterRow(letter, ingestedAt, mergeErrorValueBytes),
      }));
      const results = await merge.write(rows, signal);
      const refused = results.findIndex((r) => !r.ok);
      if (refused >= 0) {
        // A dead letter the error table will not take cannot become another dead letter: the batch stops.
        const result = results[refused] as { reason: string };
        throw new DrainError(
          `bigquery error table ${name}: the dead letter of ${rows[refused]!.rowKey} was refused: ${result.reason}`,
          { retriable: false, code: 'error_table_row' },
        );
      }
    },
    close: () => merge.close(),
  };
}
