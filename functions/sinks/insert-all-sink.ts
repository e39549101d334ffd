import type { Table } from '@google-cloud/bigquery';
import { rowJson } from '../encoders/row-text.js';
import { chunksOf } from '../kernel/chunks.js';
import { DrainError } from '../kernel/errors.js';
import type { Logger } from '../kernel/logger.js';
import type { Sink } from '../kernel/ports.js';
import type { RowResult, RowToInsert } from '../kernel/records.js';
import { type RetryPolicy, withRetry } from '../kernel/retry.js';
import { bigQueryError, retriableReasons } from './bigquery-tables.js';

export interface InsertAllOptions {
  readonly maxRowsPerRequest: number;
  readonly maxBytesPerRequest: number;
  readonly retry: RetryPolicy;
  readonly logger: Logger;
  /** Columns of the same value added to every row (merge's staging: the batch id). */
  readonly extraColumns?: Readonly<Record<string, string>>;
}

export const insertAllLimits = { maxRowsPerRequest: 500, maxBytesPerRequest: 5 * 1024 * 1024 };

/** One row of an insertAll response's `insertErrors`: the row's index in the request and why. */
interface InsertError {
  index?: number;
  errors?: { reason?: string; message?: string }[];
}

/**
 * `insert-all` mode: tabledata.insertAll with insertId `topic:partition:offset`, requests of at most
 * 500 rows and 5 MB, transient failures retried (whole request or only the rows that failed
 * transiently), rows BigQuery rejects as invalid returned as such, to become dead letters.
 *
 * Each row is made JSON once, and the request's body sent as those bytes through the table's own
 * authenticated `request`, not `table.insert`: that deep-copies the rows four times over and then
 * rewrites every string in them that holds `{{projectId}}` (its URL template) to the project's id, so
 * a record with that text would be written altered.
 */
export function createInsertAllSink(table: Table, options: InsertAllOptions): Sink {
  async function insertRequest(
    rows: readonly InsertRow[],
    signal?: AbortSignal,
  ): Promise<Map<string, RowResult>> {
    const results = new Map<string, RowResult>();
    let pending = rows;
    await withRetry(
      options.retry,
      async () => {
        let response: { insertErrors?: InsertError[] };
        try {
          [response] = (await table.request({
            method: 'POST',
            uri: '/insertAll',
            headers: { 'Content-Type': 'application/json' },
            body: insertAllBody(pending),
          })) as unknown as [{ insertErrors?: InsertError[] }];
        } catch (error) {
          throw bigQueryError(error, 'insertAll');
        }
        const failed = new Map<number, { reason?: string; message?: string }[]>();
        for (const e of response.insertErrors ?? [])
          if (e.index !== undefined) failed.set(e.index, e.errors ?? []);
        const retry: InsertRow[] = [];
        pending.forEach((r, i) => {
          const errors = failed.get(i);
          if (errors === undefined) results.set(r.row.rowKey, { ok: true });
          else if (errors.some((x) => x.reason !== undefined && retriableReasons.has(x.reason)))
            retry.push(r);
          else results.set(r.row.rowKey, { ok: false, reason: describe(errors) });
        });
        pending = retry;
        if (pending.length > 0) {
          throw new DrainError(`bigquery insertAll: ${pending.length} rows failed transiently`, {
            retriable: true,
          });
        }
      },
      (error, attempt, delayMs) =>
        options.logger.warn('bigquery insertAll failed; retrying', {
          error,
          attempt,
          delayMs,
          rows: pending.length,
        }),
      signal,
    );
    return results;
  }

  return {
    async write(rows, signal) {
      const results = new Map<string, RowResult>();
      for (const request of splitRequests(
        rows,
        options.maxRowsPerRequest,
        options.maxBytesPerRequest,
        options.extraColumns,
      )) {
        for (const [key, result] of await insertRequest(request, signal)) results.set(key, result);
      }
      return rows.map((r) => results.get(r.rowKey) ?? { ok: false, reason: 'no result from BigQuery' });
    },
  };
}

/** A row to insert and its entry of the request, as JSON text in UTF-8 (made once: it sizes the request too). */
export interface InsertRow {
  readonly row: RowToInsert;
  readonly json: Buffer;
}

const bodyOpen = Buffer.from('{"skipInvalidRows":true,"ignoreUnknownValues":false,"rows":[');
const bodyClose = Buffer.from(']}');
const comma = Buffer.from(',');

/** The insertAll request's body: invalid rows skipped (each reported), no unknown value ignored. */
function insertAllBody(rows: readonly InsertRow[]): Buffer {
  const parts: Buffer[] = [bodyOpen];
  for (let i = 0; i < rows.length; i++) {
    if (i > 0) parts.push(comma);
    parts.push(rows[i]!.json);
  }
  parts.push(bodyClose);
  return Buffer.concat(parts);
}

function describe(errors: { reason?: string; message?: string }[]): string {
  const text = errors.map((e) => `${e.reason ?? 'error'}: ${e.message ?? ''}`.trim()).join('; ');
  return text === '' ? 'rejected by BigQuery' : text;
}

/**
 * The rows in requests of at most `maxRows` rows and `maxBytes` bytes, each row's entry made once: a row
 * made from its record's text goes as that text, any other as its object's JSON; extra columns in front.
 */
export function splitRequests(
  rows: readonly RowToInsert[],
  maxRows: number,
  maxBytes: number,
  extraColumns?: Readonly<Record<string, string>>,
): InsertRow[][] {
  const extra = Object.entries(extraColumns ?? {})
    .map(([name, value]) => `${JSON.stringify(name)}:${JSON.stringify(value)},`)
    .join('');
  return chunksOf(
    rows.map((row) => {
      // Either form is an object with the metadata columns: never `{}`. The extra columns go after its `{`.
      const json = 'json' in row ? row.json : Buffer.from(JSON.stringify(row.row));
      const head = `{"insertId":${JSON.stringify(row.rowKey)},"json":{${extra}`;
      return { row, json: rowJson(head, json, 1, json.length, { comma: false, close: true }) };
    }),
    maxRows,
    maxBytes,
    (r) => r.json.length + 1,
  );
}
