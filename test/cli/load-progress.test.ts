/**
 * The progress of a load: the redrawn terminal line stays within 79 columns whatever the fleet,
 * says why shards wait (not for a mere cap), and falls back to shares, then to their range; the
 * log entry holds every figure; the position in the files is counted in bytes on the disk, a
 * `.gz` file's by its compressed bytes read.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BytesRead } from '../../src/cli/bytes-read.js';
import { clock, type LoadFigures, LoadProgress } from '../../src/cli/load-progress.js';
import type { IngestProgress, ShardWait } from '../../src/ingest/types.js';
import { readJsonl, SOURCE_POSITION } from '../../src/sources/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { sink, writeLines } from './load-helpers.js';
import { unwrap } from './run-cli.js';

function progressOf(
  origins: string[],
  written: number[],
  waiting: (ShardWait | undefined)[] = [],
): IngestProgress {
  const perShard = Object.fromEntries(origins.map((o, i) => [o, written[i] ?? 0]));
  return {
    written: written.reduce((a, b) => a + b, 0),
    failed: 2,
    uncertain: 1,
    resent: 0,
    bytes: 5_000_000,
    transit: { raw: 5_000_000, wire: 5_000_000, received: 0 },
    retries: 3,
    batches: 10,
    held: 700,
    queued: 0,
    inFlight: 4,
    elapsedMs: 1_000,
    perShard,
    shards: Object.fromEntries(
      origins.map((o, i) => [
        o,
        { held: 0, ready: 0, inFlight: 0, written: written[i] ?? 0, waiting: waiting[i] },
      ]),
    ),
  };
}

function fleet(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `http://10.0.0.${i + 1}:8080`);
}

function figures(p: IngestProgress, bytes: number, exact = true): LoadFigures {
  return { progress: p, read: { bytes, exact }, records: 12_345, nowMs: 10_000 };
}

describe('the terminal line', () => {
  const make = (origins: string[]) =>
    new LoadProgress(sink(true).stream, {
      tty: true,
      origins,
      totalBytes: 1_000_000,
      startBytes: 0,
      startMs: 0,
      label: 'ingest',
    });

  it('shows %, rates, ETA and each shard’s share', () => {
    const origins = fleet(4);
    const line = make(origins).terminalLine(
      figures(progressOf(origins, [10, 20, 30, 40]), 250_000),
      1234.4,
      '5.1',
    );
    // 250 kB in 10 s: 750 kB left at 25 kB/s.
    expect(line).toBe('25.0%  1,234 rec/s  5.1 MB/s  ETA 0:30  share % 10 20 30 40');
  });

  it('says why shards wait, but not when they are merely at their cap', () => {
    const origins = fleet(4);
    const progress = make(origins);
    const waits = progress.terminalLine(
      figures(progressOf(origins, [1, 1, 1, 1], ['ejected', 'cap', 'pushBack', 'down']), 1),
      1,
      '0.0',
    );
    expect(waits).toMatch(/ {2}wait 0:ejected 2:push-back 3:down$/);
    const capped = progress.terminalLine(
      figures(progressOf(origins, [1, 1, 1, 1], ['cap', 'cap', 'cap', 'cap']), 1),
      1,
      '0.0',
    );
    expect(capped).toMatch(/share % 25 25 25 25$/);
  });

  it('stays within 79 columns, whatever the fleet', () => {
    for (const n of [1, 8, 20, 100]) {
      const origins = fleet(n);
      const written = origins.map((_, i) => 1_000_000 + i * 7_919);
      const slow = origins.map((_, i) => (i % 2 === 0 ? ('slow' as const) : undefined));
      for (const p of [progressOf(origins, written), progressOf(origins, written, slow)]) {
        const line = make(origins).terminalLine(figures(p, 999_999), 9_999_999, '9999.9');
        expect(line.length).toBeLessThanOrEqual(79);
        expect(line).toMatch(/^\d+\.\d% {2}9,999,999 rec\/s {2}9999\.9 MB\/s {2}ETA /);
      }
    }
    const many = fleet(40);
    expect(
      make(many).terminalLine(
        figures(
          progressOf(
            many,
            many.map((_, i) => i),
          ),
          1,
        ),
        1,
        '0.0',
      ),
    ).toMatch(/share % 0–5$/);
  });

  it('counts records instead of % when a .gz file’s read offset is not known', () => {
    const origins = fleet(2);
    const line = make(origins).terminalLine(
      figures(progressOf(origins, [1, 1]), 0, false),
      10,
      '0.0',
    );
    expect(line.startsWith('12,345 records  10 rec/s  0.0 MB/s  ETA ?')).toBe(true);
  });
});

describe('the log entry', () => {
  it('holds every figure, and is written only every logEveryMs', () => {
    const origins = fleet(3);
    const out = sink();
    const progress = new LoadProgress(
      out.stream,
      { tty: false, origins, totalBytes: 1_000, startBytes: 0, startMs: 0, label: 'replay' },
      { drawMs: 250, logMs: 5_000 },
    );
    const p = progressOf(origins, [10, 10, 20], [undefined, 'ejected', undefined]);
    progress.update({ ...figures(p, 500), nowMs: 4_999 });
    expect(out.text()).toBe('');
    progress.update({ ...figures(p, 500), nowMs: 5_000 });
    const text = out.text();
    expect(text.split('\n').every((l) => l.length <= 80)).toBe(true);
    expect(unwrap(text).trim()).toBe(
      'replay: 50.0% read, 40 written, 2 failed, 1 uncertain, 9 records/s, 1.0 MB/s, ' +
        'ETA 0:05, 700 held, 3 retries; share % by shard 0:25 1:25 2:50; waiting 1:ejected',
    );
  });
});

describe('clock', () => {
  it('reads as m:ss or h:mm:ss, ? when unknown', () => {
    expect(clock(0)).toBe('0:00');
    expect(clock(83)).toBe('1:23');
    expect(clock(3723)).toBe('1:02:03');
    expect(clock(Number.POSITIVE_INFINITY)).toBe('?');
  });
});

describe('BytesRead', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'shardwise-bytes-read-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('counts plain files by their position and the files before', async () => {
    const a = join(dir, 'a.jsonl');
    const b = join(dir, 'b.jsonl');
    writeLines(a, 0, 100);
    writeLines(b, 100, 300);
    const files = [a, b].map((path) => ({ path, bytes: statSync(path).size, gzip: false }));
    const read = new BytesRead(files, true);
    expect(read.total).toBe(files[0]!.bytes + files[1]!.bytes);
    const source = readJsonl([a, b]);
    const iterator = source[Symbol.asyncIterator]();
    let n = 0;
    for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) {
      n++;
      const at = read.at(iterator[SOURCE_POSITION]());
      expect(at.exact).toBe(true);
      if (n === 100) expect(at.bytes).toBe(files[0]!.bytes);
      if (n === 150) expect(at.bytes).toBe(files[0]!.bytes + Math.round(files[1]!.bytes / 4));
    }
    expect(read.at(iterator[SOURCE_POSITION]()).bytes).toBe(read.total);
    expect(read.startingAt({ file: b, fileIndex: 1, offset: 100, line: 2 })).toBe(
      files[0]!.bytes + 100,
    );
  });

  it.runIf(process.platform === 'linux')(
    'counts a .gz file by its compressed bytes read, rising to its size',
    async () => {
      const gz = join(dir, 'c.jsonl.gz');
      // Payloads that hardly compress, so the file is several MiB (read in 1 MiB steps).
      const random = seededRandom(32);
      const pad = () => Math.floor(random() * 2 ** 48).toString(36);
      writeLines(gz, 0, 150_000, () => ({ pad: `${pad()}${pad()}${pad()}` }));
      const bytes = statSync(gz).size;
      expect(bytes).toBeGreaterThan(3 << 20);
      const read = new BytesRead([{ path: gz, bytes, gzip: true }]);
      const source = readJsonl(gz);
      const iterator = source[Symbol.asyncIterator]();
      const seen: number[] = [];
      let n = 0;
      for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) {
        if (++n % 10_000 === 0) {
          const at = read.at(iterator[SOURCE_POSITION]());
          expect(at.exact).toBe(true);
          seen.push(at.bytes);
        }
      }
      expect(seen).toEqual([...seen].sort((x, y) => x - y));
      expect(seen[0]!).toBeLessThan(bytes);
      expect(seen.at(-1)).toBe(bytes);
      // A resume decompresses a .gz file from its start: none of it is read before.
      expect(read.startingAt({ file: gz, fileIndex: 0, offset: 5_000, line: 50 })).toBe(0);
      const off = new BytesRead([{ path: gz, bytes, gzip: true }], false);
      expect(off.at({ file: gz, fileIndex: 0, offset: 10, line: 1 })).toEqual({
        bytes: 0,
        exact: false,
      });
    },
  );
});
