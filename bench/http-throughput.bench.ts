/**
 * HTTP transport throughput and tail latency, one run, interleaved rounds, ratios against peers.
 *
 *   npx tsx bench/http-throughput.bench.ts
 *
 * 8 loopback shards in a child process (bench/http-fixtures/servers.mjs); 1 KiB POSTs at
 * concurrency 64, closed loop; every contender reads each response body in full.
 *
 * 1. Throughput (shards answer at once): createHttpBalancer (p2c, peakEwma) vs a hand-written
 *    round robin over 8 raw undici Pools (the limit; goal ≥ 0.97×) and undici BalancedPool
 *    (goal ≥ 1×), with the client's CPU per request beside each (steadier than req/s on a
 *    shared machine: the client is the bottleneck, so req/s follows it).
 * 2. One shard 10× slow (10 ms vs 1 ms): p99 of peakEwma vs round robin (goal ≤ 1/5), vs
 *    BalancedPool, which steers away from slow shards too (goal ≤ 1×: no worse), and vs
 *    peakEwma's own p99 with no slow shard (goal ≤ 1.3×).
 * 3. Keep-alive (pipelining 1) vs a new connection per request (pipelining 0): throughput ratio.
 *
 * A hand-rolled closed loop, not mitata: a concurrency-64 HTTP round is a macro benchmark whose
 * figures (req/s, p99) mitata's per-call timing does not give. Rounds are interleaved, their order
 * rotated each round; ratios are taken within a round (shardwise against its peer measured
 * minutes, not hours, apart) and printed as the median with the range over the rounds, so the
 * noise of a shared machine shows instead of hiding in a single figure.
 * `SHARDWISE_BENCH_ROUNDS` sets the rounds of section 1 (default 15, short ones: many pairs make a
 * steadier median than a few long rounds), sections 2 and 3 run 5. The figures of section 1 are
 * written to the table in docs/performance.md (bench/lib.ts `recordFigures`).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { BalancedPool, Pool } from 'undici';
import { createHttpBalancer } from '../src/http/index.js';
import { p2c, peakEwma } from '../src/pickers/index.js';
import {
  type FigureRow,
  machineLoad,
  ratioSpread,
  recordFigures,
  type Spread,
  spread,
} from './lib.js';

const SHARDS = 8;
const CONCURRENCY = 64;
const CONNECTIONS = 8;
const REQUESTS = 5_000;
/** Requests each contender sends before a measured round: connections open, EWMA sampled. */
const WARMUP = 1_000;
const ROUNDS = Number(process.env.SHARDWISE_BENCH_ROUNDS ?? 15);
const SHORT_ROUNDS = 5;
const BODY = Buffer.alloc(1024, 97);
const HEADERS = { 'content-type': 'application/octet-stream' };

interface Contender {
  name: string;
  /** Sends one request and reads its response in full. */
  send(): Promise<void>;
  close(): Promise<void>;
}

type Factory = () => Contender;

// ——— the shard process ———

function startShards(): Promise<{ child: ChildProcess; origins: string[] }> {
  const child = fork(new URL('./http-fixtures/servers.mjs', import.meta.url), [String(SHARDS)], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('message', (m: { type: string; ports: number[] }) => {
      resolve({ child, origins: m.ports.map((p) => `http://127.0.0.1:${p}`) });
    });
  });
}

function ask<T>(child: ChildProcess, message: object): Promise<T> {
  return new Promise((resolve) => {
    child.once('message', (m: T) => resolve(m));
    child.send(message);
  });
}

// ——— contenders ———

function shardwise(
  origins: string[],
  name: string,
  picker: 'p2c' | 'peakEwma',
  pipelining = 1,
): Factory {
  return () => {
    const http = createHttpBalancer({
      origins,
      picker: picker === 'p2c' ? p2c() : peakEwma(),
      connectionsPerShard: CONNECTIONS,
      pipelining,
      maxQueued: CONCURRENCY * 2,
    });
    return {
      name,
      async send() {
        const res = await http.request({
          method: 'POST',
          path: '/ingest',
          body: BODY,
          headers: HEADERS,
          idempotent: true,
        });
        if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
      },
      close: () => http.close(),
    };
  };
}

function rawRoundRobin(origins: string[]): Factory {
  return () => {
    const pools = origins.map((o) => new Pool(o, { connections: CONNECTIONS, pipelining: 1 }));
    let next = 0;
    return {
      name: 'raw undici RR (8 Pools)',
      async send() {
        const pool = pools[next]!;
        next = next + 1 === pools.length ? 0 : next + 1;
        const res = await pool.request({
          method: 'POST',
          path: '/ingest',
          body: BODY,
          headers: HEADERS,
        });
        await res.body.arrayBuffer();
        if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
      },
      close: async () => {
        await Promise.all(pools.map((p) => p.close()));
      },
    };
  };
}

function balancedPool(origins: string[]): Factory {
  return () => {
    const pool = new BalancedPool(origins, { connections: CONNECTIONS, pipelining: 1 });
    return {
      name: 'undici BalancedPool',
      async send() {
        const res = await pool.request({
          method: 'POST',
          path: '/ingest',
          body: BODY,
          headers: HEADERS,
        });
        await res.body.arrayBuffer();
        if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
      },
      close: () => pool.close(),
    };
  };
}

// ——— the loop ———

interface Result {
  rps: number;
  p50: number;
  p99: number;
  /** Client CPU (user + system) per request, µs: the transport's own cost, steadier than req/s on a shared machine. */
  cpuUs: number;
}

async function round(factory: Factory, total: number): Promise<Result> {
  const contender = factory();
  const latencies = new Float64Array(total);
  // Warm-up: open the connections and give peak EWMA its first samples.
  await drive(contender, WARMUP, undefined);
  const start = performance.now();
  const cpu0 = process.cpuUsage();
  await drive(contender, total, latencies);
  const cpu = process.cpuUsage(cpu0);
  const elapsed = performance.now() - start;
  await contender.close();
  latencies.sort();
  return {
    rps: (total / elapsed) * 1000,
    p50: latencies[Math.floor(total * 0.5)]!,
    p99: latencies[Math.floor(total * 0.99)]!,
    cpuUs: (cpu.user + cpu.system) / total,
  };
}

async function drive(contender: Contender, total: number, latencies: Float64Array | undefined) {
  let next = 0;
  const deadline = performance.now() + 60_000;
  const worker = async () => {
    while (next < total) {
      if (performance.now() > deadline) throw new Error('round took over 60 s');
      const i = next++;
      const t0 = performance.now();
      await contender.send();
      if (latencies !== undefined) latencies[i] = performance.now() - t0;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

interface Measured {
  /** Medians over the rounds. */
  median: Record<string, Result>;
  /** Each round's results, by contender. */
  rounds: Record<string, Result[]>;
}

/**
 * Runs every factory once per round, rounds interleaved and their order rotated (so no contender
 * always runs first, after a pause, or last); returns the medians and every round.
 */
async function interleaved(
  factories: Record<string, Factory>,
  total: number,
  count = ROUNDS,
): Promise<Measured> {
  const keys = Object.keys(factories);
  const rounds: Record<string, Result[]> = {};
  for (const key of keys) rounds[key] = [];
  for (let r = 0; r < count; r++) {
    for (let k = 0; k < keys.length; k++) {
      const key = keys[(r + k) % keys.length]!;
      rounds[key]!.push(await round(factories[key]!, total));
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const out: Record<string, Result> = {};
  for (const [key, rs] of Object.entries(rounds)) {
    out[key] = {
      rps: median(rs.map((x) => x.rps)),
      p50: median(rs.map((x) => x.p50)),
      p99: median(rs.map((x) => x.p99)),
      cpuUs: median(rs.map((x) => x.cpuUs)),
    };
  }
  return { median: out, rounds };
}

/** `a`'s figure over `b`'s, round by round (each pair measured in the same round). */
function perRound(m: Measured, a: string, b: string, figure: 'rps' | 'cpuUs' | 'p99'): Spread {
  const as = m.rounds[a]!;
  const bs = m.rounds[b]!;
  return spread(as.map((x, i) => x[figure] / bs[i]![figure]));
}

const fmt = (n: number, d = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

/** req/s, p50 and p99 cells of a result row. */
const latencyCells = (r: Result) => [fmt(r.rps), fmt(r.p50, 2), fmt(r.p99, 2)];
const row = (cells: string[]) => console.log(`| ${cells.join(' | ')} |`);

async function main() {
  const began = performance.now();
  const { child, origins } = await startShards();
  try {
    console.log(
      `node ${process.version}, ${SHARDS} loopback shards (child process), 1 KiB POSTs, concurrency ${CONCURRENCY}, ${CONNECTIONS} connections per shard, ${ROUNDS} interleaved rounds in section 1 (${SHORT_ROUNDS} in 2 and 3), medians; ${machineLoad()} at the start\n`,
    );

    // 1. Throughput.
    await ask(child, { type: 'delays', delays: new Array(SHARDS).fill(0) });
    const t = await interleaved(
      {
        p2c: shardwise(origins, 'shardwise p2c', 'p2c'),
        ewma: shardwise(origins, 'shardwise peakEwma', 'peakEwma'),
        raw: rawRoundRobin(origins),
        balanced: balancedPool(origins),
      },
      REQUESTS,
    );
    const tm = t.median;
    row([
      'throughput (shards answer at once)',
      'req/s',
      'p50 ms',
      'p99 ms',
      'req/s vs raw RR',
      'req/s vs BalancedPool',
      'client CPU µs/req',
      'CPU vs raw RR',
    ]);
    row(['---', '---:', '---:', '---:', '---:', '---:', '---:', '---:']);
    const names = {
      p2c: 'shardwise p2c',
      ewma: 'shardwise peakEwma',
      raw: 'raw undici RR (8 Pools)',
      balanced: 'undici BalancedPool',
    } as const;
    for (const key of ['p2c', 'ewma', 'raw', 'balanced'] as const) {
      const r = tm[key]!;
      row([
        names[key],
        ...latencyCells(r),
        ratioSpread(perRound(t, key, 'raw', 'rps'), 3),
        ratioSpread(perRound(t, key, 'balanced', 'rps'), 3),
        fmt(r.cpuUs, 1),
        ratioSpread(perRound(t, key, 'raw', 'cpuUs')),
      ]);
    }
    console.log(
      'goals: shardwise ≥ 0.97× raw RR and ≥ 1× BalancedPool in req/s (ratios: median of the rounds, range in brackets)\n',
    );
    const figures: FigureRow[] = [];
    for (const key of ['p2c', 'ewma'] as const) {
      const vsRaw = perRound(t, key, 'raw', 'rps');
      const vsBalanced = perRound(t, key, 'balanced', 'rps');
      figures.push(
        {
          figure: `${names[key]}, req/s (all shards equal)`,
          value: fmt(tm[key]!.rps),
          peer: `raw undici RR ${fmt(tm.raw!.rps)}`,
          ratio: ratioSpread(vsRaw, 3),
          goal: `≥ 0.97×: ${vsRaw.median >= 0.97 ? 'ok' : 'MISS'}`,
        },
        {
          figure: `${names[key]}, req/s (all shards equal)`,
          value: fmt(tm[key]!.rps),
          peer: `undici BalancedPool ${fmt(tm.balanced!.rps)}`,
          ratio: ratioSpread(vsBalanced, 3),
          goal: `≥ 1×: ${vsBalanced.median >= 1 ? 'ok' : 'MISS'}`,
        },
        {
          figure: `${names[key]}, client CPU µs per request`,
          value: fmt(tm[key]!.cpuUs, 1),
          peer: `raw undici RR ${fmt(tm.raw!.cpuUs, 1)}`,
          ratio: ratioSpread(perRound(t, key, 'raw', 'cpuUs')),
          goal: '(lower is better)',
        },
      );
    }

    // 2. One slow shard.
    const SLOW_REQUESTS = 10_000;
    await ask(child, { type: 'delays', delays: new Array(SHARDS).fill(1) });
    const even = (
      await interleaved(
        { ewma: shardwise(origins, 'peakEwma', 'peakEwma') },
        SLOW_REQUESTS,
        SHORT_ROUNDS,
      )
    ).median;
    const slowDelays = new Array(SHARDS).fill(1);
    slowDelays[SHARDS - 1] = 10;
    await ask(child, { type: 'delays', delays: slowDelays });
    const slow = await interleaved(
      {
        ewma: shardwise(origins, 'peakEwma', 'peakEwma'),
        raw: rawRoundRobin(origins),
        balanced: balancedPool(origins),
      },
      SLOW_REQUESTS,
      SHORT_ROUNDS,
    );
    const s = slow.median;
    row(['one shard 10× slow (10 ms vs 1 ms)', 'req/s', 'p50 ms', 'p99 ms', 'p99 ratio']);
    row(['---', '---:', '---:', '---:', '---']);
    const ew = s.ewma!;
    row(['shardwise peakEwma', ...latencyCells(ew), '1']);
    const vsRr = perRound(slow, 'ewma', 'raw', 'p99');
    const vsBp = perRound(slow, 'ewma', 'balanced', 'p99');
    row([
      'raw undici RR (8 Pools)',
      ...latencyCells(s.raw!),
      `peakEwma/RR = ${ratioSpread(vsRr, 3)} (goal ≤ 0.2)`,
    ]);
    row([
      'undici BalancedPool',
      ...latencyCells(s.balanced!),
      `peakEwma/BalancedPool = ${ratioSpread(vsBp, 3)} (goal ≤ 1)`,
    ]);
    row([
      'shardwise peakEwma, no slow shard',
      ...latencyCells(even.ewma!),
      `slow/none = ${fmt(ew.p99 / even.ewma!.p99, 3)} (goal ≤ 1.3)`,
    ]);
    console.log('');
    figures.push({
      figure: 'shardwise peakEwma, p99 ms with one shard 10× slow',
      value: fmt(ew.p99, 2),
      peer: `raw undici RR ${fmt(s.raw!.p99, 2)}`,
      ratio: ratioSpread(vsRr, 3),
      goal: `≤ 0.2×: ${vsRr.median <= 0.2 ? 'ok' : 'MISS'}`,
    });

    // 3. Keep-alive vs a new connection per request.
    const KA_REQUESTS = 5_000;
    await ask(child, { type: 'delays', delays: new Array(SHARDS).fill(0) });
    const before = await ask<{ connections: number[] }>(child, { type: 'stats' });
    const ka = await interleaved(
      {
        keep: shardwise(origins, 'keep-alive', 'p2c', 1),
        fresh: shardwise(origins, 'new connection', 'p2c', 0),
      },
      KA_REQUESTS,
      SHORT_ROUNDS,
    );
    const k = ka.median;
    const after = await ask<{ connections: number[] }>(child, { type: 'stats' });
    const opened =
      after.connections.reduce((a, b) => a + b, 0) - before.connections.reduce((a, b) => a + b, 0);
    row(['keep-alive vs new connection per request', 'req/s', 'p50 ms', 'p99 ms', 'ratio']);
    row(['---', '---:', '---:', '---:', '---:']);
    row([
      'shardwise p2c, keep-alive (pipelining 1)',
      ...latencyCells(k.keep!),
      ratioSpread(perRound(ka, 'keep', 'fresh', 'rps')),
    ]);
    row(['shardwise p2c, new connection (pipelining 0)', ...latencyCells(k.fresh!), '1×']);
    console.log(
      `connections opened during section 3: ${fmt(opened)} (for ${fmt(SHORT_ROUNDS * 2 * (KA_REQUESTS + WARMUP))} requests)`,
    );
    console.log(
      `\n${machineLoad()} at the end; total ${fmt((performance.now() - began) / 1000, 1)} s`,
    );
    recordFigures('http-throughput', figures);
  } finally {
    child.disconnect();
  }
}

await main();
