import type { Lease } from '../../kernel/ports.js';
import type { DeadLetter, RowToInsert } from '../../kernel/records.js';

/**
 * A flush's data in `load` mode: each batch's rows as lines of newline-delimited JSON, and the rows a
 * failed load names by byte position mapped back to their batches.
 */

/** A batch's rows for one table (a group's target), as lines of newline-delimited JSON. */
export interface LoadPart {
  rows: { readonly row: RowToInsert; readonly line: Buffer }[];
}

/**
 * One partition's batch, classified, waiting for a flush: its rows by table (one part a target of the
 * writer: one, or a group's routes sharing the topic by `when`), as lines of newline-delimited JSON.
 */
export interface LoadItem {
  /** As the last intent left it. */
  lease: Lease;
  readonly fromOffset: number;
  readonly nextOffset: number;
  readonly records: number;
  readonly tombstones: number;
  /** Records the route's transform dropped. */
  readonly filtered: number;
  readonly lastRecordTimestamp: number | null;
  readonly parts: readonly LoadPart[];
  /** Dead letters already in the error table and on Pub/Sub: the batch's own, and rows BigQuery refused. */
  readonly letters: number;
  readonly rejected: DeadLetter[];
  /** A replayed range's offsets the tables already hold: not loaded, counted all the same. */
  readonly held: { readonly rows: number; readonly deadLetters: number };
  readonly bytes: number;
  readonly signal?: AbortSignal;
}

/**
 * A row as a line of newline-delimited JSON. A text row's bytes are copied as they are, but for its line
 * breaks: in a row's JSON text (the record's own) they can only be whitespace between tokens, so they
 * become spaces.
 */
export function lineOf(row: RowToInsert): Buffer {
  if (!('json' in row)) return Buffer.from(`${JSON.stringify(row.row)}\n`);
  const line = Buffer.allocUnsafe(row.json.length + 1);
  copyLine(row.json, line, 0);
  return line;
}

/**
 * A batch's rows as one buffer of lines (the streamed load's: no buffer a row, no second copy to join
 * them); each line as `lineOf` makes it.
 */
export function linesOfRows(rows: readonly RowToInsert[]): Buffer {
  const texts = rows.map((row) => ('json' in row ? row.json : Buffer.from(JSON.stringify(row.row))));
  const out = Buffer.allocUnsafe(texts.reduce((n, t) => n + t.length + 1, 0));
  let at = 0;
  for (const text of texts) at = copyLine(text, out, at);
  return out;
}

/** A row's JSON text and a line break into `out` at `at`, its own line breaks as spaces; where it ends. */
function copyLine(json: Buffer, out: Buffer, at: number): number {
  json.copy(out, at);
  const end = at + json.length;
  out[end] = newline;
  for (let i = json.indexOf(newline); i >= 0; i = json.indexOf(newline, i + 1)) out[at + i] = space;
  for (let i = json.indexOf(carriageReturn); i >= 0; i = json.indexOf(carriageReturn, i + 1))
    out[at + i] = space;
  return end + 1;
}

const newline = 10;
const carriageReturn = 13;
const space = 32;

/** The rows of a flush's items in target `target`'s table. */
export function rowsIn(items: readonly LoadItem[], target: number): number {
  return items.reduce((n, i) => n + i.parts[target]!.rows.length, 0);
}

/** Target `target`'s job's data: every item's lines for that table, in order. */
export function linesOf(items: readonly LoadItem[], target: number): Buffer {
  return Buffer.concat(items.flatMap((i) => i.parts[target]!.rows.map((r) => r.line)));
}

/**
 * The rows target `target`'s failed job names by byte position, mapped back to their items' parts;
 * undefined positions left out.
 */
export function refusedRows(
  items: readonly LoadItem[],
  target: number,
  badRows: ReadonlyMap<number, string>,
): { item: LoadItem; index: number; reason: string }[] {
  const refused: { item: LoadItem; index: number; reason: string }[] = [];
  let position = 0;
  for (const item of items) {
    item.parts[target]!.rows.forEach((r, index) => {
      const reason = badRows.get(position);
      if (reason !== undefined) refused.push({ item, index, reason: `invalid: ${reason}` });
      position += r.line.length;
    });
  }
  return refused;
}
