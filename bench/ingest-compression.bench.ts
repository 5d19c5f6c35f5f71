/**
 * Compression wired into the ingestion: `http.ingest({ compression })` against uncompressed
 * `http.ingest` and hand-written peers, one run, interleaved rounds (the order flips each round),
 * medians.
 *
 *   node --expose-gc --import tsx bench/ingest-compression.bench.ts     (or npm run bench ingest-compression)
 *
 * 8 loopback shards in a child process (bench/http-fixtures/servers.mjs: each reads the body and
 * answers at once; they do not decode it — the client is measured), ~100-byte NDJSON records of
 * a log producer (a seeded mix of hosts, paths, levels and timings), batches of 500.
 *
 * 1. Loopback: records/s and CPU per record of `http.ingest` uncompressed, with zstd level 1 and
 *    with gzip level 1, and of the hand-written peer loop of bench/ingest.bench.ts (raw undici
 *    Pools, `JSON.stringify`, `join`, 64 requests in flight). Wire bytes per record from
 *    `summary.transit`. Goals: wire ≤ 0.25× raw (gzip 1, zstd 1); records/s with zstd ≥ 0.85×
 *    and with gzip ≥ 0.7× of uncompressed; main-thread CPU per record with compression ≤ 1.15×
 *    without (Linux `/proc/self/task/<pid>/stat`: the main thread alone, not the threadpool that
 *    compresses); uncompressed `http.ingest` ≥ 1,000,000 records/s where the peer does ≥ 600k
 *    (reported as the ratio on a loaded machine).
 * 2. Through a link throttled to 100 Mbit/s each way (bench/http-fixtures/throttle-proxy.mjs: a
 *    TCP proxy with a token bucket per direction, in its own process, in front of the shards):
 *    records/s with zstd against uncompressed (goal ≥ 2.5×) and against a hand-written loop that
 *    gzips each batch synchronously (`gzipSync` level 1 inside the loop, same batching, 64 in
 *    flight).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import zlib from 'node:zlib';
import { Pool } from 'undici';
import {
  type CompressionOption,
  createHttpBalancer,
  type IngestSummary,
  p2c,
} from '../src/http/index.js';
import { handWrittenLoad } from './hand-written.js';
import { fmt, goal, median, nowNs, printHeader, printTable, ratio } from './lib.js';
import { type LogRecord, logRecord, rng } from './log-records.js';

const SHARDS = 8;
const CONNECTIONS = 8;
const BATCH = 500;
const IN_FLIGHT = SHARDS * CONNECTIONS;
const LOOPBACK_RECORDS = 1_000_000;
const THROTTLED_RECORDS = 300_000;
const ROUNDS = 5;
const LINK_BITS = 100_000_000;

// ——— records ———

/** ~100-byte log records, made as they are read (a source never held whole in memory). */
function* records(n: number): Generator<LogRecord> {
  const random = rng(31);
  for (let id = 0; id < n; id++) yield logRecord(id, random);
}

// ——— child processes ———

function forkReady(
  file: string,
  args: string[],
): Promise<{ child: ChildProcess; ports: number[] }> {
  const child = fork(new URL(file, import.meta.url), args, {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('message', (m: { ports: number[] }) => resolve({ child, ports: m.ports }));
  });
}

// ——— contenders: each sends `n` records to `origins` ———

interface Outcome {
  written: number;
  raw: number;
  wire: number;
}

type Contender = (origins: string[], n: number) => Promise<Outcome>;

function viaIngest(compression: CompressionOption | undefined): Contender {
  return async (origins, n) => {
    const http = createHttpBalancer({ origins, picker: p2c(), connectionsPerShard: CONNECTIONS });
    const summary: IngestSummary<LogRecord> = await http.ingest(records(n), {
      path: '/ingest',
      batch: { maxRecords: BATCH },
      ...(compression === undefined ? {} : { compression }),
    });
    await http.close();
    if (summary.failed > 0) throw new Error(`${summary.failed} records failed`);
    return { written: summary.written, raw: summary.transit.raw, wire: summary.transit.wire };
  };
}

/**
 * A careful user's loop over raw undici Pools: batches of 500 joined as NDJSON, round robin, at
 * most 64 requests in flight — each body gzipped synchronously in the loop when `gzip` is set
 * (what the issue found users writing: it blocks the event loop for every deflate).
 */
function handWritten(gzip: boolean): Contender {
  return async (origins, n) => {
    const pools = origins.map((o) => new Pool(o, { connections: CONNECTIONS, pipelining: 1 }));
    const headers: Record<string, string> = { 'content-type': 'application/x-ndjson' };
    if (gzip) headers['content-encoding'] = 'gzip';
    return handWrittenLoad(pools, records(n), {
      batch: BATCH,
      inFlight: IN_FLIGHT,
      headers,
      ...(gzip ? { body: (text: string) => zlib.gzipSync(text, { level: 1 }) } : {}),
    });
  };
}

// ——— measuring ———

/** The main thread's CPU time so far, ms (Linux, 10 ms ticks; undefined elsewhere). */
function mainThreadCpuMs(): number | undefined {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

interface Result {
  rate: number;
  /** The slowest and fastest round (medians hide how loaded the machine was). */
  range?: [number, number];
  /** Process CPU (user + system, every thread) per record, ns. */
  cpuNs: number;
  /** Main-thread CPU per record, ns (NaN without /proc). */
  mainNs: number;
  wirePerRecord: number;
  rawPerRecord: number;
}

async function measure(contender: Contender, origins: string[], n: number): Promise<Result> {
  const cpu0 = process.cpuUsage();
  const main0 = mainThreadCpuMs();
  const t0 = nowNs();
  const out = await contender(origins, n);
  const elapsed = nowNs() - t0;
  const main1 = mainThreadCpuMs();
  const cpu = process.cpuUsage(cpu0);
  if (out.written !== n) throw new Error(`wrote ${out.written} of ${n}`);
  return {
    rate: (n * 1e9) / elapsed,
    cpuNs: ((cpu.user + cpu.system) * 1000) / n,
    mainNs: main0 === undefined || main1 === undefined ? Number.NaN : ((main1 - main0) * 1e6) / n,
    wirePerRecord: out.wire / n,
    rawPerRecord: out.raw / n,
  };
}

/** Rounds of every contender, the order flipped each round; medians per contender. */
async function interleaved(
  contenders: Record<string, Contender>,
  origins: string[],
  n: number,
): Promise<Record<string, Result>> {
  const names = Object.keys(contenders);
  const results: Record<string, Result[]> = Object.fromEntries(names.map((k) => [k, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    for (const name of order) results[name]!.push(await measure(contenders[name]!, origins, n));
  }
  const out: Record<string, Result> = {};
  for (const name of names) {
    const rs = results[name]!;
    const m = (f: (r: Result) => number) => median(rs.map(f));
    const rates = rs.map((r) => r.rate);
    out[name] = {
      rate: m((r) => r.rate),
      range: [Math.min(...rates), Math.max(...rates)],
      cpuNs: m((r) => r.cpuNs),
      mainNs: m((r) => r.mainNs),
      wirePerRecord: m((r) => r.wirePerRecord),
      rawPerRecord: m((r) => r.rawPerRecord),
    };
  }
  return out;
}

function spanOf(x: Result): string {
  return x.range === undefined ? '' : `${fmt(x.range[0], 0)}–${fmt(x.range[1], 0)}`;
}

async function loopback(origins: string[]): Promise<void> {
  printHeader(
    `ingest with compression: ${LOOPBACK_RECORDS.toLocaleString('en')} records into ${SHARDS} loopback shards, batches of ${BATCH}, ${ROUNDS} rounds`,
  );
  const contenders: Record<string, Contender> = {
    plain: viaIngest(undefined),
    zstd: viaIngest('zstd'),
    gzip: viaIngest('gzip'),
    peer: handWritten(false),
  };
  // Warm-up: connections, the JIT, the young generation, zstd's peer.
  for (const c of Object.values(contenders)) await measure(c, origins, 200_000);
  const r = await interleaved(contenders, origins, LOOPBACK_RECORDS);
  const plain = r.plain!;
  const rows = [
    ['http.ingest, uncompressed', plain],
    ['http.ingest, zstd level 1', r.zstd!],
    ['http.ingest, gzip level 1', r.gzip!],
    ['hand-written loop over raw undici Pools (peer)', r.peer!],
  ] as const;
  printTable(
    [
      'contender',
      'records/s',
      'rounds (min–max)',
      'vs uncompressed',
      'wire B/record',
      'of raw',
      'main-thread CPU ns/record',
      'vs uncompressed',
      'process CPU ns/record',
    ],
    rows.map(([name, x]) => [
      name,
      fmt(x.rate, 0),
      spanOf(x),
      ratio(x.rate / plain.rate),
      fmt(x.wirePerRecord, 1),
      ratio(x.wirePerRecord / x.rawPerRecord, 3),
      fmt(x.mainNs, 0),
      ratio(x.mainNs / plain.mainNs),
      fmt(x.cpuNs, 0),
    ]),
  );
  const zWire = r.zstd!.wirePerRecord / r.zstd!.rawPerRecord;
  const gWire = r.gzip!.wirePerRecord / r.gzip!.rawPerRecord;
  const zRate = r.zstd!.rate / plain.rate;
  const gRate = r.gzip!.rate / plain.rate;
  const zCpu = r.zstd!.mainNs / plain.mainNs;
  const gCpu = r.gzip!.mainNs / plain.mainNs;
  const peer = r.peer!.rate;
  const aim =
    peer >= 600_000
      ? goal(plain.rate >= 1_000_000)
      : 'not judged: the peer is below 600,000 on this machine now (compare the ratio; the issue measured 1.71×)';
  console.log(
    `\ngoals: wire ≤ 0.25× raw: zstd ${ratio(zWire, 3)} ${goal(zWire <= 0.25)}, gzip ${ratio(gWire, 3)} ${goal(gWire <= 0.25)}; ` +
      `records/s: zstd ${ratio(zRate)} ≥ 0.85× ${goal(zRate >= 0.85)}, gzip ${ratio(gRate)} ≥ 0.7× ${goal(gRate >= 0.7)}; ` +
      `main-thread CPU ≤ 1.15×: zstd ${ratio(zCpu)} ${goal(zCpu <= 1.15)}, gzip ${ratio(gCpu)} ${goal(gCpu <= 1.15)}` +
      `\nuncompressed http.ingest ${fmt(plain.rate, 0)} records/s beside the peer's ${fmt(peer, 0)}: ${ratio(plain.rate / peer)}; ` +
      `the issue's aim, ≥ 1,000,000 where the peer does ≥ 600,000: ${aim}`,
  );
}

async function throttled(shardPorts: number[]): Promise<void> {
  printHeader(
    `ingest through a link of ${LINK_BITS / 1e6} Mbit/s each way (a throttling proxy): ${THROTTLED_RECORDS.toLocaleString('en')} records, ${ROUNDS} rounds`,
  );
  const { child, ports } = await forkReady('./http-fixtures/throttle-proxy.mjs', [
    String(LINK_BITS),
    ...shardPorts.map(String),
  ]);
  try {
    const origins = ports.map((p) => `http://127.0.0.1:${p}`);
    const contenders: Record<string, Contender> = {
      plain: viaIngest(undefined),
      zstd: viaIngest('zstd'),
      gzipSync: handWritten(true),
    };
    for (const c of Object.values(contenders)) await measure(c, origins, 50_000);
    const r = await interleaved(contenders, origins, THROTTLED_RECORDS);
    const zstd = r.zstd!;
    const rows = [
      ['http.ingest, zstd level 1', zstd],
      ['http.ingest, uncompressed', r.plain!],
      ['hand-written loop, gzipSync level 1 in the loop', r.gzipSync!],
    ] as const;
    printTable(
      [
        'contender',
        'records/s',
        'rounds (min–max)',
        'zstd vs it',
        'wire B/record',
        'main-thread CPU ns/record',
      ],
      rows.map(([name, x]) => [
        name,
        fmt(x.rate, 0),
        spanOf(x),
        ratio(zstd.rate / x.rate),
        fmt(x.wirePerRecord, 1),
        fmt(x.mainNs, 0),
      ]),
    );
    const vsPlain = zstd.rate / r.plain!.rate;
    const vsSync = zstd.rate / r.gzipSync!.rate;
    const linkRecords = LINK_BITS / 8 / r.plain!.rawPerRecord;
    console.log(
      `\ngoals: zstd ≥ 2.5× uncompressed through the link: ${ratio(vsPlain)} ${goal(vsPlain >= 2.5)}; ` +
        `ahead of the gzipSync loop: ${ratio(vsSync)} ${goal(vsSync > 1)} ` +
        `(the link carries at most ${fmt(linkRecords, 0)} uncompressed records/s of body bytes)`,
    );
  } finally {
    child.disconnect();
  }
}

async function main(): Promise<void> {
  const { child, ports } = await forkReady('./http-fixtures/servers.mjs', [String(SHARDS)]);
  try {
    const only = process.argv[2];
    if (only === undefined || only === 'loopback') {
      await loopback(ports.map((p) => `http://127.0.0.1:${p}`));
    }
    if (only === undefined || only === 'throttled') await throttled(ports);
  } finally {
    child.disconnect();
  }
}

await main();
