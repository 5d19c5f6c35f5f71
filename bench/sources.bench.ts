/**
 * What durable loads cost: reading JSONL files with positions, and keeping dead letters on disk.
 *
 *   node --expose-gc --import tsx bench/sources.bench.ts     (or npm run bench sources)
 *
 * 1. Lines per second over a 1,000,000-line file of ~100-byte JSON lines (in the OS page cache
 *    after the first pass), interleaved rounds, medians:
 *    - `readJsonl` (strings) against `readline` over `fs.createReadStream` (the usual way) and
 *      against `fs.createReadStream` with a hand-written byte split that calls a function per
 *      line (no promise per line: the ceiling of a stream-based reader);
 *    - `readJsonl` reading `[SOURCE_POSITION]()` after every record (what a checkpointing
 *      ingestion pays) against without;
 *    - `readJsonl({ parse: true })` against `readline` + `JSON.parse`;
 *    - the same file gzipped: `readJsonl` on `.jsonl.gz` against `createGunzip` + `readline`.
 *    Goal: `readJsonl` ≥ 1,000,000 lines/s, and ≥ 1× `readline`.
 * 2. Dead letters: µs per line of `DeadLetterFile.append` with its default window (50 ms or
 *    1,000 lines per fsync), 100,000 lines in flight at once, against writing the same lines
 *    through `fs.createWriteStream` with no fsync (the cost of durability and of encoding); the
 *    time one fsync takes here; and how long a lone line waits to settle (its window + fsync).
 */
import { createReadStream, createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createGunzip, gzipSync } from 'node:zlib';
import { DeadLetterFile, readJsonl, SOURCE_POSITION } from '../src/sources/index.js';
import { collectGarbage, fmt, goal, median, nowNs, printHeader, printTable, ratio } from './lib.js';

const LINES = 1_000_000;
const ROUNDS = 5;
const WARMUP = 1;
const LETTERS = 100_000;

const dir = mkdtempSync(join(tmpdir(), 'shardwise-sources-bench-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

/** ~100-byte JSON lines, varied enough not to compress to nothing. */
function makeFile(): { plain: string; gz: string; bytes: number } {
  const lines: string[] = new Array(LINES);
  for (let i = 0; i < LINES; i++) {
    lines[i] = JSON.stringify({
      id: i,
      tenant: `t${(i * 7919) % 97}`,
      ts: 1_700_000_000_000 + i * 13,
      level: i % 11 === 0 ? 'warn' : 'info',
      msg: `event ${(i * 2654435761) % 1_000_003} ok`.padEnd(30, '.'),
    });
  }
  const text = `${lines.join('\n')}\n`;
  const plain = join(dir, 'lines.jsonl');
  const gz = join(dir, 'lines.jsonl.gz');
  writeFileSync(plain, text);
  writeFileSync(gz, gzipSync(text));
  return { plain, gz, bytes: Buffer.byteLength(text) };
}

async function viaReadJsonl(path: string): Promise<number> {
  let n = 0;
  for await (const line of readJsonl(path)) n += line.length > 0 ? 1 : 0;
  return n;
}

async function viaReadJsonlPositions(path: string): Promise<number> {
  const source = readJsonl(path);
  const iterator = source[Symbol.asyncIterator]();
  let n = 0;
  let offset = 0;
  for (;;) {
    const next = await iterator.next();
    if (next.done === true) break;
    offset = iterator[SOURCE_POSITION]().offset;
    n++;
  }
  return offset > 0 ? n : -1;
}

async function viaReadJsonlParsed(path: string): Promise<number> {
  let n = 0;
  for await (const record of readJsonl<{ id: number }>(path, { parse: true })) {
    n += record.id >= 0 ? 1 : 0;
  }
  return n;
}

async function viaReadline(path: string, gz = false): Promise<number> {
  const input = gz ? createReadStream(path).pipe(createGunzip()) : createReadStream(path);
  let n = 0;
  for await (const line of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) {
    n += line.length > 0 ? 1 : 0;
  }
  return n;
}

async function viaReadlineParsed(path: string): Promise<number> {
  let n = 0;
  const input = createReadStream(path);
  for await (const line of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) {
    if (line.length > 0 && (JSON.parse(line) as { id: number }).id >= 0) n++;
  }
  return n;
}

/** A stream and a byte split with a callback per line: no promise per line. */
async function viaManualSplit(path: string): Promise<number> {
  let n = 0;
  const onLine = (line: string) => {
    n += line.length > 0 ? 1 : 0;
  };
  let rest: Buffer | undefined;
  for await (const chunk of createReadStream(path, {
    highWaterMark: 1 << 20,
  }) as AsyncIterable<Buffer>) {
    const buf: Buffer = rest === undefined ? chunk : Buffer.concat([rest, chunk]);
    let start = 0;
    for (;;) {
      const nl = buf.indexOf(10, start);
      if (nl === -1) break;
      if (nl > start) onLine(buf.toString('utf8', start, nl));
      start = nl + 1;
    }
    rest = start < buf.length ? buf.subarray(start) : undefined;
  }
  if (rest !== undefined && rest.length > 0) onLine(rest.toString('utf8'));
  return n;
}

type Reader = (path: string) => Promise<number>;

/** Lines per second of each reader, interleaved over the rounds (order rotated), medians. */
async function race(
  path: string,
  readers: Record<string, Reader>,
): Promise<Record<string, number[]>> {
  const names = Object.keys(readers);
  const rates: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
  for (let round = 0; round < WARMUP + ROUNDS; round++) {
    for (let i = 0; i < names.length; i++) {
      const name = names[(i + round) % names.length]!;
      collectGarbage();
      const t0 = nowNs();
      const n = await readers[name]!(path);
      const s = (nowNs() - t0) / 1e9;
      if (n !== LINES) throw new Error(`${name} read ${n} lines, not ${LINES}`);
      if (round >= WARMUP) rates[name]!.push(LINES / s);
    }
  }
  return rates;
}

/** The median of the per-round ratios a/b (rounds are paired: same machine moment). */
function pairedRatio(a: number[], b: number[]): number {
  return median(a.map((v, i) => v / b[i]!));
}

const mLines = (v: number) => `${fmt(median([v]) / 1e6, 2)} M lines/s`;

/**
 * µs per dead-lettered line, `perError` lines sharing one error object (1: each its own error, the
 * worst case; 500: the records of one failed batch), beside a write stream given the same lines.
 */
async function deadLetterCost(
  perError: number,
): Promise<{ usPerLine: number; usPerLineStream: number }> {
  const errors = Array.from({ length: Math.ceil(LETTERS / perError) }, () =>
    Object.assign(new Error('HTTP 500 from shard b: internal error'), { code: 'SHARDWISE_HTTP' }),
  );
  const lines = Array.from({ length: LETTERS }, (_, i) => ({
    record: `{"id":${i},"tenant":"t${i % 97}","msg":"a record that failed for good, about 100 bytes"}`,
    error: errors[Math.floor(i / perError)]!,
    outcome: 'failed' as const,
    shard: 'b',
    attempts: 3,
  }));
  const file = join(dir, `letters-${nowNs()}.ndjson`);
  const letters = await DeadLetterFile.open(file);
  collectGarbage();
  let t0 = nowNs();
  await Promise.all(lines.map((letter) => letters.append(letter)));
  const usPerLine = (nowNs() - t0) / 1000 / LETTERS;
  await letters.close();

  // The peer: the same lines as JSON through a write stream, no fsync.
  const streamFile = join(dir, `stream-${nowNs()}.ndjson`);
  collectGarbage();
  t0 = nowNs();
  const out = createWriteStream(streamFile);
  for (const l of lines) {
    const ok = out.write(
      `${JSON.stringify({ record: l.record, error: { code: l.error.code, message: l.error.message, shard: l.shard, attempts: l.attempts }, outcome: l.outcome, at: new Date().toISOString() })}\n`,
    );
    if (!ok) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  }
  await new Promise<void>((resolve, reject) => {
    out.once('error', reject);
    out.end(() => resolve());
  });
  const usPerLineStream = (nowNs() - t0) / 1000 / LETTERS;
  return { usPerLine, usPerLineStream };
}

async function fsyncMs(): Promise<number> {
  const handle = await open(join(dir, 'fsync.probe'), 'a');
  const times: number[] = [];
  for (let i = 0; i < 20; i++) {
    await handle.writeFile('x'.repeat(100));
    const t0 = nowNs();
    await handle.sync();
    times.push((nowNs() - t0) / 1e6);
  }
  await handle.close();
  return median(times);
}

async function loneLineMs(): Promise<number> {
  const letters = await DeadLetterFile.open(join(dir, 'lone.ndjson'));
  const times: number[] = [];
  for (let i = 0; i < 10; i++) {
    const t0 = nowNs();
    await letters.append({ record: { id: i }, error: new Error('x'), outcome: 'failed' });
    times.push((nowNs() - t0) / 1e6);
  }
  await letters.close();
  return median(times);
}

const { plain, gz, bytes } = makeFile();
printHeader(
  `readJsonl over ${LINES.toLocaleString('en')} lines (${fmt(bytes / LINES, 1)} bytes each), ${ROUNDS} rounds after ${WARMUP} warm-up`,
);
// Each comparison races its own contenders only, so each pair shares the same moments of the
// machine (and the same JIT and heap state).
const strings = await race(plain, {
  readJsonl: viaReadJsonl,
  readline: viaReadline,
  split: viaManualSplit,
});
const positions = await race(plain, { readJsonl: viaReadJsonl, positions: viaReadJsonlPositions });
const parsed = await race(plain, { parsed: viaReadJsonlParsed, readlineParsed: viaReadlineParsed });
const gzRates = await race(gz, {
  readJsonlGz: viaReadJsonl,
  readlineGz: (path) => viaReadline(path, true),
});
const m = (rates: number[]) => median(rates);
const r: Record<string, number[]> = { ...strings, ...parsed };
printTable(
  ['case', 'shardwise', 'peer (same run)', 'ratio (median of rounds)', 'goal'],
  [
    [
      'readJsonl (strings) vs readline',
      mLines(m(r.readJsonl!)),
      `readline ${mLines(m(r.readline!))}`,
      ratio(pairedRatio(r.readJsonl!, r.readline!)),
      `${goal(m(r.readJsonl!) >= 1e6 && pairedRatio(r.readJsonl!, r.readline!) >= 1)} (≥ 1M/s, ≥ 1×)`,
    ],
    [
      'readJsonl (strings) vs stream + byte split, no promise per line',
      mLines(m(r.readJsonl!)),
      `split ${mLines(m(r.split!))}`,
      ratio(pairedRatio(r.readJsonl!, r.split!)),
      '(the ceiling)',
    ],
    [
      'readJsonl + [SOURCE_POSITION]() per record vs without',
      mLines(m(positions.positions!)),
      `without ${mLines(m(positions.readJsonl!))}`,
      ratio(pairedRatio(positions.positions!, positions.readJsonl!)),
      '',
    ],
    [
      'readJsonl({ parse: true }) vs readline + JSON.parse',
      mLines(m(r.parsed!)),
      `readline+parse ${mLines(m(r.readlineParsed!))}`,
      ratio(pairedRatio(r.parsed!, r.readlineParsed!)),
      '',
    ],
    [
      'readJsonl .jsonl.gz vs createGunzip + readline',
      mLines(m(gzRates.readJsonlGz!)),
      `gunzip+readline ${mLines(m(gzRates.readlineGz!))}`,
      ratio(pairedRatio(gzRates.readJsonlGz!, gzRates.readlineGz!)),
      '',
    ],
  ],
);

printHeader(
  `dead letters: ${LETTERS.toLocaleString('en')} lines in flight, default window (50 ms / 1,000 lines)`,
);
const rows: string[][] = [];
for (const perError of [1, 500]) {
  const costs: { usPerLine: number; usPerLineStream: number }[] = [];
  for (let round = 0; round < 3; round++) costs.push(await deadLetterCost(perError));
  rows.push([
    `DeadLetterFile.append, µs per line (fsynced), ${perError === 1 ? 'each its own error' : `${perError} lines per error (a failed batch)`}`,
    `${fmt(median(costs.map((c) => c.usPerLine)), 2)} µs`,
    `write stream, no fsync ${fmt(median(costs.map((c) => c.usPerLineStream)), 2)} µs`,
    ratio(median(costs.map((c) => c.usPerLine / c.usPerLineStream))),
  ]);
}
const sync = await fsyncMs();
const lone = await loneLineMs();
printTable(
  ['case', 'shardwise', 'peer (same run)', 'ratio'],
  [
    ...rows,
    ['one fsync of a small append, here', `${fmt(sync, 2)} ms`, '', ''],
    [
      'a lone line: append to settled (window + fsync)',
      `${fmt(lone, 1)} ms`,
      `50 ms window + fsync`,
      '',
    ],
  ],
);
