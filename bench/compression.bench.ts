/**
 * Compression off the main thread, measured on its own (bench/ingest-compression.bench.ts
 * measures it inside `http.ingest`):
 *
 *   node --expose-gc --import tsx bench/compression.bench.ts     (or npm run bench compression)
 *
 * 1. Codecs on ingest batches: 500 NDJSON records of ~100 bytes a batch, through the
 *    `Compressor` (node:zlib's asynchronous API and `@mongodb-js/zstd` on the threadpool, behind
 *    the gate). Wire bytes per record against raw (goal for gzip 1 and zstd 1: ≤ 0.25× raw) and
 *    MB/s of raw input, for each default level and one higher level.
 * 2. Main-thread CPU per batch: `zlib.gzipSync` / `brotliCompressSync` (what a user's `encode`
 *    would call) against the asynchronous path: the main thread's own CPU time (Linux
 *    `/proc/self/task/<pid>/stat`, 10 ms ticks over ~1,000 batches a round), beside the event
 *    loop's active time (`performance.eventLoopUtilization`, inflated on a loaded machine when the
 *    thread waits for a core). The asynchronous path leaves the deflating to the pool.
 * 3. Event-loop lag while 1 MiB batches are compressed back to back: the largest and the 99th
 *    percentile delay (`monitorEventLoopDelay`) through the asynchronous path against `gzipSync`
 *    — what blocked the event loop in the issue — and, as the floor, an idle loop for as long
 *    (what the machine's other load alone costs).
 *
 * Rounds are interleaved (the order flips each round); figures are medians over rounds. One
 * section alone: add `codecs`, `cpu` or `lag` to the command.
 */
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import zlib from 'node:zlib';
import {
  type CompressionOption,
  type Compressor,
  createCompressor,
} from '../src/transport/compression.js';
import { compressionGate } from '../src/transport/gate.js';
import {
  collectGarbage,
  fmt,
  goal,
  median,
  nowNs,
  printHeader,
  printTable,
  ratio,
  turn,
} from './lib.js';
import { logRecord, rng } from './log-records.js';

const RECORDS = 500;
const BATCHES = 120;
const ROUNDS = 5;
const BIG_BATCHES = 24;
const BIG_ROUNDS = 5;
/** Section 2 compresses the batches this many times a round (enough 10 ms CPU ticks). */
const CPU_REPEAT = 8;

/** The main thread's CPU time so far, ms (Linux; undefined elsewhere). */
function mainThreadCpuMs(): number | undefined {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime (fields 14 and 15 of the line), in clock ticks of 10 ms.
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/** `n` NDJSON records of ~100 bytes, like a log or metrics producer's. */
function records(n: number, random: () => number, from: number): string {
  let out = '';
  for (let i = 0; i < n; i++) out += `${JSON.stringify(logRecord(from + i, random))}\n`;
  return out;
}

const random = rng(31);
const batches = Array.from({ length: BATCHES }, (_, b) =>
  Buffer.from(records(RECORDS, random, b * RECORDS)),
);
const rawPerRecord = batches.reduce((n, b) => n + b.length, 0) / (BATCHES * RECORDS);

interface Contender {
  name: string;
  option: CompressionOption;
  goalRatio?: number;
}

const CONTENDERS: Contender[] = [
  { name: 'gzip level 1 (default)', option: 'gzip', goalRatio: 0.25 },
  { name: 'zstd level 1 (default)', option: 'zstd', goalRatio: 0.25 },
  { name: 'br quality 1 (default)', option: 'br' },
  { name: 'gzip level 6', option: { codec: 'gzip', level: 6 } },
  { name: 'zstd level 3', option: { codec: 'zstd', level: 3 } },
  { name: 'br quality 4', option: { codec: 'br', level: 4 } },
];

/** Compresses every batch through `compressor`, all offered at once (the gate queues them). */
async function compressAll(
  compressor: Compressor,
  input: readonly Buffer[],
): Promise<{ ms: number; wire: number; busyMs: number }> {
  const elu = performance.eventLoopUtilization();
  const t0 = nowNs();
  const out = await Promise.all(input.map((b) => compressor.compress(b)));
  const ms = (nowNs() - t0) / 1e6;
  const busyMs = performance.eventLoopUtilization(elu).active;
  return { ms, wire: out.reduce((n, c) => n + c.wireBytes, 0), busyMs };
}

/** The same batches compressed synchronously on the main thread, one per turn of the loop. */
async function syncAll(
  codec: 'gzip' | 'br',
  input: readonly Buffer[],
): Promise<{ ms: number; wire: number; busyMs: number }> {
  const elu = performance.eventLoopUtilization();
  const t0 = nowNs();
  let wire = 0;
  for (const b of input) {
    const out =
      codec === 'gzip'
        ? zlib.gzipSync(b, { level: 1 })
        : zlib.brotliCompressSync(b, {
            params: {
              [zlib.constants.BROTLI_PARAM_QUALITY]: 1,
              [zlib.constants.BROTLI_PARAM_SIZE_HINT]: b.length,
            },
          });
    wire += out.length;
    await turn();
  }
  const ms = (nowNs() - t0) / 1e6;
  return { ms, wire, busyMs: performance.eventLoopUtilization(elu).active };
}

async function codecs(): Promise<void> {
  printHeader(
    `Codecs on ${BATCHES} batches of ${RECORDS} NDJSON records (${fmt(rawPerRecord)} bytes a record), ${ROUNDS} rounds, gate ${compressionGate().limit}`,
  );
  const compressors = CONTENDERS.map((c) => createCompressor(c.option));
  await Promise.all(compressors.map((c) => c.ready()));
  // Warm-up: every codec once.
  for (const c of compressors) await compressAll(c, batches.slice(0, 20));
  const results = CONTENDERS.map(() => ({ ms: [] as number[], wire: 0 }));
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? compressors.keys() : [...compressors.keys()].reverse();
    for (const i of order) {
      collectGarbage();
      const r = await compressAll(compressors[i]!, batches);
      results[i]!.ms.push(r.ms);
      results[i]!.wire = r.wire;
    }
  }
  const rawMB = batches.reduce((n, b) => n + b.length, 0) / 1e6;
  printTable(
    [
      'codec',
      'wire bytes/record',
      'of raw',
      'goal ≤ 0.25×',
      'MB/s of raw (wall)',
      'ms/batch (wall)',
    ],
    [
      ['raw (no compression)', fmt(rawPerRecord), ratio(1), '', '', ''],
      ...CONTENDERS.map((c, i) => {
        const perRecord = results[i]!.wire / (BATCHES * RECORDS);
        const ms = median(results[i]!.ms);
        return [
          c.name,
          fmt(perRecord),
          ratio(perRecord / rawPerRecord, 3),
          c.goalRatio === undefined ? '' : goal(perRecord / rawPerRecord <= c.goalRatio),
          fmt(rawMB / (ms / 1000)),
          fmt(ms / BATCHES, 3),
        ];
      }),
    ],
  );
}

async function mainThread(): Promise<void> {
  printHeader(
    `Main-thread CPU per batch of ${RECORDS} records: sync zlib against the async threadpool path, ${ROUNDS} rounds of ${BATCHES * CPU_REPEAT} batches`,
  );
  const gzip = createCompressor('gzip');
  const br = createCompressor('br');
  const zstd = createCompressor('zstd');
  await zstd.ready();
  const many = Array.from({ length: CPU_REPEAT }, () => batches).flat();
  const names = ['gzip sync', 'gzip async', 'br sync', 'br async', 'zstd async'] as const;
  type Name = (typeof names)[number];
  const steps: Record<Name, () => Promise<{ busyMs: number }>> = {
    'gzip sync': () => syncAll('gzip', many),
    'gzip async': () => compressAll(gzip, many),
    'br sync': () => syncAll('br', many),
    'br async': () => compressAll(br, many),
    'zstd async': () => compressAll(zstd, many),
  };
  const cpu = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Record<Name, number[]>;
  const busy = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Record<Name, number[]>;
  for (const name of names) await steps[name]();
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    for (const name of order) {
      collectGarbage();
      const before = mainThreadCpuMs();
      const { busyMs } = await steps[name]();
      const after = mainThreadCpuMs();
      if (before !== undefined && after !== undefined)
        cpu[name].push((after - before) / many.length);
      busy[name].push(busyMs / many.length);
    }
  }
  const c = (name: Name) => median(cpu[name]);
  const b = (name: Name) => median(busy[name]);
  const row = (label: string, sync: Name | undefined, async: Name) => [
    label,
    sync === undefined ? '(no sync peer)' : `${fmt(c(sync) * 1000, 0)} µs`,
    `${fmt(c(async) * 1000, 0)} µs`,
    sync === undefined ? '' : ratio(c(async) / c(sync)),
    sync === undefined ? '' : `${fmt(b(sync) * 1000, 0)} µs`,
    `${fmt(b(async) * 1000, 0)} µs`,
  ];
  printTable(
    [
      'codec',
      'sync: CPU/batch',
      'async: CPU/batch',
      'async/sync',
      'sync: loop busy',
      'async: loop busy',
    ],
    [
      row('gzip level 1', 'gzip sync', 'gzip async'),
      row('br quality 1', 'br sync', 'br async'),
      row('zstd level 1', undefined, 'zstd async'),
    ],
  );
  console.log(
    `\nper record: gzip async ${fmt((c('gzip async') * 1000) / RECORDS, 3)} µs, zstd async ${fmt((c('zstd async') * 1000) / RECORDS, 3)} µs of main-thread CPU (${mainThreadCpuMs() === undefined ? 'no /proc: CPU columns empty' : '/proc'})`,
  );
}

async function lag(): Promise<void> {
  printHeader(
    `Event-loop lag while ${BIG_BATCHES} batches of 1 MiB are compressed (gzip level 1), ${BIG_ROUNDS} rounds`,
  );
  const big = Array.from({ length: BIG_BATCHES }, (_, b) => {
    const text = records(11_000, random, 1_000_000 + b * 11_000);
    return Buffer.from(text).subarray(0, 1024 * 1024);
  });
  const gzip = createCompressor('gzip');
  const measure = async (work: () => Promise<unknown>) => {
    const histogram = monitorEventLoopDelay({ resolution: 1 });
    // A timer that keeps the loop turning, so every stall shows as a delay.
    const ticker = setInterval(() => {}, 1);
    histogram.enable();
    await work();
    histogram.disable();
    clearInterval(ticker);
    return { max: histogram.max / 1e6, p99: histogram.percentile(99) / 1e6 };
  };
  type Path = 'sync' | 'async' | 'idle';
  const runs: Record<Path, { max: number; p99: number; ms: number }[]> = {
    sync: [],
    async: [],
    idle: [],
  };
  let lastMs = 100;
  for (let round = 0; round < BIG_ROUNDS; round++) {
    const steps: [Path, () => Promise<unknown>][] = [
      ['sync', () => syncAll('gzip', big)],
      ['async', () => compressAll(gzip, big)],
      // Nothing but the timer, for as long as the last compression took.
      ['idle', () => new Promise((resolve) => setTimeout(resolve, lastMs))],
    ];
    for (const [name, work] of round % 2 === 0 ? steps : steps.reverse()) {
      collectGarbage();
      const t0 = nowNs();
      const r = await measure(work);
      const ms = (nowNs() - t0) / 1e6;
      if (name !== 'idle') lastMs = ms;
      runs[name].push({ ...r, ms });
    }
  }
  const max = (name: Path) => median(runs[name].map((r) => r.max));
  const row = (name: Path, label: string) => [
    label,
    fmt(max(name), 2),
    fmt(median(runs[name].map((r) => r.p99)), 2),
    fmt(median(runs[name].map((r) => r.ms)), 0),
  ];
  printTable(
    ['path', 'max lag ms', 'p99 lag ms', 'wall ms'],
    [
      row('sync', 'gzipSync in the producer'),
      row('async', 'Compressor (threadpool, gated)'),
      row('idle', 'idle loop (the machine’s floor)'),
    ],
  );
  const above = max('async') - max('idle');
  console.log(
    `\nsync/async max lag: ${ratio(max('sync') / max('async'))}; async max lag above the idle floor: ${fmt(above, 2)} ms (goal ≤ 5 ms: ${goal(above <= 5)})`,
  );
}

// `… compression.bench.ts lag` runs one section (codecs, cpu, lag); no argument runs them all.
const only = process.argv[2];
if (only === undefined || only === 'codecs') await codecs();
if (only === undefined || only === 'cpu') await mainThread();
if (only === undefined || only === 'lag') await lag();
