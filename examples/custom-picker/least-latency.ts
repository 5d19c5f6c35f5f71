/**
 * A custom picker in a screenful: of two shards drawn at random, the one with the lower latency
 * estimate; ties go to the one with fewer calls in flight. Load a shard signals about itself —
 * the load it reports (`x-shard-load`), a push-back (429, SlowDown) — scales its latency up, so a
 * shard that asks to be spared loses to one that does not.
 *
 * It reads the figures the balancer measures (`rttMs`, `inFlight`, `load`) and writes none; its
 * only randomness is `request.random`, so a seeded balancer replays it exactly.
 *
 * Try it: `npx tsx examples/custom-picker/least-latency.ts` simulates it beside round robin.
 */
import { pathToFileURL } from 'node:url';
import { type Picker, roundRobin, type ShardState } from 'shardwise';
import { exponential, simulate } from 'shardwise/testing';

/**
 * Latency per unit of weight, times 1 + the load the shard signals beyond our own calls
 * (`load` is `inFlight` plus reported load plus a large push-back penalty).
 */
function score(s: ShardState): number {
  return (s.rttMs * (1 + s.load - s.inFlight)) / s.weight;
}

/** True when `b` is the better of the two. */
function better(a: ShardState, b: ShardState): boolean {
  const sa = score(a);
  const sb = score(b);
  if (sa !== sb) return sb < sa;
  return b.inFlight / b.weight < a.inFlight / a.weight;
}

/** Lowest latency among two random choices, ties to fewer in flight. */
export function leastLatency(): Picker {
  return {
    name: 'least-latency',
    pick(shards, request) {
      const n = shards.length;
      if (n <= 1) return shards[0];
      const i = (request.random() * n) | 0;
      let j = (request.random() * (n - 1)) | 0; // two distinct shards: step over the first
      if (j >= i) j++;
      const a = shards[i]!;
      const b = shards[j]!;
      return better(a, b) ? b : a;
    },
  };
}

/** Simulates `leastLatency` and round robin on a fleet with one slow shard; returns both p99s. */
export async function main(options: { requests?: number; seed?: number } = {}) {
  const shards = Array.from({ length: 6 }, (_, i) => ({
    id: `shard-${i}`,
    latency: exponential(i === 0 ? 100 : 10), // shard-0 is ten times slower
    capacity: 4,
  }));
  const run = (picker: () => Picker) =>
    simulate({
      picker,
      shards,
      arrivals: { rate: 1_000 },
      requests: options.requests ?? 20_000,
      seed: options.seed ?? 1,
    });
  return { leastLatency: await run(leastLatency), roundRobin: await run(roundRobin) };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { leastLatency: mine, roundRobin: rr } = await main();
  for (const [name, r] of [
    ['least-latency', mine],
    ['round-robin', rr],
  ] as const) {
    console.log(
      `${name.padEnd(14)} p50 ${r.latency.p50.toFixed(1)} ms  p99 ${r.latency.p99.toFixed(1)} ms  ` +
        `to the slow shard ${r.perShard[0]!.requests}`,
    );
  }
}
