/**
 * Compression off the main thread, measured without the ingestion (which wires it in later):
 *
 *   node --expose-gc --import tsx bench/compression.bench.ts     (or npm run bench compression)
 *
 * 1. Codecs on ingest batches: 500 NDJSON records of ~100 bytes a batch, through the
 *    `Compressor` (node:zlib's asynchronous API and `@mongodb-js/zstd` on the threadpool, behind
 *    the gate). Wire bytes per record against raw (goal for gzip 1 and zstd 1: ≤ 0.25× raw) and
 *    MB/s of raw input, for each default level and one higher level.
 * 2. Main-thread time per batch: `zlib.gzipSync` / `brotliCompressSync` (what a user's `encode`
 *    would call) against the asynchronous path, measured as the event loop's active time
 *    (`performance.eventLoopUtilization`): the asynchronous path leaves the deflating to the pool.
 * 3. Event-loop lag while 1 MiB batches are compressed back to back: the largest and the 99th
 *    percentile delay (`monitorEventLoopDelay`) through the asynchronous path against `gzipSync`
 *    — what blocked the event loop in the issue.
 *
 * Rounds are interleaved (the order flips each round); figures are medians over rounds.
 */
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

const RECORDS = 500;
const BATCHES = 120;
const ROUNDS = 5;
const BIG_BATCHES = 24;
const BIG_ROUNDS = 3;

/** A small PRNG, so every run compresses the same records. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const LEVELS = ['debug', 'info', 'info', 'info', 'warn', 'error'];
const PATHS = ['/api/orders', '/api/users', '/health', '/api/cart', '/static/app.js'];

/** `n` NDJSON records of ~100 bytes, like a log or metrics producer's. */
function records(n: number, random: () => number, from: number): string {
  let out = '';
  for (let i = 0; i < n; i++) {
    const id = from + i;
    out += `${JSON.stringify({
      ts: 1_700_000_000_000 + id * 13 + Math.floor(random() * 10),
      host: `web-${Math.floor(random() * 24)}`,
      level: LEVELS[Math.floor(random() * LEVELS.length)],
      path: PATHS[Math.floor(random() * PATHS.length)],
      status: random() < 0.95 ? 200 : 503,
      ms: Math.floor(random() * 900),
      id,
    })}\n`;
  }
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
    `Main-thread time per batch of ${RECORDS} records: sync zlib against the async threadpool path, ${ROUNDS} rounds`,
  );
  const gzip = createCompressor('gzip');
  const br = createCompressor('br');
  const zstd = createCompressor('zstd');
  await zstd.ready();
  const runs: Record<string, number[]> = {
    'gzip sync': [],
    'gzip async': [],
    'br sync': [],
    'br async': [],
    'zstd async': [],
  };
  const steps: [string, () => Promise<{ busyMs: number }>][] = [
    ['gzip sync', () => syncAll('gzip', batches)],
    ['gzip async', () => compressAll(gzip, batches)],
    ['br sync', () => syncAll('br', batches)],
    ['br async', () => compressAll(br, batches)],
    ['zstd async', () => compressAll(zstd, batches)],
  ];
  for (const [, step] of steps) await step();
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? steps : [...steps].reverse();
    for (const [name, step] of order) {
      collectGarbage();
      runs[name]!.push((await step()).busyMs / BATCHES);
    }
  }
  const m = (name: string) => median(runs[name]!);
  printTable(
    ['codec', 'sync: main-thread ms/batch', 'async: main-thread ms/batch', 'async/sync'],
    [
      [
        'gzip level 1',
        fmt(m('gzip sync'), 3),
        fmt(m('gzip async'), 3),
        ratio(m('gzip async') / m('gzip sync')),
      ],
      [
        'br quality 1',
        fmt(m('br sync'), 3),
        fmt(m('br async'), 3),
        ratio(m('br async') / m('br sync')),
      ],
      ['zstd level 1', '(no sync peer)', fmt(m('zstd async'), 3), ''],
    ],
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
  const runs = {
    sync: [] as { max: number; p99: number }[],
    async: [] as { max: number; p99: number }[],
  };
  for (let round = 0; round < BIG_ROUNDS; round++) {
    const steps: ['sync' | 'async', () => Promise<unknown>][] = [
      ['sync', () => syncAll('gzip', big)],
      ['async', () => compressAll(gzip, big)],
    ];
    for (const [name, work] of round % 2 === 0 ? steps : steps.reverse()) {
      collectGarbage();
      runs[name].push(await measure(work));
    }
  }
  const row = (name: 'sync' | 'async') => [
    name === 'sync' ? 'gzipSync in the producer' : 'Compressor (threadpool, gated)',
    fmt(median(runs[name].map((r) => r.max)), 2),
    fmt(median(runs[name].map((r) => r.p99)), 2),
  ];
  const ratioMax = median(runs.sync.map((r) => r.max)) / median(runs.async.map((r) => r.max));
  printTable(['path', 'max lag ms', 'p99 lag ms'], [row('sync'), row('async')]);
  console.log(
    `\nsync/async max lag: ${ratio(ratioMax)}; async max lag ≤ 5 ms: ${goal(median(runs.async.map((r) => r.max)) <= 5)}`,
  );
}

await codecs();
await mainThread();
await lag();
