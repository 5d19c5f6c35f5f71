/**
 * Routing rules and tiers: what they cost per run, and what they save.
 *
 * 1. `run()` cost with a hard rule, with `prefer` tiers and with both, against a plain balancer,
 *    interleaved in one process (no-op tasks, 8 shards; the difference is the candidate filter).
 * 2. On the simulator: requests (× 1 KiB records = bytes) sent to the cloud tier by a local-first
 *    balancer against a plain one over all shards, at 0.5, 1.0 and 1.5 × the on-prem capacity C.
 */
import { Balancer, type BalancerOptions, p2c } from '../src/index.js';
import { simulate } from '../src/testing/index.js';
import { fmt, goal, median, nowNs, printHeader, printTable, ratio } from './lib.js';

const shards = Array.from({ length: 8 }, (_, i) => ({
  id: `s${i}`,
  target: i,
  labels: { region: i % 2 === 0 ? 'eu' : 'us', site: i < 4 ? 'onprem' : 'cloud' },
}));

async function costPerRun(
  extra: Partial<BalancerOptions<number>>,
  require: boolean,
): Promise<number> {
  const balancer = new Balancer<number>({
    shards,
    picker: p2c(),
    maxInFlightPerShard: 1_000_000,
    retry: false,
    health: false,
    ...extra,
  });
  const task = async () => 1;
  const options = require ? { require: { region: 'eu' } } : undefined;
  const batch = 10_000;
  const runs: Promise<number>[] = new Array(batch);
  const t0 = nowNs();
  for (let i = 0; i < batch; i++) runs[i] = balancer.run(task, options);
  await Promise.all(runs);
  return (nowNs() - t0) / batch;
}

const variants: [string, Partial<BalancerOptions<number>>, boolean][] = [
  ['plain', {}, false],
  ['require { region: eu }', {}, true],
  ['prefer [onprem, cloud]', { prefer: [{ site: 'onprem' }, { site: 'cloud' }] }, false],
  ['require + prefer', { prefer: [{ site: 'onprem' }, { site: 'cloud' }] }, true],
];

printHeader('Routing rules: ns per run() (no-op task, 8 shards), medians of interleaved rounds');
const samples = variants.map(() => [] as number[]);
for (let round = 0; round < 25; round++) {
  for (let v = 0; v < variants.length; v++) {
    const k = (v + round) % variants.length; // rotate the order every round
    const [, extra, require] = variants[k]!;
    const ns = await costPerRun(extra, require);
    if (round >= 4) samples[k]!.push(ns);
  }
}
const base = median(samples[0]!);
printTable(
  ['variant', 'ns/run', 'vs plain', 'goal ≤ 1.3×'],
  variants.map(([name], v) => {
    const m = median(samples[v]!);
    return [name, fmt(m, 0), ratio(m / base), v === 0 ? '' : goal(m / base <= 1.3)];
  }),
);

printHeader('Local-first tiers on the simulator: share sent to the cloud tier (1 KiB records)');
// On-prem: 4 shards × capacity 8 × 10 ms = C = 3 200 requests/s. Cloud: 4 more shards, as large.
const fleet = shards.map((s) => ({ id: s.id, labels: s.labels, latency: 10, capacity: 8 }));
const C = 3_200;
const rows: string[][] = [];
for (const load of [0.5, 1.0, 1.5]) {
  const requests = 20_000;
  const common = { shards: fleet, arrivals: { rate: C * load }, requests, seed: 42 };
  const tiered = await simulate({
    ...common,
    picker: p2c(),
    balancerOptions: {
      prefer: [{ site: 'onprem' }, { site: 'cloud' }],
      spillAfterMs: 5,
      maxInFlightPerShard: 8,
    },
  });
  const plain = await simulate({
    ...common,
    picker: p2c(),
    balancerOptions: { maxInFlightPerShard: 8 },
  });
  const cloud = (r: typeof plain) =>
    r.perShard
      .filter((s) => fleet.find((f) => f.id === s.id)!.labels.site === 'cloud')
      .reduce((n, s) => n + s.requests, 0);
  const kib = (n: number) => `${((n * 1024) / 2 ** 20).toFixed(1)} MiB`;
  rows.push([
    `${load.toFixed(1)} C`,
    `${kib(cloud(tiered))} (${((cloud(tiered) / requests) * 100).toFixed(1)} %)`,
    `${kib(cloud(plain))} (${((cloud(plain) / requests) * 100).toFixed(1)} %)`,
    fmt(tiered.latency.p99, 1),
    fmt(plain.latency.p99, 1),
  ]);
}
printTable(
  ['load', 'to cloud, local-first', 'to cloud, plain', 'p99 ms local-first', 'p99 ms plain'],
  rows,
);
