/**
 * Records per second of batched ingestion over HTTP, one run, interleaved rounds, medians.
 *
 *   node --expose-gc --import tsx bench/ingest.bench.ts     (or npm run bench ingest)
 *
 * 8 loopback shards in a child process (bench/http-fixtures/servers.mjs: each reads the body in
 * full and answers at once), ~100-byte JSON records from a generator, 8 connections per shard.
 * Each contender first runs a million records unmeasured (warm-up), then 5 interleaved rounds.
 *
 * 1. Throughput: `http.ingest` with batches of 500 (NDJSON) beside the peer — a hand-written loop
 *    over 8 raw undici Pools doing the same batching (per-record `JSON.stringify`, `join('\n')`,
 *    round robin, at most 64 requests in flight) — and beside one record per run (the core
 *    `ingest` with `sendTo`). Also `http.ingest` with `keepRecords: false` (batches hold bytes,
 *    not records), and of pre-encoded lines (strings pass through).
 *    Goals: ≥ 0.95× the peer (the floor), ≥ 1,000,000 records/s (the aim).
 * 2. The encoders alone: the shape-compiled JSON encoder against `JSON.stringify` per record,
 *    on the same records (ns per record, CPU-bound, no I/O).
 * 3. Heap through 10,000,000 records with `http.ingest`: peak heap while it runs, sampled.
 *
 * Client CPU per record (user + system) is printed beside each rate: on a shared machine it is
 * steadier than the rate.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { Pool } from 'undici';
import { createHttpBalancer, type HttpBalancer, p2c } from '../src/http/index.js';
import { ByteBuffer } from '../src/ingest/bytes.js';
import { jsonWriter } from '../src/ingest/json-shape.js';
import { handWrittenLoad } from './hand-written.js';
import { collectGarbage, fmt, goal, median, nowNs, printHeader, printTable, ratio } from './lib.js';

const SHARDS = 8;
const CONNECTIONS = 8;
const BATCH = 500;
const IN_FLIGHT = SHARDS * CONNECTIONS;
const RECORDS = 1_000_000;
const ONE_BY_ONE = 20_000;
const ROUNDS = 5;
const HEAP_RECORDS = 10_000_000;

interface Row {
  id: number;
  source: string;
  at: number;
  level: string;
  payload: string;
}

/** ~100-byte records, made as they are read (a source never held whole in memory). */
function* records(n: number): Generator<Row> {
  for (let id = 0; id < n; id++) {
    yield {
      id,
      source: 'bench',
      at: 1_700_000_000_000 + id,
      level: 'info',
      payload: `record-${id}-abcdefghijklmnopqrstu`,
    };
  }
}

/** Pre-encoded lines (as read from a JSONL file): 1 000 distinct ones, over and over. */
const LINES = [...records(1_000)].map((row) => JSON.stringify(row));
function* lines(n: number): Generator<string> {
  for (let i = 0; i < n; i++) yield LINES[i % LINES.length]!;
}

// ——— the shard process ———

function startShards(): Promise<{ child: ChildProcess; origins: string[] }> {
  const child = fork(new URL('./http-fixtures/servers.mjs', import.meta.url), [String(SHARDS)], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('message', (m: { ports: number[] }) => {
      resolve({ child, origins: m.ports.map((p) => `http://127.0.0.1:${p}`) });
    });
  });
}

function stats(child: ChildProcess): Promise<{ requests: number[] }> {
  return new Promise((resolve) => {
    child.once('message', (m: { requests: number[] }) => resolve(m));
    child.send({ type: 'stats' });
  });
}

// ——— contenders: each sends `n` records and resolves with the count written ———

type Contender = (n: number) => Promise<number>;

function balancer(origins: string[]): HttpBalancer {
  return createHttpBalancer({ origins, picker: p2c(), connectionsPerShard: CONNECTIONS });
}

function shardwiseBatched(origins: string[]): Contender {
  return async (n) => {
    const http = balancer(origins);
    const summary = await http.ingest(records(n), {
      path: '/ingest',
      batch: { maxRecords: BATCH },
    });
    await http.close();
    if (summary.failed > 0) throw new Error(`${summary.failed} records failed`);
    return summary.written;
  };
}

function shardwiseBytesOnly(origins: string[]): Contender {
  return async (n) => {
    const http = balancer(origins);
    const summary = await http.ingest(records(n), {
      path: '/ingest',
      batch: { maxRecords: BATCH, keepRecords: false },
    });
    await http.close();
    return summary.written;
  };
}

function shardwisePreEncoded(origins: string[]): Contender {
  return async (n) => {
    const http = balancer(origins);
    const summary = await http.ingest(lines(n), { path: '/ingest', batch: { maxRecords: BATCH } });
    await http.close();
    return summary.written;
  };
}

function shardwiseOneByOne(origins: string[]): Contender {
  return async (n) => {
    const http = balancer(origins);
    const headers = { 'content-type': 'application/json' };
    const summary = await http.ingest(records(n), {
      send: (shard, row, ctx) =>
        http.sendTo(
          shard,
          { method: 'POST', path: '/ingest', headers, body: JSON.stringify(row) },
          ctx,
        ),
    });
    await http.close();
    return summary.written;
  };
}

/**
 * The peer: what a careful user writes by hand with undici — batches of 500 joined as NDJSON,
 * round robin over one Pool per shard, at most 64 requests in flight.
 */
function handWritten(origins: string[]): Contender {
  return async (n) => {
    const pools = origins.map((o) => new Pool(o, { connections: CONNECTIONS, pipelining: 1 }));
    const headers = { 'content-type': 'application/x-ndjson' };
    const load = await handWrittenLoad(pools, records(n), {
      batch: BATCH,
      inFlight: IN_FLIGHT,
      headers,
    });
    return load.written;
  };
}

// ——— measuring ———

interface Result {
  rate: number;
  cpuNs: number;
}

async function measure(contender: Contender, n: number): Promise<Result> {
  // No forced GC between rounds: collecting what a contender leaves is part of its cost, and a
  // full collection shrinks V8's young generation, which the next round would pay to regrow.
  const cpu0 = process.cpuUsage();
  const t0 = nowNs();
  const written = await contender(n);
  const elapsed = nowNs() - t0;
  const cpu = process.cpuUsage(cpu0);
  if (written !== n) throw new Error(`wrote ${written} of ${n}`);
  return { rate: (n * 1e9) / elapsed, cpuNs: ((cpu.user + cpu.system) * 1000) / n };
}

async function interleaved(contenders: Record<string, [Contender, number]>) {
  const results: Record<string, Result[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, [contender, n]] of Object.entries(contenders)) {
      const result = await measure(contender, n);
      results[name] = [...(results[name] ?? []), result];
    }
  }
  const out: Record<string, Result> = {};
  for (const [name, rs] of Object.entries(results)) {
    out[name] = { rate: median(rs.map((r) => r.rate)), cpuNs: median(rs.map((r) => r.cpuNs)) };
  }
  return out;
}

/**
 * The body of one batch of 500 records, each way: the shape-compiled writer into a byte buffer
 * (shardwise), and `JSON.stringify` per record, `join('\n')`, `Buffer.from` (the peer's).
 */
function encoders(): { shape: number; stringify: number } {
  const rows = [...records(BATCH)];
  const write = jsonWriter();
  const out = new ByteBuffer(1 << 16);
  const shape = () => {
    out.length = 0;
    for (const row of rows) {
      write(row, out);
      out.writeByte(10);
    }
    return out.length;
  };
  const stringify = () => {
    const parts: string[] = [];
    for (const row of rows) parts.push(JSON.stringify(row));
    return Buffer.from(`${parts.join('\n')}\n`).length;
  };
  const time = (body: () => number) => {
    const t0 = nowNs();
    let n = 0;
    for (let r = 0; r < 200; r++) n += body();
    if (n === 0) throw new Error('nothing encoded');
    return (nowNs() - t0) / (200 * rows.length);
  };
  const a: number[] = [];
  const b: number[] = [];
  for (let round = 0; round < 15; round++) {
    a.push(time(shape));
    b.push(time(stringify));
  }
  return { shape: median(a), stringify: median(b) };
}

async function heapRun(
  origins: string[],
): Promise<{ rate: number; peakMb: number; baseMb: number }> {
  collectGarbage();
  const base = process.memoryUsage().heapUsed;
  let peak = base;
  const sampler = setInterval(() => {
    const used = process.memoryUsage().heapUsed;
    if (used > peak) peak = used;
  }, 50);
  const result = await measure(shardwiseBatched(origins), HEAP_RECORDS);
  clearInterval(sampler);
  return { rate: result.rate, peakMb: peak / 2 ** 20, baseMb: base / 2 ** 20 };
}

async function main() {
  printHeader('ingest: records/s into 8 loopback HTTP shards');
  const { child, origins } = await startShards();
  try {
    // Warm-up: connections, the JIT, and the young generation's size (V8 grows it as the
    // process allocates): each contender's first million records run slower than the next.
    await measure(shardwiseBatched(origins), RECORDS);
    await measure(handWritten(origins), RECORDS);
    await measure(shardwiseBytesOnly(origins), RECORDS);
    await measure(shardwisePreEncoded(origins), RECORDS);
    await measure(shardwiseOneByOne(origins), 5_000);
    const r = await interleaved({
      batched: [shardwiseBatched(origins), RECORDS],
      peer: [handWritten(origins), RECORDS],
      bytesOnly: [shardwiseBytesOnly(origins), RECORDS],
      preEncoded: [shardwisePreEncoded(origins), RECORDS],
      oneByOne: [shardwiseOneByOne(origins), ONE_BY_ONE],
    });
    const peer = r.peer!;
    const rows = [
      ['http.ingest, batches of 500 (objects, NDJSON)', r.batched!],
      ['hand-written loop over raw undici Pools (peer)', peer],
      ['http.ingest, batches of 500, keepRecords: false', r.bytesOnly!],
      ['http.ingest, batches of 500 (pre-encoded lines)', r.preEncoded!],
      ['core ingest, one record per run (sendTo)', r.oneByOne!],
    ] as const;
    printTable(
      ['contender', 'records/s', 'vs peer', 'client CPU ns/record', 'CPU vs peer'],
      rows.map(([name, x]) => [
        name,
        fmt(x.rate, 0),
        ratio(x.rate / peer.rate),
        fmt(x.cpuNs, 0),
        ratio(x.cpuNs / peer.cpuNs),
      ]),
    );
    const floor = r.batched!.rate / peer.rate;
    console.log(
      `\ngoals: http.ingest ≥ 0.95× the peer: ${ratio(floor)} ${goal(floor >= 0.95)}; ` +
        `≥ 1,000,000 records/s: ${fmt(r.batched!.rate, 0)} ${goal(r.batched!.rate >= 1_000_000)}; ` +
        `batched vs one record per run: ${ratio(r.batched!.rate / r.oneByOne!.rate)}`,
    );

    const e = encoders();
    console.log('');
    printTable(
      ['batch body of 500 records', 'ns/record', 'vs JSON.stringify + join'],
      [
        [
          'shape-compiled writer into bytes (shardwise)',
          fmt(e.shape, 0),
          ratio(e.shape / e.stringify),
        ],
        ['JSON.stringify per record, join, Buffer.from', fmt(e.stringify, 0), ratio(1)],
      ],
    );

    const before = await stats(child);
    const h = await heapRun(origins);
    const after = await stats(child);
    const requests =
      after.requests.reduce((a, b) => a + b, 0) - before.requests.reduce((a, b) => a + b, 0);
    console.log(
      `\n10,000,000 records through http.ingest: ${fmt(h.rate, 0)} records/s, ` +
        `peak heap ${fmt(h.peakMb, 0)} MB (${fmt(h.baseMb, 0)} MB before), ${requests} requests`,
    );
  } finally {
    child.disconnect();
  }
}

await main();
