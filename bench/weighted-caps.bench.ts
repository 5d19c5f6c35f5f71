/**
 * Weights mean capacity at saturation: four shards weighted 2/1/1/1, each serving anything it is
 * given in 10 ms, 128 closed-loop callers, a cap of 16 (virtual time, seeded). For each picker:
 * the share of the work each shard took with weighted caps (26/13/13/13, the rule
 * `max(1, round(cap × weight / mean weight))`) against the peer run in the same process with the
 * caps left at 16 each (a `ConcurrencyLimit` of our own, which the balancer does not scale) —
 * what every picker gave before the caps scaled. The goal: the weight-2 shard takes 2/5 of the
 * work (within 10 %) with every picker.
 *
 * Run: node --expose-gc --import tsx bench/weighted-caps.bench.ts   (or npm run bench weighted-caps)
 */

import type { Picker } from '../src/base/types.js';
import type { ConcurrencyLimit } from '../src/limits/index.js';
import { leastInFlight, p2c, peakEwma, roundRobin } from '../src/pickers/index.js';
import { simulate } from '../src/testing/index.js';
import { fmt, goal, printHeader, printTable, ratio } from './lib.js';

const WEIGHTS = [2, 1, 1, 1];
const CAP = 16;

/** The same cap on every shard, never scaled: one limit object per shard (through `clone()`). */
const unscaled = (): ConcurrencyLimit & { clone(): ConcurrencyLimit } => ({
  limit: CAP,
  onSample() {},
  clone: unscaled,
});

async function shares(picker: () => Picker, weighted: boolean): Promise<number[]> {
  const result = await simulate({
    picker,
    balancerOptions: { maxInFlightPerShard: weighted ? CAP : unscaled() },
    shards: WEIGHTS.map((weight, i) => ({ id: `s${i}`, weight, latency: 10 })),
    concurrency: 128,
    requests: 50_000,
    warmupRequests: 2_000,
    seed: 5,
  });
  const total = result.perShard.reduce((sum, s) => sum + s.requests, 0);
  return result.perShard.map((s) => s.requests / total);
}

const pickers: [string, () => Picker][] = [
  ['p2c', () => p2c()],
  ['peakEwma', () => peakEwma()],
  ['roundRobin', () => roundRobin()],
  ['leastInFlight', () => leastInFlight()],
];

printHeader('weighted caps at saturation: weights 2/1/1/1, cap 16, 128 callers (virtual time)');
const rows: string[][] = [];
for (const [name, picker] of pickers) {
  const weighted = await shares(picker, true);
  const flat = await shares(picker, false);
  const pct = (values: number[]) => values.map((v) => fmt(100 * v, 1)).join(' / ');
  const worst = Math.max(
    ...weighted.map((s, i) => Math.abs(s - WEIGHTS[i]! / 5) / (WEIGHTS[i]! / 5)),
  );
  rows.push([
    name,
    pct(weighted),
    pct(flat),
    ratio(weighted[0]! / flat[0]!),
    `${fmt(100 * worst, 1)} % ${goal(worst < 0.1)}`,
  ]);
}
printTable(
  [
    'picker',
    'shares %, weighted caps',
    'shares %, caps unscaled',
    'weight-2 share vs unscaled',
    'worst error vs 2/5, 1/5…',
  ],
  rows,
);
