/**
 * Retries on a simulated fleet, on virtual time: 8 shards (a…h), every call takes 5 ms, shard
 * "h" fails half its calls. 100 000 idempotent runs arrive open-loop at 10 000 runs per virtual
 * second (5 every 0.5 ms; a step submits nothing while `maxQueued` runs already wait). Between
 * steps the `ManualClock` advances and microtasks flush, so the real `Balancer` runs unchanged.
 *
 * Three retry configurations × health off / on (default outlier ejection takes "h" out):
 *   retries off (`retry: false`) — the baseline of each set —, 3 attempts without a budget,
 *   3 attempts with the default budget (20 % of runs in the last 10 s + 10/s).
 *
 * Printed per configuration:
 *   success    = runs that resolved ÷ runs
 *   attempts   = Σ attempts on every shard ÷ runs   (1.00 = no extra calls)
 *   healthy x  = attempts on the 7 healthy shards ÷ (7/8 × runs)
 *                — their load relative to a fleet that spreads each run once, evenly, with no
 *                retries; 8/7 = 1.14× is the floor once "h" gets nothing (ejected).
 * Goal: success ≥ 99.9 % with attempts ≤ 1.25×.
 *
 * Run: npx tsx bench/retry-fleet.bench.ts   (or npm run bench retry-fleet)
 */
import { Balancer, type HealthOptions, p2c, type RetryOptions } from '../src/index.js';
import { ManualClock, seededRandom } from '../src/testing/index.js';
import { fmt, goal, nowNs, printHeader, printTable, ratio } from './lib.js';

const RUNS = 100_000;
const SHARD_IDS = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
const BAD = 'h';
const FAILURE_RATE = 0.5;
const LATENCY_MS = 5;
const STEP_MS = 0.5;
const RUNS_PER_STEP = 5;
const MAX_QUEUED = 1_000;
const SEED = 2024;

interface Config {
  retryLabel: string;
  retry: RetryOptions | false;
  healthLabel: string;
  health: HealthOptions | false;
  /** Failure rate of a shard's calls (default: "h" fails FAILURE_RATE, the others never). */
  failureRate?: (id: string) => number;
}

interface Outcome {
  ok: number;
  failed: number;
  attempts: number;
  healthyAttempts: number;
  badAttempts: number;
  retries: number;
  budgetRefused: number;
  ejections: number;
  deferredSteps: number;
  virtualMs: number;
  wallMs: number;
}

/** Lets every pending microtask run (promise chains settle before the next clock step). */
function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

async function simulate(config: Config): Promise<Outcome> {
  const started = nowNs();
  const clock = new ManualClock();
  const failRandom = seededRandom(SEED);
  const balancer = new Balancer({
    shards: SHARD_IDS.map((id) => ({ id, target: id })),
    picker: p2c(),
    clock,
    random: seededRandom(SEED + 1),
    maxQueued: MAX_QUEUED,
    retry: config.retry,
    health: config.health,
  });
  const call = (shard: { id: string }) =>
    new Promise<number>((resolve, reject) => {
      clock.setTimer(() => {
        const rate = config.failureRate?.(shard.id) ?? (shard.id === BAD ? FAILURE_RATE : 0);
        if (failRandom() < rate) reject(new Error('boom'));
        else resolve(1);
      }, LATENCY_MS);
    });
  let ok = 0;
  let failed = 0;
  let submitted = 0;
  let deferredSteps = 0;
  const onOk = () => {
    ok++;
  };
  const onFail = () => {
    failed++;
  };
  while (submitted < RUNS) {
    if (balancer.stats().queued >= MAX_QUEUED) deferredSteps++;
    else {
      for (let k = 0; k < RUNS_PER_STEP && submitted < RUNS; k++, submitted++) {
        balancer.run(call, { idempotent: true }).then(onOk, onFail);
      }
    }
    clock.advance(STEP_MS);
    await flush();
  }
  // Let backoffs and the last calls finish.
  while (ok + failed < RUNS) {
    if (!clock.runNext()) clock.advance(STEP_MS);
    await flush();
  }
  const stats = balancer.stats();
  let attempts = 0;
  let healthyAttempts = 0;
  let badAttempts = 0;
  let ejections = 0;
  for (const s of stats.shards) {
    attempts += s.requests;
    if (s.id === BAD) badAttempts += s.requests;
    else healthyAttempts += s.requests;
    ejections += s.ejections;
  }
  return {
    ok,
    failed,
    attempts,
    healthyAttempts,
    badAttempts,
    retries: stats.retries,
    budgetRefused: stats.budgetExhausted,
    ejections,
    deferredSteps,
    virtualMs: clock.now(),
    wallMs: (nowNs() - started) / 1e6,
  };
}

const RETRIES: Pick<Config, 'retryLabel' | 'retry'>[] = [
  { retryLabel: 'retries off', retry: false },
  { retryLabel: '3 attempts, no budget', retry: { attempts: 3, budget: false } },
  { retryLabel: '3 attempts, default budget', retry: { attempts: 3 } },
];
const HEALTHS: Pick<Config, 'healthLabel' | 'health'>[] = [
  { healthLabel: 'health off', health: false },
  { healthLabel: 'default health', health: {} },
];

printHeader(
  `retries on an 8-shard fleet, "${BAD}" fails ${FAILURE_RATE * 100} %: ${RUNS} idempotent runs, ${LATENCY_MS} ms calls, ${(RUNS_PER_STEP / STEP_MS) * 1000} runs/s virtual`,
);
const rows: string[][] = [];
for (const h of HEALTHS) {
  let baseline: Outcome | undefined;
  for (const r of RETRIES) {
    const o = await simulate({ ...h, ...r });
    baseline ??= o;
    const success = o.ok / RUNS;
    const attemptsPerRun = o.attempts / RUNS;
    const healthyExtra = o.healthyAttempts / ((RUNS * (SHARD_IDS.length - 1)) / SHARD_IDS.length);
    rows.push([
      `${h.healthLabel}, ${r.retryLabel}`,
      `${fmt(success * 100, 3)} %`,
      String(o.failed),
      ratio(attemptsPerRun, 3),
      ratio(healthyExtra, 3),
      String(o.badAttempts),
      String(o.retries),
      String(o.budgetRefused),
      String(o.ejections),
      ratio(o.healthyAttempts / baseline.healthyAttempts, 3),
      goal(success >= 0.999 && attemptsPerRun <= 1.25),
      `${fmt(o.virtualMs / 1000, 1)} s / ${fmt(o.wallMs / 1000, 1)} s`,
    ]);
  }
}
printTable(
  [
    'configuration',
    'success',
    'failed runs',
    'attempts/run',
    'healthy x',
    `"${BAD}" attempts`,
    'retries',
    'budget refused',
    'ejections',
    'healthy vs retries off',
    'goal',
    'virtual / wall',
  ],
  rows,
);
console.log(
  `\nhealthy x = attempts on the ${SHARD_IDS.length - 1} healthy shards ÷ (${SHARD_IDS.length - 1}/${SHARD_IDS.length} × runs); healthy vs retries off = the same attempts ÷ those of the set's retries-off run.`,
);
console.log('goal: success ≥ 99.9 % with attempts/run ≤ 1.25×.');

// The budget's job: when the whole fleet degrades, retries must not multiply the load. Every
// shard fails 40 % of calls (health off, so nothing is ejected): without a budget each run makes
// 1 + 0.4 + 0.16 = 1.56 attempts; with it, retries stay within 20 % of runs (+ 10/s).
printHeader('a degraded fleet: every shard fails 40 % (health off), 3 attempts per run');
const outage: string[][] = [];
for (const r of RETRIES) {
  const o = await simulate({
    ...r,
    healthLabel: 'health off',
    health: false,
    failureRate: () => 0.4,
  });
  outage.push([
    r.retryLabel,
    `${fmt((o.ok / RUNS) * 100, 2)} %`,
    ratio(o.attempts / RUNS, 3),
    String(o.retries),
    String(o.budgetRefused),
    ratio(o.retries / RUNS, 3),
  ]);
}
printTable(
  ['retries', 'success', 'attempts/run', 'retries', 'budget refused', 'retries/run'],
  outage,
);
console.log('budget bound: retries ≤ 0.2 × runs + 10/s × virtual seconds ≈ 0.2 × runs + 100');
