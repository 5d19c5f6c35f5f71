/**
 * Every line the command prints fits an 80-column terminal: text is wrapped at spaces here, and
 * tables narrow their name column (`table.ts`). A line that wrapped goes on indented, so a log
 * reader sees where one entry ends.
 */

/** Columns a printed line may take. */
export const WIDTH = 80;

/**
 * `text` with each of its lines wrapped to `width` columns, the continuation lines starting with
 * `indent`. By `'word'`, a line breaks at any space; by `'clause'`, only after a comma or a
 * semicolon — a figure stays beside its label — unless a clause is longer than a line. A word
 * longer than a line (a long path) stands alone on its line.
 */
export function wrap(
  text: string,
  indent = '  ',
  at: 'word' | 'clause' = 'word',
  width = WIDTH,
): string {
  return text
    .split('\n')
    .map((line) => wrapLine(line, indent, at, width))
    .join('\n');
}

function wrapLine(line: string, indent: string, at: 'word' | 'clause', width: number): string {
  if (line.length <= width) return line;
  const lead = /^ */.exec(line)![0];
  const body = line.slice(lead.length);
  const pieces =
    at === 'word'
      ? body.split(' ')
      : body
          .split(/(?<=[,;]) /)
          .flatMap((clause) =>
            indent.length + clause.length <= width ? [clause] : clause.split(' '),
          );
  const lines: string[] = [];
  let current = lead;
  let empty = true;
  for (const piece of pieces) {
    if (!empty && current.length + 1 + piece.length > width) {
      lines.push(current);
      current = indent + piece;
    } else {
      current += empty ? piece : ` ${piece}`;
    }
    empty = false;
  }
  lines.push(current);
  return lines.join('\n');
}
