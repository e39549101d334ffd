/**
 * Tables for a terminal: no index column, no quotes, numbers right-aligned, a mark in front of the rows
 * with a problem, and never wider than the terminal: the text columns marked `shrink` are cut (ending in
 * `…`) until the table fits.
 */

export interface Column<R> {
  readonly header: string;
  readonly value: (row: R) => string | number | null | undefined;
  /**
   * May be cut to make the table fit, down to its header's width (at least 8): the `first` columns before
   * the `last` (the column that says what is wrong is cut last).
   */
  readonly shrink?: 'first' | 'last';
}

export interface TextTableOptions<R> {
  /** The widest a line may be; Infinity for `--wide`. */
  readonly width: number;
  /** A row to mark (`✗` in front): a problem an operator must see. */
  readonly problem?: (row: R) => boolean;
}

const gap = '  ';

/** The lines of the table: a header, then a line per row. */
export function textTable<R>(
  rows: readonly R[],
  columns: readonly Column<R>[],
  options: TextTableOptions<R>,
): string[] {
  const marked = options.problem !== undefined;
  const cells = rows.map((row) => columns.map((c) => cellText(c.value(row))));
  const numeric = columns.map(
    (c) =>
      rows.some((row) => typeof c.value(row) === 'number') &&
      rows.every((row) => ['number', 'undefined'].includes(typeof c.value(row)) || c.value(row) === null),
  );
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((r) => r[i]!.length)));
  shrinkToFit(widths, columns, options.width - (marked ? 2 : 0) - gap.length * (columns.length - 1));
  const line = (texts: readonly string[], mark: string) =>
    `${marked ? `${mark} ` : ''}${texts
      .map((text, i) => {
        const cut = text.length > widths[i]! ? `${text.slice(0, widths[i]! - 1)}…` : text;
        return numeric[i] ? cut.padStart(widths[i]!) : cut.padEnd(widths[i]!);
      })
      .join(gap)}`.trimEnd();
  return [
    line(
      columns.map((c) => c.header),
      ' ',
    ),
    ...rows.map((row, r) => line(cells[r]!, options.problem?.(row) ? '✗' : ' ')),
  ];
}

/** The width a table may take on this terminal: its columns, else 120; Infinity when `wide`. */
export function terminalWidth(wide: boolean, columns = process.stdout.columns): number {
  if (wide) return Number.POSITIVE_INFINITY;
  return columns !== undefined && columns > 0 ? Math.max(60, columns) : 120;
}

function cellText(value: string | number | null | undefined): string {
  if (value === null || value === undefined || value === '') return '-';
  return typeof value === 'number' ? value.toLocaleString('en-US') : value;
}

/** Shrinks the widest `first` columns, then the `last`, a character at a time, until the sum fits `room`. */
function shrinkToFit<R>(widths: number[], columns: readonly Column<R>[], room: number): void {
  const floor = columns.map((c) => Math.max(8, c.header.length));
  let total = widths.reduce((a, b) => a + b, 0);
  for (const level of ['first', 'last'] as const) {
    while (total > room) {
      let widest = -1;
      columns.forEach((c, i) => {
        if (c.shrink === level && widths[i]! > floor[i]! && (widest < 0 || widths[i]! > widths[widest]!))
          widest = i;
      });
      if (widest < 0) break;
      widths[widest]! -= 1;
      total -= 1;
    }
  }
}
