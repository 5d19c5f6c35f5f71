/**
 * Every line the command prints fits an 80-column terminal (80 × 30 is where a new user first
 * runs it): help, errors, the simulate table with the longest picker names, and the demo — its
 * progress in a log and in a terminal, its table, the batched pass and the closing lines. ANSI
 * escapes (the terminal's line redraw) take no column.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { PICKERS } from '../../src/cli/pickers.js';

/** A sink for the command's output; `tty` makes it look like a terminal to the demo. */
function sink(tty = false): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      text += String(chunk);
      callback();
    },
  });
  if (tty) Object.assign(stream, { isTTY: true });
  return { stream, text: () => text };
}

/** What `argv` prints, stdout then stderr, and its exit code. */
async function printed(argv: string[], tty = false): Promise<{ code: number; text: string }> {
  const out = sink(tty);
  const err = sink();
  const code = await main(argv, out.stream, err.stream);
  return { code, text: `${out.text()}${err.text()}` };
}

/** The lines of `text` wider than 80 columns, ANSI escapes removed, `\r` ending a line too. */
function tooWide(text: string): string[] {
  return (
    text
      // biome-ignore lint/suspicious/noControlCharactersInRegex: the escape is what is removed
      .replace(/\x1b\[[0-9;]*[A-Za-z]/g, '')
      .split(/\r|\n/)
      .filter((line) => [...line].length > 80)
  );
}

const ALL = Object.keys(PICKERS).join(',');

describe('every line the command prints fits 80 columns', () => {
  it.each([
    [['--help']],
    [['demo', '--help']],
    [['simulate', '--help']],
    [[]],
    [['frobnicate']],
    [['simulate', '--picker', 'nope']],
    [['demo', '--records', '0']],
    [['simulate', '--out', 'report.png']],
  ])('shardwise %j', async (argv) => {
    const { text } = await printed(argv);
    expect(text.length).toBeGreaterThan(0);
    expect(tooWide(text)).toEqual([]);
  });

  it('simulate with every picker, the longest names included', async () => {
    const { code, text } = await printed(['simulate', '--picker', ALL, '--requests', '300']);
    expect(code).toBe(0);
    expect(text).toContain('consistent-hash:rendezvous');
    expect(tooWide(text)).toEqual([]);
  });

  it('the demo in a log: progress, the table, the batched pass, lost and the winner', async () => {
    const { code, text } = await printed([
      'demo',
      '--records',
      '300',
      '--shards',
      '12',
      '--picker',
      'round-robin,consistent-hash:rendezvous',
      '--batch-records',
      '600',
      '--batch-size',
      '50',
    ]);
    expect(code).toBe(0);
    expect(text).toMatch(/^lost: 0$/m);
    expect(text).toMatch(/^batched: /m);
    expect(text).toMatch(/^winner at p99: /m);
    expect(text).toMatch(/share % by shard( \d+:\d+){12}/);
    expect(tooWide(text)).toEqual([]);
  }, 60_000);

  it('the demo in a terminal: the redrawn progress line too', async () => {
    const { code, text } = await printed(
      [
        'demo',
        '--records',
        '200',
        '--shards',
        '40',
        '--picker',
        'least-in-flight',
        '--batch-records',
        '400',
      ],
      true,
    );
    expect(code).toBe(0);
    expect(text).toContain('\r\x1b[2K');
    expect(tooWide(text)).toEqual([]);
  }, 60_000);
});
