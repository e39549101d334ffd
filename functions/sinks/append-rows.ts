import type { managedwriter } from '@google-cloud/bigquery-storage';
import { grpcError } from '../google/grpc-errors.js';
import { chunksOf } from '../kernel/chunks.js';
import { DrainError } from '../kernel/errors.js';
import type { DeadLetter, KafkaRecord } from '../kernel/records.js';

/** One AppendRows request stays well under BigQuery's 10 MB. */
export const maxAppendBytes = 5 * 1024 * 1024;

/**
 * Appends encoded rows through a stream connection, in requests of at most 10,000 rows and 5 MB. BigQuery
 * refuses a whole append when any of its rows has an error, and says which (row errors, with their
 * index): the same append is made again without those rows (at the same offset, on a stream with
 * offsets). Returns how many rows were appended and the refused rows' indexes with BigQuery's message.
 */
export async function appendRefusing(
  writer: managedwriter.Writer,
  encoded: readonly Uint8Array[],
  table: string,
  options: { readonly offsets: boolean; readonly error: (error: unknown, what: string) => Error },
): Promise<{ appended: number; refused: Map<number, string> }> {
  const refused = new Map<number, string>();
  let offset = 0;
  const indexed = encoded.map((bytes, at) => ({ bytes, at }));
  for (const chunk of chunksOf(indexed, 10_000, maxAppendBytes, (r) => r.bytes.length + 16)) {
    let left = chunk;
    while (left.length > 0) {
      const serializedRows = left.map((r) => r.bytes);
      const result = await writer
        .appendRows({ serializedRows }, options.offsets ? offset : undefined)
        .getResult();
      // Row errors first: BigQuery sends them with the request's error status, and nothing was appended.
      const rowErrors = result.rowErrors ?? [];
      if (rowErrors.length > 0) {
        const before = left.length;
        const bad = new Set<number>();
        for (const e of rowErrors) {
          const i = Number(e.index ?? -1);
          if (i < 0 || i >= left.length) continue;
          bad.add(i);
          refused.set(left[i]!.at, e.message ?? 'refused by BigQuery');
        }
        left = left.filter((_, i) => !bad.has(i));
        if (left.length === before) {
          throw new DrainError(
            `bigquery storage write: an append to ${table} at offset ${offset} was refused with row errors naming no row of it`,
            { retriable: false, code: 'row_error' },
          );
        }
        continue;
      }
      if (result.error) {
        // In-band errors (offsets) come back as a resolved result, not a rejection.
        throw options.error(result.error, `append to ${table} at offset ${offset}`);
      }
      offset += left.length;
      break;
    }
  }
  return { appended: offset, refused };
}

/** Rows BigQuery refused (by index in `rows`) → `rejected` dead letters carrying its message. */
export function rejectedLetters(
  rows: readonly { readonly record: KafkaRecord }[],
  refused: ReadonlyMap<number, string>,
): DeadLetter[] {
  return [...refused].map(([at, message]) => ({
    record: rows[at]!.record,
    kind: 'rejected' as const,
    message: `BigQuery refused the row: ${message}`,
  }));
}

/** The error table's rows are ours (strings, bytes, its own schema): a refusal there is a bug. */
export function errorTableRefusal(
  letters: readonly DeadLetter[],
  refused: ReadonlyMap<number, string>,
): DrainError {
  const [at, message] = [...refused][0]!;
  const r = letters[at]!.record;
  return new DrainError(
    `bigquery storage write: the error table refused the dead letter of ${r.topic}:${r.partition}:${r.offset}: ${message}`,
    { retriable: false, code: 'row_error' },
  );
}

/** A Storage Write API failure: one worth another stream, or fatal (the table of Google's gRPC codes). */
export function storageWriteError(error: unknown, what: string): Error {
  return grpcError('bigquery storage write', error, what);
}
