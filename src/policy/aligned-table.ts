// Plain-text tables with aligned columns and optional ANSI colour, for `pgwarden check` and `pgwarden keys list`.

/** ANSI SGR codes used by the CLI's human-readable output. */
const CODES = { red: 31, green: 32, yellow: 33, dim: 2, bold: 1 } as const;

/** A colour (or style) name of {@link paint}. */
export type Colour = keyof typeof CODES;

/**
 * Wraps `text` in the ANSI codes of `colour` when `enabled` (a terminal that is not NO_COLOR),
 * else returns it unchanged (output piped to a file or a program gets no escape codes).
 */
export function paint(text: string, colour: Colour, enabled: boolean): string {
  return enabled ? `\u001b[${CODES[colour]}m${text}\u001b[0m` : text;
}

const ANSI = /\u001b\[[0-9;]*m/g;

/** The width of `s` as shown: ANSI codes take no room. */
function shownWidth(s: string): number {
  return [...s.replace(ANSI, '')].length;
}

/**
 * Lays out `rows` (the first is the header) as columns separated by two spaces, each padded to its
 * widest cell (colour codes ignored when measuring), every line prefixed by `indent`; trailing
 * spaces trimmed. Output: the lines joined with newlines, ending with one. Never throws.
 */
export function alignedTable(rows: readonly (readonly string[])[], indent = ''): string {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, shownWidth(cell));
    });
  }
  return rows
    .map(
      (row) =>
        indent +
        row
          .map((cell, i) =>
            i === row.length - 1 ? cell : cell + ' '.repeat((widths[i] ?? 0) - shownWidth(cell)),
          )
          .join('  ')
          .trimEnd(),
    )
    .join('\n')
    .concat('\n');
}
