/**
 * Every line the command prints fits an 80-column terminal (80 × 30 is where a new user first
 * runs it): help, errors, the simulate table with the longest picker names, the demo — its
 * progress in a log and in a terminal, its table, the batched pass and the closing lines — and a
 * load (`ingest`, `replay`): its progress in a terminal and in a log, its notices and summaries.
 * ANSI escapes (the terminal's line redraw) take no column.
 */
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LoadProgress } from '../../src/cli/load-progress.js';
import { main } from '../../src/cli/main.js';
import { PICKERS } from '../../src/cli/pickers.js';
import { until } from '../helpers.js';
import { runCli, sink, startLineShards, writeLines } from './load-helpers.js';

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
    [['ingest', '--help']],
    [['replay', '--help']],
    [['ingest']],
    [['ingest', 'x.jsonl', '--to', 'ftp://somewhere.example.com:9/with/a/long/path/indeed']],
    [['replay', 'dead.ndjson', '--to', 'http://127.0.0.1:9', '--key', 'k', '--picker', 'p2c']],
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

describe('a load prints within 80 columns', () => {
  it('in a terminal: progress, notices, summaries stopped and resumed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shardwise-width-'));
    const shards = await startLineShards(12);
    try {
      const file = join(dir, 'in.jsonl');
      writeLines(file, 0, 20_000, (id) => (id % 997 === 0 ? { poison: 1 } : {}));
      shards.refuse('poison');
      shards.delay(5);
      const args = [
        'ingest',
        file,
        '--to',
        shards.origins.join(','),
        '--batch',
        '50',
        '--dead-letter',
        join(dir, 'dead.ndjson'),
        '--checkpoint',
        join(dir, 'load.ckpt'),
      ];
      const signals = new EventEmitter();
      const err = sink(true);
      const stopping = runCli(args, { signals, tty: true, err });
      await shards.until(5_000);
      // Held until the progress line has been drawn at least once (every 250 ms), so the stop
      // ends a drawn line however fast or slow the machine took the first 5,000 records.
      shards.hang();
      expect(await until(() => err.text().includes('\r\x1b[2K'), 30_000)).toBe(true);
      shards.heal();
      signals.emit('SIGINT');
      const stopped = await stopping;
      expect(stopped.code).toBe(3);
      expect(stopped.err).toContain('\r\x1b[2K');
      const resumed = await runCli(args, { tty: true });
      expect(resumed.code).toBe(1);
      for (const text of [stopped.out, stopped.err, resumed.out, resumed.err]) {
        expect(tooWide(text)).toEqual([]);
      }
    } finally {
      await shards.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('the log entry of a fleet of 40, shards waiting', () => {
    const origins = Array.from({ length: 40 }, (_, i) => `http://10.0.0.${i + 1}:8080`);
    const out = sink();
    const progress = new LoadProgress(out.stream, {
      tty: false,
      origins,
      totalBytes: 10 ** 12,
      startBytes: 0,
      startMs: 0,
      label: 'replay',
    });
    const perShard = Object.fromEntries(origins.map((o, i) => [o, 123_456_789 + i]));
    const shards = Object.fromEntries(
      origins.map((o, i) => [
        o,
        {
          held: 0,
          ready: 0,
          inFlight: 0,
          written: 0,
          waiting: i % 3 === 0 ? ('pushBack' as const) : undefined,
        },
      ]),
    );
    progress.update({
      progress: {
        written: 9_876_543_210,
        failed: 12_345,
        uncertain: 678,
        resent: 9,
        bytes: 10 ** 12,
        transit: { raw: 10 ** 12, wire: 10 ** 12, received: 0 },
        retries: 123_456,
        batches: 1,
        held: 100_000,
        queued: 0,
        inFlight: 64,
        elapsedMs: 1,
        perShard,
        shards,
      },
      read: { bytes: 5 * 10 ** 11, exact: true },
      records: 1,
      nowMs: 60_000,
    });
    expect(out.text().split('\n').length).toBeGreaterThan(2);
    expect(tooWide(out.text())).toEqual([]);
  });
});
