/**
 * What the options-bag shape check costs on `run()`'s path: `checkObject` (a plain object: type,
 * not an array, prototype `Object.prototype` or null) against the check it replaced (type and
 * not an array only), both on the same plain `{ key, idempotent }` bag, 1 000 000 calls per
 * sample, interleaved, medians. Then `run(task, { key, idempotent })` against `run(task)` with no
 * options, in batches of 10 000: the whole cost of reading a run's options, in context.
 *
 * Run: node --expose-gc --import tsx bench/input-checks.bench.ts   (or npm run bench input-checks)
 */

import { checkObject } from '../src/base/validate.js';
import { Balancer, p2c } from '../src/index.js';
import { fmt, median, nowNs, printHeader, printTable, ratio } from './lib.js';

const CALLS = 1_000_000;
const ROUNDS = 15;
const WARMUP = 3;
const BATCH = 10_000;

/** The check `checkObject` made before it required a plain object (the baseline). */
function previousCheck(field: string, value: unknown): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError(`${field} must be an object`);
  }
}

const bags = Array.from({ length: 64 }, (_, i) => ({ key: `k${i}`, idempotent: true }));

function nsPerCheck(check: (field: string, value: unknown) => void): number {
  const t0 = nowNs();
  for (let i = 0; i < CALLS; i++) check('run options', bags[i & 63]);
  return (nowNs() - t0) / CALLS;
}

const balancer = new Balancer({
  shards: Array.from({ length: 8 }, (_, i) => ({ id: `s${i}`, target: i })),
  picker: p2c(),
  maxInFlightPerShard: 100_000,
  maxQueued: 2 * BATCH,
  retry: false,
  health: false,
});
const task = async () => 1;

async function usPerRun(withOptions: boolean): Promise<number> {
  const all = new Array<Promise<number>>(BATCH);
  const t0 = nowNs();
  for (let i = 0; i < BATCH; i++) {
    all[i] = withOptions ? balancer.run(task, bags[i & 63]) : balancer.run(task);
  }
  await Promise.all(all);
  return (nowNs() - t0) / BATCH / 1000;
}

printHeader(`options-bag shape check: ${CALLS} checks and ${BATCH}-run batches, ${ROUNDS} rounds`);
const checks: [number[], number[]] = [[], []];
const runs: [number[], number[]] = [[], []];
for (let round = 0; round < WARMUP + ROUNDS; round++) {
  const flip = round % 2 === 1;
  const a = flip ? nsPerCheck(previousCheck) : nsPerCheck(checkObject);
  const b = flip ? nsPerCheck(checkObject) : nsPerCheck(previousCheck);
  const c = flip ? await usPerRun(false) : await usPerRun(true);
  const d = flip ? await usPerRun(true) : await usPerRun(false);
  if (round < WARMUP) continue;
  checks[0].push(flip ? b : a);
  checks[1].push(flip ? a : b);
  runs[0].push(flip ? d : c);
  runs[1].push(flip ? c : d);
}
const checkRatio = median(checks[0].map((v, i) => v / checks[1][i]!));
const runRatio = median(runs[0].map((v, i) => v / runs[1][i]!));
printTable(
  ['case', 'measured', 'peer (same run)', 'ratio'],
  [
    [
      'checkObject (plain object) vs previous check',
      `${fmt(median(checks[0]), 2)} ns`,
      `${fmt(median(checks[1]), 2)} ns`,
      ratio(checkRatio),
    ],
    [
      'run(task, { key, idempotent }) vs run(task)',
      `${fmt(median(runs[0]), 3)} µs`,
      `${fmt(median(runs[1]), 3)} µs`,
      ratio(runRatio),
    ],
  ],
);
console.log('\n(ratios: medians of per-round ratios; order flipped each round)');
await balancer.close();
