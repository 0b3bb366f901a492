/** The colours a cell may be shown in on a terminal. */
export type Colour = 'red' | 'green' | 'yellow';

/** A cell: its text, and the colour it is shown in on a terminal. */
export type Cell = string | { readonly text: string; readonly colour?: Colour | undefined };

/** How a table's columns are laid out: Go's `tabwriter` minimum cell width and padding. */
export interface TabLayout {
  readonly minWidth: number;
  readonly padding: number;
}

/** `kubectl get`'s tables (`printers.GetNewTabWriter`): cells at least 6 wide, columns 3 spaces apart. */
export const KUBECTL_TABLE: TabLayout = { minWidth: 6, padding: 3 };
/** `crictl`'s tables (`newDefaultTableDisplay`): cells at least 20 wide, 3 spaces apart. */
export const CRICTL_TABLE: TabLayout = { minWidth: 20, padding: 3 };
/** `kubectl describe` (`tabbedString`): columns 2 spaces apart. */
export const KUBECTL_DESCRIBE: TabLayout = { minWidth: 0, padding: 2 };

const SGR: Readonly<Record<Colour, number>> = { red: 31, green: 32, yellow: 33 };

/**
 * Whether to colour what is written to `stdout`: only on a terminal, and not when `NO_COLOR` is
 * set to anything but the empty string (https://no-color.org).
 */
export function colourWanted(io: {
  readonly stdout: NodeJS.WritableStream & { readonly isTTY?: boolean };
  readonly env: Readonly<Record<string, string | undefined>>;
}): boolean {
  return io.stdout.isTTY === true && (io.env['NO_COLOR'] ?? '') === '';
}

export const textOf = (cell: Cell): string => (typeof cell === 'string' ? cell : cell.text);

/** Characters (code points) in `text`, as Go's tabwriter counts a cell: its length less one a surrogate pair. */
function codePoints(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) n -= 1;
  }
  return n;
}

/**
 * Lines of cells laid out as Go's `text/tabwriter` does (kubectl prints through it): each cell
 * but a line's last is padded to the widest cell of its column block, a block being the
 * consecutive lines that have a cell in that column, so lines of different shapes (kubectl
 * describe's) align as kubectl aligns them. Widths count characters, not the colour codes
 * added around a cell's text when `colour` is true. With `remembered`, a column is never narrower
 * than it was in an earlier call given the same array, and the array keeps the widths (the
 * `RememberWidths` flag kubectl uses, so that `get -w` rows line up under the first table).
 */
export function tabwrite(
  lines: readonly (readonly Cell[])[],
  layout: TabLayout,
  options: { readonly colour?: boolean; readonly remembered?: number[] } = {},
): string {
  const out: string[] = [];
  const widths: number[] = [];
  const width = (cell: Cell) => codePoints(textOf(cell));
  const paint = (cell: Cell) =>
    typeof cell === 'string' || cell.colour === undefined || options.colour !== true
      ? textOf(cell)
      : `\x1b[${SGR[cell.colour]}m${cell.text}\x1b[0m`;
  const writeLines = (from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const line = lines[i]!;
      let text = '';
      line.forEach((cell, j) => {
        text += paint(cell);
        if (j < widths.length) text += ' '.repeat(Math.max(0, widths[j]! - width(cell)));
      });
      out.push(`${text}\n`);
    }
  };
  const format = (from: number, to: number): void => {
    const column = widths.length;
    let start = from;
    for (let i = from; i < to; i++) {
      if (column >= lines[i]!.length - 1) continue;
      // A block of lines with a cell in this column begins: the lines before it are done.
      writeLines(start, i);
      start = i;
      let w = layout.minWidth;
      for (; i < to; i++) {
        const line = lines[i]!;
        if (column >= line.length - 1) break;
        w = Math.max(w, width(line[column]!) + layout.padding);
      }
      const remembered = options.remembered;
      if (remembered !== undefined) {
        w = Math.max(w, remembered[column] ?? 0);
        remembered[column] = w;
      }
      widths.push(w);
      format(start, i);
      widths.pop();
      start = i;
    }
    writeLines(start, to);
  };
  format(0, lines.length);
  return out.join('');
}

/** Rows laid out as `kubectl get` prints its tables, or in another layout (see `tabwrite`). */
export function table(
  rows: readonly (readonly Cell[])[],
  options: { readonly colour?: boolean; readonly layout?: TabLayout } = {},
): string {
  return tabwrite(rows, options.layout ?? KUBECTL_TABLE, options);
}

/**
 * A table printed in parts, as `kubectl get -w` prints one: the first rows, then a row at a
 * time, each column as wide as the widest cell it has had.
 */
export class TablePrinter {
  private readonly widths: number[] = [];

  constructor(private readonly colour: boolean) {}

  format(rows: readonly (readonly Cell[])[]): string {
    return tabwrite(rows, KUBECTL_TABLE, { colour: this.colour, remembered: this.widths });
  }
}
