import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { PICKERS } from '../../src/cli/pickers.js';
import { unwrap } from './run-cli.js';

/** Runs the CLI in-process and captures what it prints. */
async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const sink = (append: (s: string) => void) =>
    new Writable({
      write(chunk, _encoding, callback) {
        append(String(chunk));
        callback();
      },
    });
  const code = await main(
    argv,
    sink((s) => (out += s)),
    sink((s) => (err += s)),
  );
  return { code, out, err };
}

describe('shardwise command', () => {
  it('prints help for the command and each subcommand', async () => {
    expect((await cli('--help')).out).toContain('demo');
    expect((await cli('demo', '--help')).out).toContain('--records');
    expect((await cli('simulate', '--help')).out).toContain('--scenario');
  });

  it('offers every built-in picker by its own name, and lists them in help', async () => {
    const names = Object.keys(PICKERS);
    expect(names).toEqual([
      'round-robin',
      'weighted-round-robin',
      'random',
      'p2c',
      'p2c:ewma',
      'p2c:bytes',
      'least-in-flight',
      'peak-ewma',
      'consistent-hash:ring',
      'consistent-hash:maglev',
      'consistent-hash:rendezvous',
      'consistent-hash:jump',
    ]);
    for (const name of names) expect(PICKERS[name]!().name).toBe(name);
    const help = (await cli('--help')).out;
    for (const name of names) expect(help).toContain(name);
    expect((await cli('simulate', '--help')).out).toContain('consistent-hash:jump');
    expect((await cli('demo', '--help')).out).toContain('p2c:bytes');
  });

  it('simulates every picker it lists, each row under its own name', async () => {
    const names = Object.keys(PICKERS);
    const { code, out } = await cli('simulate', '--picker', names.join(','), '--requests', '400');
    expect(code).toBe(0);
    const rows = unwrap(out)
      .split('\n')
      .slice(2, 2 + names.length);
    expect(rows.map((line) => line.split(/\s+/)[0])).toEqual(names);
  });

  it.each([
    [['frobnicate'], 'unknown command'],
    [['demo', '--records', 'many'], '--records must be an integer'],
    [['demo', '--records', '0'], '--records must be an integer from 1 to 10000000, got "0"'],
    // Past what a run can hold or serve: refused before a record table or a server is made.
    [['demo', '--records', '1e11'], '--records must be an integer from 1 to 10000000'],
    [['demo', '--shards', '1000000'], '--shards must be an integer from 3 to 100'],
    [['simulate', '--requests', '1e12'], '--requests must be an integer from 1 to 10000000'],
    [['simulate', '--shards', '100000000'], '--shards must be an integer from 1 to 10000'],
    [['demo', '--picker', 'nope'], 'unknown picker "nope"'],
    [['simulate', '--picker', 'ring'], 'unknown picker "ring" (known: round-robin,'],
    [['simulate', '--colour', 'red'], 'unknown flag --colour'],
    [['simulate', '--out', 'report.png'], '--out must name a .svg or .html file'],
    [['simulate', '--scenario', '/definitely/not/here.json'], 'cannot read scenario'],
  ])('rejects %j with exit code 2 and a message', async (argv, message) => {
    const { code, err } = await cli(...argv);
    expect(code).toBe(2);
    expect(err).toContain(message);
  });

  it('rejects a scenario file that is not JSON, or not a valid fleet, with exit code 2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shardwise-cli-'));
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{ "shards": [ ');
    const notJson = await cli('simulate', '--scenario', broken);
    expect(notJson.code).toBe(2);
    expect(notJson.err).toContain('is not valid JSON');
    const invalid = join(dir, 'invalid.json');
    writeFileSync(
      invalid,
      JSON.stringify({
        shards: [{ id: 'a', latency: { type: 'exponential', mean: -5 } }],
        requests: 10,
      }),
    );
    const bad = await cli('simulate', '--scenario', invalid);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/mean/);
  });

  it('simulates pickers side by side and writes a well-formed SVG with one CDF series per picker', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shardwise-cli-'));
    const file = join(dir, 'report.svg');
    const { code, out } = await cli(
      'simulate',
      '--picker',
      'round-robin,peak-ewma',
      '--requests',
      '3000',
      '--seed',
      '5',
      '--out',
      file,
    );
    expect(code).toBe(0);
    const rows = out.split('\n').filter((line) => /^(round-robin|peak-ewma)\s/.test(line));
    expect(rows).toHaveLength(2);
    const svg = readFileSync(file, 'utf8');
    expect(svg.startsWith('<?xml')).toBe(true);
    // Well-formed: every opened element is closed, in order (a small XML tokenizer).
    const stack: string[] = [];
    for (const match of svg.matchAll(/<(\/?)([a-zA-Z][\w:-]*)([^>]*?)(\/?)>/g)) {
      const [, closing, name, , selfClosing] = match;
      if (selfClosing === '/') continue;
      if (closing === '/') expect(stack.pop()).toBe(name);
      else stack.push(name!);
    }
    expect(stack).toEqual([]);
    expect(svg).not.toMatch(/&(?!(lt|gt|amp|apos|quot);)/);
    const cdf = svg.slice(
      svg.indexOf('<g id="latency-cdf"'),
      svg.indexOf('</g>', svg.indexOf('<g id="latency-cdf"')),
    );
    const names = [...cdf.matchAll(/<polyline class="series" data-name="([^"]+)"/g)].map(
      (m) => m[1],
    );
    expect(names).toEqual(['round-robin', 'peak-ewma']);
    // Same flags, same numbers.
    const again = await cli(
      'simulate',
      '--picker',
      'round-robin,peak-ewma',
      '--requests',
      '3000',
      '--seed',
      '5',
    );
    expect(again.out).toBe(out.replace(/report written to .*\n/, ''));
  });

  it('runs the demo end to end on real HTTP shards and reports lost: 0', async () => {
    const { code, out: printed } = await cli(
      'demo',
      '--records',
      '5000',
      '--picker',
      'round-robin,peak-ewma',
    );
    const out = unwrap(printed);
    expect(code).toBe(0);
    expect(out).toMatch(/^lost: 0$/m);
    expect(out).toMatch(
      /^winner at p99: (round-robin|peak-ewma), \d+\.\d ms vs \d+\.\d ms for (round-robin|peak-ewma), the runner-up \(\d+\.\d\d× better\)$/m,
    );
    // Not a terminal: full progress lines, no `\r` redraws; each pass ends with all written.
    expect(out).not.toContain('\r');
    expect(out).toMatch(/^round-robin: 5,000\/5,000 written, [\d,]+ records\/s, /m);
    expect(out).toMatch(/^peak-ewma: 5,000\/5,000 written, [\d,]+ records\/s, /m);
    // Table rows (not progress lines): name, records/s, p50 ms with a decimal point …
    const rows = out
      .split('\n')
      .filter((line) => /^(round-robin|peak-ewma)\s+[\d,]+\s+\d+\.\d\s/.test(line));
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row.trim().split(/\s+/).at(-1)).toBe('0');
  });
});
