/**
 * Per-call overhead of `balancer.run()` with a no-op task against p-queue's `queue.add()` of the
 * same task, in batches of 10 000 calls awaited with `Promise.all`, interleaved round by round
 * (the order flips each round), medians. A bare `Promise.all` of the task calls is the floor.
 *
 * - free: 8 shards, p2c, a per-shard cap nobody reaches, retry and health off — every run takes
 *   the fast path; p-queue's concurrency equals the balancer's total (8 × cap).
 * - saturated: 8 shards × `maxInFlightPerShard: 1`, 10 000 runs at once — all but 8 queue;
 *   p-queue with concurrency 8.
 *
 * Run: npx tsx bench/run-overhead.bench.ts   (or npm run bench run-overhead)
 */
import PQueue from 'p-queue';
import { Balancer, p2c } from '../src/index.js';
import { fmt, goal, median, nowNs, printHeader, printTable, ratio } from './lib.js';

const BATCH = 10_000;
const ROUNDS = 21;
const WARMUP_ROUNDS = 4;
const SHARDS = 8;
const FREE_CAP = 100_000;

const task = async () => 1;
const shards = Array.from({ length: SHARDS }, (_, i) => ({ id: `s${i}`, target: i }));

type Batch = () => Promise<unknown>;

function balancerBatch(maxInFlightPerShard: number): Batch {
  const balancer = new Balancer({
    shards,
    picker: p2c(),
    maxInFlightPerShard,
    maxQueued: 2 * BATCH,
    retry: false,
    health: false,
  });
  return () => {
    const all = new Array<Promise<number>>(BATCH);
    for (let i = 0; i < BATCH; i++) all[i] = balancer.run(task);
    return Promise.all(all);
  };
}

function pQueueBatch(concurrency: number): Batch {
  const queue = new PQueue({ concurrency });
  return () => {
    const all = new Array<Promise<number>>(BATCH);
    for (let i = 0; i < BATCH; i++) all[i] = queue.add(task);
    return Promise.all(all);
  };
}

const bareBatch: Batch = () => {
  const all = new Array<Promise<number>>(BATCH);
  for (let i = 0; i < BATCH; i++) all[i] = task();
  return Promise.all(all);
};

async function usPerCall(batch: Batch): Promise<number> {
  const t0 = nowNs();
  await batch();
  return (nowNs() - t0) / BATCH / 1000;
}

interface Scenario {
  name: string;
  balancer: Batch;
  pQueue: Batch;
  pQueueLabel: string;
}

/** Interleaved rounds of balancer, p-queue and bare batches; per-round ratios. */
async function measure(s: Scenario) {
  const cases = [s.balancer, s.pQueue, bareBatch];
  const samples: number[][] = [[], [], []];
  for (let round = 0; round < WARMUP_ROUNDS + ROUNDS; round++) {
    // Rotate the order so none always runs right after a GC-heavy peer. No forced GC between
    // batches: collecting the garbage a call leaves is part of its cost.
    for (let k = 0; k < cases.length; k++) {
      const c = (round + k) % cases.length;
      const us = await usPerCall(cases[c]!);
      if (round >= WARMUP_ROUNDS) samples[c]!.push(us);
    }
  }
  const [bal, pq, bare] = samples as [number[], number[], number[]];
  return {
    balancer: median(bal),
    pQueue: median(pq),
    bare: median(bare),
    ratio: median(bal.map((b, i) => b / pq[i]!)),
  };
}

printHeader(`run() overhead vs p-queue add(): no-op task, batches of ${BATCH}, ${ROUNDS} rounds`);
const scenarios: Scenario[] = [
  {
    name: `free (8 shards × cap ${FREE_CAP})`,
    balancer: balancerBatch(FREE_CAP),
    pQueue: pQueueBatch(SHARDS * FREE_CAP),
    pQueueLabel: `concurrency ${SHARDS * FREE_CAP}`,
  },
  {
    name: 'saturated (8 shards × cap 1)',
    balancer: balancerBatch(1),
    pQueue: pQueueBatch(SHARDS),
    pQueueLabel: `concurrency ${SHARDS}`,
  },
];
const rows: string[][] = [];
const ratios: number[] = [];
for (const s of scenarios) {
  const m = await measure(s);
  ratios.push(m.ratio);
  rows.push([
    s.name,
    fmt(m.balancer, 3),
    `${fmt(m.pQueue, 3)} (${s.pQueueLabel})`,
    fmt(m.bare, 3),
    ratio(m.ratio),
    goal(m.ratio <= 1.5),
  ]);
}
printTable(
  [
    'scenario',
    'balancer µs/call',
    'p-queue µs/call',
    'bare µs/call',
    'balancer/p-queue',
    'goal ≤ 1.5×',
  ],
  rows,
);
console.log(
  '\n(ratio = median of per-round balancer/p-queue ratios; bare = Promise.all of the task itself, the floor)',
);
