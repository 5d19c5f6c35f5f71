/**
 * What a DNS refresh that moves weights costs the event loop, with SRV weights as DNS gives them
 * against the watch's scaling (`scaleWeights`: weights summing past `DNS_WEIGHT_TOTAL` scaled to
 * it, ratios kept). A reweight storm: every refresh moves every weight, and the balancer (a ring,
 * `consistentHash({ vnodes: 160 })`, the only picker whose rebuild grows with the weights) takes
 * the new set through `setShards`, one refresh per macrotask, as the watch applies it. A timer
 * probe (a 1 ms interval) measures the event loop's lag: the longest gap between its ticks, less
 * the 1 ms. The goal: at most ~50 ms a refresh with the scaling, for any answer a DNS message can
 * carry (~3 000 SRV records) — judged on the median, as on a shared machine the scheduler alone
 * stalls a process now and then (the first row: the probe with nothing to do).
 *
 * Run: node --expose-gc --import tsx bench/dns-reweight.bench.ts   (or npm run bench dns-reweight)
 */
import os from 'node:os';
import { scaleWeights } from '../src/dns/weights.js';
import { Balancer, consistentHash } from '../src/index.js';
import { collectGarbage, fmt, goal, median, printHeader, printTable, ratio } from './lib.js';

const REFRESHES = 6;
const GOAL_MS = 50;

interface Storm {
  /** Points of the ring after each refresh. */
  points: number[];
  /** Event-loop lag around each refresh, ms. */
  lagMs: number[];
  refused: boolean;
}

/** The SRV weights of refresh `step`: every one moves. */
type Answer = (step: number) => number[];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The longest gap between the ticks of a 1 ms interval while `work` runs, less the 1 ms. */
async function lagAround(work: () => void): Promise<number> {
  let last = performance.now();
  let worst = 0;
  const probe = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 1);
  await sleep(5);
  setImmediate(work);
  await sleep(30);
  clearInterval(probe);
  return Math.max(0, worst - 1);
}

async function storm(answer: Answer, scaled: boolean): Promise<Storm> {
  const n = answer(0).length;
  const specsAt = (step: number) => {
    const records = answer(step).map((dnsWeight) => ({ dnsWeight, weight: dnsWeight }));
    if (scaled) scaleWeights(records);
    return records.map((r, i) => ({
      id: `10.0.${i >> 8}.${i & 255}:9000`,
      target: `t${i}`,
      weight: r.weight,
    }));
  };
  const picker = consistentHash({ vnodes: 160 });
  const balancer = new Balancer<string>({ shards: [{ id: 'seed', target: 'seed' }], picker });
  const result: Storm = { points: [], lagMs: [], refused: false };
  for (let step = 0; step <= REFRESHES; step++) {
    const specs = specsAt(step);
    collectGarbage();
    const lag = await lagAround(() => {
      try {
        void balancer.setShards(specs);
      } catch {
        result.refused = true; // the ring refused the weights: the watch would retry for ever
      }
    });
    if (result.refused) break;
    // The first refresh installs the fleet; the storm is the ones that only move weights.
    if (step > 0) {
      result.lagMs.push(lag);
      result.points.push(picker.describe().points ?? 0);
    }
  }
  await balancer.close();
  if (n !== balancer.shards.length && !result.refused) throw new Error('not applied');
  return result;
}

const scenarios: [string, Answer][] = [
  // Σ ≈ 62 000 × 160 = 9.9 M points as given: just under the ring's bound of 10 M.
  [
    '20 SRV records, weights ~3 100',
    (step) => Array.from({ length: 20 }, (_, i) => 3_100 - step * (i + 1)),
  ],
  [
    '1 000 SRV records, weight 1',
    (step) => Array.from({ length: 1_000 }, (_, i) => (i === step ? 2 : 1)),
  ],
  [
    '3 000 SRV records, weight 1',
    (step) => Array.from({ length: 3_000 }, (_, i) => (i === step ? 2 : 1)),
  ],
  [
    '3 000 SRV records, weights 1–65 535',
    (step) => Array.from({ length: 3_000 }, (_, i) => 1 + ((i * 7_919 + step * 31) % 65_535)),
  ],
];

printHeader(
  `DNS reweight storm: event-loop lag per refresh, ring with 160 vnodes; load average ${fmt(os.loadavg()[0]!, 1)} on ${os.cpus().length} cores`,
);
const rows: string[][] = [];
// The floor: the probe's own lag with nothing to do (on a shared machine, the scheduler's).
const idle: number[] = [];
for (let i = 0; i < REFRESHES; i++) idle.push(await lagAround(() => {}));
rows.push([
  '(nothing: the probe alone)',
  '-',
  '-',
  '-',
  `${fmt(median(idle), 1)} (max ${fmt(Math.max(...idle), 1)})`,
  '-',
  '-',
]);
for (const [name, answer] of scenarios) {
  const scaled = await storm(answer, true);
  const given = await storm(answer, false);
  const lagGiven = median(given.lagMs);
  const lagScaled = median(scaled.lagMs);
  const worst = Math.max(...scaled.lagMs);
  rows.push([
    name,
    given.refused ? 'refused' : `${Math.max(...given.points)}`,
    given.refused
      ? 'never applied'
      : `${fmt(lagGiven, 1)} (max ${fmt(Math.max(...given.lagMs), 1)})`,
    `${Math.max(...scaled.points)}`,
    `${fmt(lagScaled, 1)} (max ${fmt(worst, 1)})`,
    given.refused ? '-' : ratio(lagGiven / lagScaled, 1),
    `${goal(lagScaled <= GOAL_MS)}`,
  ]);
}
printTable(
  [
    'answer (every weight moves each refresh)',
    'points, as given',
    'lag ms, as given',
    'points, scaled',
    'lag ms, scaled',
    'as given / scaled',
    `median ≤ ${GOAL_MS} ms`,
  ],
  rows,
);
