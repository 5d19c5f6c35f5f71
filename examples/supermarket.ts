/**
 * Reproduces a published result with the testing kit: Mitzenmacher's supermarket model.
 *
 * n servers, each serving one customer at a time with exponential service of mean 1; customers
 * arrive as a Poisson process of rate λn; each samples d servers uniformly and joins the shortest
 * queue. For d = 1 every queue is an M/M/1 queue and a customer spends T = 1 / (1 − λ) in the
 * system. For d ≥ 2, as n → ∞, the fraction of queues holding at least i customers is
 * s_i = λ^((d^i − 1)/(d − 1)) and the expected time in the system is
 * T_d(λ) = Σ_{i≥1} λ^((d^i − d)/(d − 1)): doubly exponential tails, and with d = 2 an
 * exponential improvement over d = 1 (M. Mitzenmacher, "The Power of Two Choices in Randomized
 * Load Balancing", IEEE Trans. Parallel and Distributed Systems 12(10), 2001, section 3).
 *
 * Here: 100 simulated shards of capacity 1 with `exponential(10)` service (10 virtual ms is the
 * unit), open-loop Poisson arrivals, `random()` for d = 1 and `p2c()` for d = 2 (two distinct
 * shards, the one with fewer in flight: the balancer counts a call in flight from the pick to its
 * answer, queue wait included, so that is the queue length). No in-flight cap, so the balancer
 * never holds a customer back. The warm-up is left out, since the queues start empty.
 *
 * Run it: `npx tsx examples/supermarket.ts` (about a minute: 12 simulations of 100 000 customers
 * after a warm-up). `test/testing/supermarket.test.ts` in the repository runs a small version and
 * checks it against the formula.
 */
import { pathToFileURL } from 'node:url';
import { type Picker, p2c, random } from 'shardwise';
import { exponential, simulate } from 'shardwise/testing';

/** Mean service time of a shard, virtual ms: the model's unit of time. */
export const SERVICE_MS = 10;

/** Expected time in the system, in service times: 1/(1 − λ) for d = 1, Mitzenmacher's T_d(λ) for d ≥ 2. */
export function expectedSojourn(d: number, lambda: number): number {
  if (d === 1) return 1 / (1 - lambda);
  let total = 0;
  for (let i = 1; ; i++) {
    const term = lambda ** ((d ** i - d) / (d - 1));
    total += term;
    if (term < 1e-12) return total;
  }
}

/** One point of the model: the formula beside the simulated figures. */
export interface SupermarketPoint {
  d: 1 | 2;
  lambda: number;
  /** Expected time in the system (formula), in service times. */
  sojourn: number;
  /** Mean time in the system of the measured customers (simulated), in service times. */
  simulatedSojourn: number;
  /** Expected customers per queue (formula, by Little's law λT). */
  queue: number;
  /** Customers per queue, averaged over shards and time while customers arrived (simulated). */
  simulatedQueue: number;
  /** Customers left out as warm-up. */
  warmup: number;
}

/** Options of {@link supermarket}. */
export interface SupermarketOptions {
  d: 1 | 2;
  lambda: number;
  /** Servers (default 100). */
  shards?: number;
  /** Customers measured (default 100 000). */
  requests?: number;
  /** Warm-up, in service times (default 200). */
  warmupUnits?: number;
  seed?: number;
}

/** Simulates the supermarket model at one (d, λ) and sets the formula beside it. */
export async function supermarket(options: SupermarketOptions): Promise<SupermarketPoint> {
  const { d, lambda } = options;
  const n = options.shards ?? 100;
  const requests = options.requests ?? 100_000;
  const picker: () => Picker = d === 1 ? random : p2c;
  const rate = (lambda * n * 1000) / SERVICE_MS; // customers per virtual second
  const result = await simulate({
    picker,
    balancerOptions: { maxInFlightPerShard: Number.POSITIVE_INFINITY, retry: false, health: false },
    shards: Array.from({ length: n }, (_, i) => ({
      id: `server-${i}`,
      latency: exponential(SERVICE_MS),
      capacity: 1,
    })),
    arrivals: { rate },
    requests,
    warmupMs: (options.warmupUnits ?? 200) * SERVICE_MS,
    sampleEveryMs: SERVICE_MS,
    seed: options.seed ?? 1,
  });
  // Queue length: the in-flight series averaged over the window customers were measured in,
  // from the warm-up's end until the last arrival (expected at requests / rate later); after it
  // the queues drain and would pull the average down.
  const from = result.warmup.ms;
  const to = from + (requests * 1000) / rate;
  let sum = 0;
  let samples = 0;
  result.series.t.forEach((t, k) => {
    if (t < from || t > to) return;
    for (const column of Object.values(result.series.inFlight)) {
      sum += column[k]!;
      samples++;
    }
  });
  const sojourn = expectedSojourn(d, lambda);
  return {
    d,
    lambda,
    sojourn,
    simulatedSojourn: result.latency.mean / SERVICE_MS,
    queue: lambda * sojourn,
    simulatedQueue: samples === 0 ? 0 : sum / samples,
    warmup: result.warmup.requests,
  };
}

/** Every point of the reproduction: d = 1 and 2, λ = 0.5 … 0.95. */
export async function main(options: { requests?: number; seed?: number } = {}) {
  const points: SupermarketPoint[] = [];
  for (const d of [1, 2] as const) {
    for (const lambda of [0.5, 0.6, 0.7, 0.8, 0.9, 0.95]) {
      points.push(await supermarket({ ...options, d, lambda }));
    }
  }
  return points;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const pct = (simulated: number, formula: number) =>
    `${((simulated / formula - 1) * 100).toFixed(1).padStart(5)} %`;
  console.log(' d     λ   T formula  T simulated   error   L formula  L simulated   error');
  for (const p of await main()) {
    console.log(
      `${String(p.d).padStart(2)}  ${p.lambda.toFixed(2)}  ${p.sojourn.toFixed(3).padStart(9)}` +
        `  ${p.simulatedSojourn.toFixed(3).padStart(11)}  ${pct(p.simulatedSojourn, p.sojourn)}` +
        `  ${p.queue.toFixed(3).padStart(9)}  ${p.simulatedQueue.toFixed(3).padStart(11)}` +
        `  ${pct(p.simulatedQueue, p.queue)}`,
    );
  }
}
