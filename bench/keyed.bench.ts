/**
 * Keyed run() cost: strict affinity (the default of `consistentHash()`: a keyed run goes to its
 * home or waits in that home's line) against `affinity: 'spill'` (the earlier behaviour: a busy
 * home sends the key to the next shard of its order), under the same load. No-op tasks, batches
 * of 10 000 runs over 1 000 distinct keys, interleaved rounds, medians.
 *
 * - free: 8 shards × a cap nobody reaches — every run starts at once on its home.
 * - saturated: 8 shards × cap 4 — most runs wait: strict ones in their home's line, spill ones
 *   in the queue (and move when their home is busy).
 *
 * Run: npx tsx bench/keyed.bench.ts   (or npm run bench keyed)
 */
import { Balancer, consistentHash } from '../src/index.js';
import { fmt, goal, median, nowNs, printHeader, printTable, ratio } from './lib.js';

const BATCH = 10_000;
const ROUNDS = 15;
const WARMUP_ROUNDS = 3;
const KEYS = Array.from({ length: 1_000 }, (_, i) => `tenant-${i}`);
const shards = Array.from({ length: 8 }, (_, i) => ({ id: `s${i}`, target: i }));
const task = async () => 1;

function batch(affinity: 'strict' | 'spill', cap: number) {
  const balancer = new Balancer({
    shards,
    picker: consistentHash({ algorithm: 'maglev', affinity }),
    maxInFlightPerShard: cap,
    maxQueued: 2 * BATCH,
    retry: false,
    health: false,
  });
  const run = async () => {
    const all = new Array<Promise<number>>(BATCH);
    for (let i = 0; i < BATCH; i++) all[i] = balancer.run(task, { key: KEYS[i % KEYS.length]! });
    await Promise.all(all);
  };
  return { run, balancer };
}

async function usPerRun(run: () => Promise<void>): Promise<number> {
  const t0 = nowNs();
  await run();
  return (nowNs() - t0) / BATCH / 1000;
}

printHeader(
  `keyed run(): strict affinity vs spill, ${BATCH} runs over ${KEYS.length} keys, 8 shards`,
);
const rows: string[][] = [];
for (const [name, cap] of [
  ['free (cap 100 000)', 100_000],
  ['saturated (cap 4)', 4],
] as const) {
  const strict = batch('strict', cap);
  const spill = batch('spill', cap);
  const s: number[] = [];
  const p: number[] = [];
  for (let round = 0; round < WARMUP_ROUNDS + ROUNDS; round++) {
    const first = round % 2 === 0 ? strict : spill;
    const second = first === strict ? spill : strict;
    const a = await usPerRun(first.run);
    const b = await usPerRun(second.run);
    if (round < WARMUP_ROUNDS) continue;
    (first === strict ? s : p).push(a);
    (second === strict ? s : p).push(b);
  }
  const r = median(s.map((v, i) => v / p[i]!));
  rows.push([
    name,
    fmt(median(s), 3),
    fmt(median(p), 3),
    ratio(r),
    String(strict.balancer.stats().displaced.total),
    String(spill.balancer.stats().displaced.total),
    goal(r <= 1.2),
  ]);
}
printTable(
  [
    'load',
    'strict µs/run',
    'spill µs/run',
    'strict/spill',
    'displaced (strict)',
    'displaced (spill)',
    'goal ≤ 1.2×',
  ],
  rows,
);
console.log(
  '\n(strict never displaces a key; spill moves keys off busy homes, every move counted)',
);
