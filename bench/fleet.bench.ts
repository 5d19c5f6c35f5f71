/**
 * The fleet, measured: N producer processes (4, then 8; forked, each with its own HTTP balancer
 * and 16 closed-loop callers) × 8 HTTP shards in one server process. Each shard serves 4 requests
 * at once for ~25 ms (uniform 12.5–37.5 ms), queues the rest, answers with an ORCA
 * `endpoint-load-metrics` header, and records its in-flight count over time. Per picker and N:
 *
 *   max/mean  = the busiest shard's time-averaged in-flight ÷ the mean over shards, over the
 *               steady part (1.0–4.0 s after the start; 1.00 = perfectly even)
 *   herding   = fraction of 100 ms windows in that part where some shard held more than twice
 *               its fair share (1/8) of the fleet's in-flight
 *   p99       = client-side latency of requests that ended in the steady part; `÷ rr` against
 *               round robin in the same run
 *   halves in = at 4.0 s shard 0 turns 5× slower: time until its share of new requests falls
 *               below half its steady share for two consecutive 100 ms windows (3 s observed)
 *
 * Goals at 8 producers: max/mean ≤ 1.2 with p2c and peakEwma; herding ≤ 5 % and the slowed
 * shard's share halved within 2 s with the load-aware pickers (p2c, peakEwma,
 * weightedByLoadReport). Round robin is the baseline. weightedByLoadReport runs with a 1 s
 * blackout (default 10 s) so its weights count within the run.
 *
 * First, the cost of one `weightedByLoadReport` pick against `weightedRoundRobin` (bench/fleet/
 * pick-cost.ts).
 *
 * Run: node --expose-gc --import tsx bench/fleet.bench.ts   (about 1.5 minutes)
 */
import { cpus, loadavg } from 'node:os';
import { runFleet, startProducers, startShards, stopAll } from './fleet/fleet.js';
import { halvingMs, herding, maxOverMean, percentile, shareOver } from './fleet/metrics.js';
import { measurePickCost } from './fleet/pick-cost.js';
import type { PickerName } from './fleet/producer.js';
import { fmt, goal, printHeader, printTable, ratio } from './lib.js';

const PICKERS: PickerName[] = ['roundRobin', 'p2c', 'peakEwma', 'weightedByLoadReport'];
const PRODUCERS = [4, 8];
const WORKERS = 16;
const WINDOW_MS = 100;
const STEADY = { from: 10, to: 40 }; // windows: 1.0–4.0 s
const SLOW_AT_MS = 4_000;
const DURATION_MS = 7_000;
const SLOW_SHARD = 0;

interface Row {
  producers: number;
  picker: PickerName;
  maxMean: number;
  herding: number;
  p99: number;
  halvesMs: number;
  ok: number;
  failed: number;
}

const loadBefore = loadavg()[0]!;
const cost = measurePickCost();

const shards = await startShards(8, 4, 25);
const rows: Row[] = [];
try {
  for (const n of PRODUCERS) {
    const producers = await startProducers(n);
    try {
      for (const picker of PICKERS) {
        const run = await runFleet(shards, producers, {
          picker,
          workers: WORKERS,
          durationMs: DURATION_MS,
          windowMs: WINDOW_MS,
          slow: { shard: SLOW_SHARD, atMs: SLOW_AT_MS, factor: 5 },
          blackoutMs: 1_000,
        });
        const before = shareOver(run, SLOW_SHARD, STEADY);
        const slowFrom = SLOW_AT_MS / WINDOW_MS;
        rows.push({
          producers: n,
          picker,
          maxMean: maxOverMean(run, STEADY).ratio,
          herding: herding(run, STEADY),
          p99: percentile(run, 99, STEADY.from * WINDOW_MS, STEADY.to * WINDOW_MS),
          halvesMs: halvingMs(run, SLOW_SHARD, before, slowFrom, DURATION_MS / WINDOW_MS),
          ok: run.producers.reduce((s, p) => s + p.ok, 0),
          failed: run.producers.reduce((s, p) => s + p.failed, 0),
        });
      }
    } finally {
      await stopAll(producers);
    }
  }
} finally {
  await shards.close();
}

printHeader('Fleet: N producers × 8 HTTP shards (4 slots, ~25 ms each), 16 callers per producer');
const LOAD_AWARE = new Set<PickerName>(['p2c', 'peakEwma', 'weightedByLoadReport']);
const table: string[][] = [];
for (const row of rows) {
  const rr = rows.find((r) => r.producers === row.producers && r.picker === 'roundRobin')!;
  const at8 = row.producers === 8;
  const maxMeanGoal = at8 && (row.picker === 'p2c' || row.picker === 'peakEwma');
  const loadAware = at8 && LOAD_AWARE.has(row.picker);
  table.push([
    `${row.producers} × ${row.picker}`,
    `${fmt(row.maxMean, 2)}${maxMeanGoal ? ` ${goal(row.maxMean <= 1.2)}` : ''}`,
    `${fmt(row.herding * 100, 1)} %${loadAware ? ` ${goal(row.herding <= 0.05)}` : ''}`,
    `${fmt(row.p99, 1)} ms`,
    ratio(row.p99 / rr.p99),
    fmt(row.ok / (DURATION_MS / 1_000), 0),
    `${Number.isFinite(row.halvesMs) ? `${fmt(row.halvesMs / 1000, 1)} s` : '> 3 s'}${
      loadAware ? ` ${goal(row.halvesMs <= 2_000)}` : ''
    }`,
    String(row.ok),
    String(row.failed),
  ]);
}
printTable(
  [
    'producers × picker',
    'max/mean',
    'herding',
    'p99',
    'p99 ÷ rr',
    'req/s',
    'slowed share halves in',
    'ok',
    'failed',
  ],
  table,
);
printHeader('weightedByLoadReport pick cost, 8 reporting shards (peer: weightedRoundRobin)');
printTable(
  ['picker', 'ns/pick', 'peer ns/pick', 'ratio', 'bytes/pick', 'peer bytes/pick'],
  [
    [
      'weightedByLoadReport',
      fmt(cost.ns, 1),
      fmt(cost.peerNs, 1),
      ratio(cost.ratio),
      fmt(cost.bytes, 2),
      fmt(cost.peerBytes, 2),
    ],
  ],
);
// The machine is shared: a high load average means the figures above are partly contention.
console.log(
  `\nload average (1 min) on ${cpus().length} cores: ${fmt(loadBefore, 1)} before, ${fmt(loadavg()[0]!, 1)} after`,
);
