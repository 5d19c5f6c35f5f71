/** The two tools that keep the command's lines within 80 columns, on exact outputs. */
import { describe, expect, it } from 'vitest';
import { table } from '../../src/cli/table.js';
import { wrap } from '../../src/cli/wrap.js';

describe('wrap', () => {
  it('leaves a line that fits alone, and breaks a longer one at spaces, continued indented', () => {
    expect(wrap('short line', '  ', 'word', 20)).toBe('short line');
    expect(wrap('one two three four five six', '  ', 'word', 12)).toBe(
      'one two\n  three four\n  five six',
    );
  });

  it("by clause, keeps a figure beside its label: it breaks only after ',' or ';'", () => {
    expect(wrap('p2c: 3 written, 12 in flight, 20 retries; 0 failed', '  ', 'clause', 32)).toBe(
      'p2c: 3 written, 12 in flight,\n  20 retries; 0 failed',
    );
  });

  it('breaks a clause longer than a line at its spaces, and leaves a word longer than a line whole', () => {
    expect(wrap('share % by shard 0:1 1:2 2:3 3:4, done', '  ', 'clause', 16)).toBe(
      'share % by shard\n  0:1 1:2 2:3\n  3:4, done',
    );
    expect(wrap('written to /a/very/long/path/name.svg now', '  ', 'word', 12)).toBe(
      'written to\n  /a/very/long/path/name.svg\n  now',
    );
  });

  it('keeps each line break and each line’s own indent', () => {
    expect(wrap('aaa bbb\n  ccc ddd eee', '    ', 'word', 10)).toBe('aaa bbb\n  ccc ddd\n    eee');
  });
});

describe('table', () => {
  const header = ['picker', 'rate', 'p99'];

  it('pads names left and figures right, two spaces apart', () => {
    expect(table(header, [['p2c', '1,234', '5.0']], 80).split('\n')).toEqual([
      'picker   rate  p99',
      '------  -----  ---',
      'p2c     1,234  5.0',
    ]);
  });

  it('gives a name longer than the figures leave a line of its own, the figures under it', () => {
    const text = table(
      header,
      [
        ['p2c', '1,234', '5.0'],
        ['consistent-hash:rendezvous', '12', '60.5'],
      ],
      24,
    );
    expect(text.split('\n')).toEqual([
      'picker        rate   p99',
      '-----------  -----  ----',
      'p2c          1,234   5.0',
      'consistent-hash:rendezvous',
      '                12  60.5',
    ]);
    for (const line of text.split('\n').filter((l) => !l.startsWith('consistent'))) {
      expect(line.length).toBeLessThanOrEqual(24);
    }
  });
});
