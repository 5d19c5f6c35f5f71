/**
 * Adaptive concurrency limits, new defaults beside the old, in three tables (one run):
 *
 * 1. Where `gradient()` settles against one shard that serves N = 4, 10, 40 calls at once
 *    (10 ms each, a FIFO queue for the rest) with 64 callers, on the simulator (virtual time,
 *    seeded: the same figures on every machine). Goal: the median within ±30 % of N, and every
 *    sample of the last half within ±30 % (the swing).
 * 2. The same against a real `node:http` shard on loopback, in a child process
 *    (bench/http-fixtures/capacity-shards.mjs), 50 samples of the limit 100 ms apart. Wall time:
 *    the machine's load (printed) moves these figures; a loaded client cannot reach N = 40's
 *    4 000 calls/s, and its own delays then read as a queue. So the table starts with fixed(N),
 *    exactly N in flight, measured in the same run: each limit's calls/s is also given against
 *    it (a limit below N at fixed(N)'s calls/s lost nothing the machine could deliver).
 * 3. A fleet (below), p99 against the ideal, as before.
 *
 * "Old defaults" is the gradient limit as it was before this change (bench/legacy-gradient.ts),
 * run in the same process.
 *
 * Fleet: 8 shards (a…h), each serving 8 calls at once in 10 ms (a FIFO queue for the rest, whose
 * wait counts in the latency): 800 calls/s a shard, 6 400 calls/s in all. Shard "h" drops to 2 calls
 * at once (25 %) from t = 2 s to t = 6 s. 80 000 runs arrive open-loop (Poisson) at 1.5 × the fleet's
 * capacity, 9 600/s, so the run lasts ≈ 8.3 virtual s and covers the drop and the recovery (40 000
 * runs would end at ≈ 4.2 s, before "h" recovers).
 *
 * An open loop at 1.5 × capacity queues without bound, so the balancer sheds: `maxQueued: 16,
 * overflow: 'reject'` (a full queue of 16 waits ≈ 2.5 ms at 6 400/s). Shed runs are counted, not
 * timed; latency is end to end (admission to settlement: queue wait + shard queue + service) over
 * the runs that completed. Retries are off (nothing fails but sheds).
 *
 * Printed per configuration:
 *   goodput     = completed runs ÷ virtual seconds from the start to the last settlement
 *   × capacity  = goodput ÷ 6 400/s (nominal fleet capacity)
 *   × available = goodput ÷ the capacity actually there, averaged over the run (h at 25 % for 4 s)
 *   p99         = 99th percentile (nearest rank) of completed runs' latency, virtual ms
 *   p99 ×       = p99 ÷ unloaded p99 (a light run: 10 % of capacity, no drop, fixed 64)
 *   h limit     = mean of h's limit (from `limit` events, time-weighted) while it is at 25 %
 * Goal: goodput ≥ 0.9 × capacity AND p99 ≤ 2 × unloaded p99.
 *
 * This drives the real `Balancer` on a `ManualClock` with its own small shard model rather than
 * `simulate()`: `simulate()` times shed runs too (as 0 ms) and reports 200 CDF points, from which
 * the p99 of completed runs can only be bracketed.
 *
 * Run: node --expose-gc --import tsx bench/adaptive.bench.ts   (or npm run bench adaptive)
 */
import { loadavg } from 'node:os';
import { Balancer, type LimitFactory } from '../src/index.js';
import { aimd, fixed, gradient } from '../src/limits/index.js';
import { ManualClock, seededRandom } from '../src/testing/index.js';
import {
  CALLERS,
  SERVICE_MS,
  type Settled,
  settleReal,
  settleSimulated,
  startCapacityShards,
} from './adaptive-settle.js';
import { legacyGradient } from './legacy-gradient.js';
import { fmt, goal, printHeader, printTable, ratio } from './lib.js';

const SHARD_IDS = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
const CAPACITY = 8;
const LATENCY_MS = 10;
const FLEET_RATE = (SHARD_IDS.length * CAPACITY * 1000) / LATENCY_MS; // 6 400 calls/s
const DROP = { id: 'h', capacity: 2, fromMs: 2_000, toMs: 6_000 };
const RUNS = 80_000;
const MAX_QUEUED = 16;
const SEED = 11;

/** A server: `capacity` calls served at once for LATENCY_MS each, the rest wait in FIFO order. */
class SimShard {
  busy = 0;
  readonly waiting: Array<() => void> = [];
  constructor(
    readonly clock: ManualClock,
    public capacity: number,
  ) {}

  call(): Promise<void> {
    return new Promise<void>((resolve) => {
      const serve = () => {
        this.busy++;
        this.clock.setTimer(() => {
          this.busy--;
          resolve();
          this.startWaiting();
        }, LATENCY_MS);
      };
      if (this.busy < this.capacity) serve();
      else this.waiting.push(serve);
    });
  }

  setCapacity(capacity: number): void {
    this.capacity = capacity;
    this.startWaiting();
  }

  private startWaiting(): void {
    while (this.busy < this.capacity && this.waiting.length > 0) this.waiting.shift()!();
  }
}

interface Outcome {
  completed: number;
  shed: number;
  durationMs: number;
  p99: number;
  /** Time-weighted mean of h's limit while it is at 25 % (NaN for a plain number). */
  hLimit: number;
}

async function run(
  limit: number | LimitFactory,
  rate: number,
  runs: number,
  drop: boolean,
): Promise<Outcome> {
  const clock = new ManualClock();
  const sims = SHARD_IDS.map(() => new SimShard(clock, CAPACITY));
  const balancer = new Balancer<SimShard>({
    shards: SHARD_IDS.map((id, i) => ({ id, target: sims[i]! })),
    maxInFlightPerShard: limit,
    maxQueued: MAX_QUEUED,
    overflow: 'reject',
    retry: false,
    clock,
    random: seededRandom(SEED),
  });
  const h = sims[SHARD_IDS.indexOf(DROP.id)]!;
  if (drop) {
    clock.setTimer(() => h.setCapacity(DROP.capacity), DROP.fromMs);
    clock.setTimer(() => h.setCapacity(CAPACITY), DROP.toMs);
  }
  // h's limit over the drop, integrated from `limit` events.
  let hLimit = balancer.stats().shards.find((s) => s.id === DROP.id)!.limit;
  let hArea = 0;
  let hSince = DROP.fromMs;
  const account = (untilMs: number) => {
    const from = Math.max(hSince, DROP.fromMs);
    const to = Math.min(untilMs, DROP.toMs);
    if (to > from) hArea += hLimit * (to - from);
    hSince = untilMs;
  };
  balancer.on('limit', ({ shardId, limit: next }) => {
    if (shardId !== DROP.id) return;
    account(clock.now());
    hLimit = next;
  });

  const latencies = new Float64Array(runs);
  let completed = 0;
  let settled = 0;
  let shed = 0;
  const call = (shard: { target: SimShard }) => shard.target.call();
  const arrivals = seededRandom(SEED + 1);
  const meanGapMs = 1000 / rate;
  let issued = 0;
  let nextAt = 0;
  const arrive = () => {
    issued++;
    const admittedMs = clock.now();
    balancer.run(call).then(
      () => {
        latencies[completed++] = clock.now() - admittedMs;
        settled++;
      },
      () => {
        shed++;
        settled++;
      },
    );
    if (issued < runs) {
      nextAt += -meanGapMs * Math.log(1 - arrivals());
      clock.setTimer(arrive, nextAt - clock.now());
    }
  };
  clock.setTimer(arrive, 0);
  // Let every promise reaction at this instant run, then move to the next timer.
  for (;;) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (settled >= runs) break;
    const next = clock.nextTimerAt();
    if (next === undefined) throw new Error(`stalled at ${clock.now()} ms`);
    clock.advanceTo(next);
  }
  const durationMs = clock.now();
  account(durationMs);
  const done = latencies.subarray(0, completed).sort();
  return {
    completed,
    shed,
    durationMs,
    p99: done[Math.max(0, Math.ceil(0.99 * completed) - 1)]!,
    hLimit: typeof limit === 'number' ? Number.NaN : hArea / (DROP.toMs - DROP.fromMs),
  };
}

/** Mean capacity over [0, durationMs] with h at 25 % during the drop. */
function availableRate(durationMs: number): number {
  const lost = (CAPACITY - DROP.capacity) * (1000 / LATENCY_MS);
  const dropMs = Math.max(0, Math.min(durationMs, DROP.toMs) - DROP.fromMs);
  return FLEET_RATE - (lost * dropMs) / durationMs;
}

const CONFIGS: Array<{ name: string; limit: number | LimitFactory }> = [
  { name: 'fixed 4 (low)', limit: 4 },
  { name: 'fixed 8 (= capacity)', limit: fixed(8) },
  { name: 'fixed 64 (high)', limit: 64 },
  { name: 'aimd timeout 15 ms', limit: aimd({ initial: 8, max: 64, timeoutMs: 15 }) },
  {
    name: 'aimd timeout 15 ms, ×0.98',
    limit: aimd({ initial: 8, max: 64, timeoutMs: 15, backoffRatio: 0.98 }),
  },
  // The old gradient settled a saturated shard at ≈ tolerance × capacity + queueSize in flight:
  // RTT ≈ (tolerance + queueSize / capacity) × 10 ms, before the balancer's queue.
  { name: 'old gradient defaults (1.5, 4)', limit: legacyGradient({ initial: 8, max: 64 }) },
  {
    name: 'old gradient tol 1.25, queue 1',
    limit: legacyGradient({ initial: 8, max: 64, tolerance: 1.25, queueSize: 1 }),
  },
  {
    name: 'old gradient tol 1.1, queue 0.5',
    limit: legacyGradient({ initial: 8, max: 64, tolerance: 1.1, queueSize: 0.5 }),
  },
  { name: 'gradient() defaults', limit: gradient() },
  { name: 'gradient({ initial: 8, max: 64 })', limit: gradient({ initial: 8, max: 64 }) },
];

// ——— 1 and 2: where gradient() settles against one shard ———

const CAPACITIES = [4, 10, 40];
const LIMITS: Array<{ name: string; limit: LimitFactory }> = [
  { name: 'gradient() defaults', limit: gradient() },
  { name: 'old gradient defaults', limit: legacyGradient() },
];

function settleRow(name: string, n: number, s: Settled): string[] {
  const inBand = (x: number) => x >= 0.7 * n && x <= 1.3 * n;
  return [
    name,
    String(n),
    fmt(s.median),
    ratio(s.median / n),
    `${s.min}–${s.max}`,
    fmt(s.rate, 0),
    fmt(s.p99),
    goal(inBand(s.median) && inBand(s.min) && inBand(s.max)),
  ];
}
const SETTLE_HEADERS = ['limit', 'N', 'settled', '× N', 'swing', 'calls/s', 'p99 ms', 'goal'];

printHeader(
  `adaptive limits: settled limit vs a shard serving N at once (${SERVICE_MS} ms each), ${CALLERS} callers — simulated`,
);
const simRows: string[][] = [];
for (const { name, limit } of LIMITS) {
  for (const n of CAPACITIES) simRows.push(settleRow(name, n, await settleSimulated(limit, n)));
}
printTable(SETTLE_HEADERS, simRows);

printHeader(
  `adaptive limits: settled limit vs a real node:http shard serving N at once, ${CALLERS} callers`,
);
console.log(`machine load (1 min) before: ${fmt(loadavg()[0]!, 2)}`);
const shards = await startCapacityShards(CAPACITIES);
const realRows: string[][] = [];
// The reference: exactly N in flight (fixed(N)), what this machine serves at the shard's
// capacity in this run. A limit that settles below N on a loaded machine, at the calls/s that
// fixed(N) reaches, found the machine's capacity rather than missed the shard's.
const reference: number[] = [];
for (let i = 0; i < CAPACITIES.length; i++) {
  const n = CAPACITIES[i]!;
  const s = await settleReal(fixed(n), shards.origins[i]!);
  reference.push(s.rate);
  realRows.push([...settleRow(`fixed(${n}) (reference)`, n, s).slice(0, -1), '1.00×', '']);
}
for (const { name, limit } of LIMITS) {
  for (let i = 0; i < CAPACITIES.length; i++) {
    const n = CAPACITIES[i]!;
    const s = await settleReal(limit, shards.origins[i]!);
    const row = settleRow(name, n, s);
    realRows.push([...row.slice(0, -1), ratio(s.rate / reference[i]!), row.at(-1)!]);
  }
}
shards.child.disconnect();
printTable([...SETTLE_HEADERS.slice(0, -1), 'calls/s vs fixed(N)', 'goal'], realRows);
console.log(`machine load (1 min) after: ${fmt(loadavg()[0]!, 2)}`);

// ——— 3: the fleet ———

printHeader(
  `adaptive limits: ${SHARD_IDS.length} shards × ${CAPACITY} × ${LATENCY_MS} ms, ${RUNS} runs at 1.5× capacity, "${DROP.id}" at 25 % for 2–6 s`,
);
const unloaded = await run(64, 0.1 * FLEET_RATE, 5_000, false);
console.log(
  `unloaded (10 % of capacity, no drop, fixed 64): p99 ${fmt(unloaded.p99)} ms; maxQueued ${MAX_QUEUED}, overflow 'reject'`,
);
const rows: string[][] = [];
for (const { name, limit } of CONFIGS) {
  const o = await run(limit, 1.5 * FLEET_RATE, RUNS, true);
  const goodput = (o.completed / o.durationMs) * 1000;
  const ofCapacity = goodput / FLEET_RATE;
  const p99x = o.p99 / unloaded.p99;
  rows.push([
    name,
    fmt(goodput, 0),
    fmt(ofCapacity, 3),
    fmt(goodput / availableRate(o.durationMs), 3),
    `${fmt((o.shed / RUNS) * 100)} %`,
    fmt(o.p99),
    ratio(p99x),
    Number.isNaN(o.hLimit) ? '-' : fmt(o.hLimit),
    goal(ofCapacity >= 0.9 && p99x <= 2),
  ]);
}
printTable(
  ['limit', 'goodput/s', '× capacity', '× available', 'shed', 'p99 ms', 'p99 ×', 'h limit', 'goal'],
  rows,
);
