/**
 * `p2c()`: the pick at d = 2 pinned against the documented two-choice pick (same seed, same
 * picks), and `p2c({ choices: d })` for d ≥ 3: distinct uniform samples, the least loaded wins,
 * ties to the first sampled, validation, and the max-queue benefit on the simulator.
 */
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  type Picker,
  type PickRequest,
  p2c,
  peakEwma,
  type ShardState,
} from '../../src/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { fakeShard, scripted } from '../core/helpers.js';

function request(rng: () => number): PickRequest {
  return { key: undefined, attempt: 1, random: rng, totalInFlight: 0 };
}

type LoadOf = (s: ShardState) => number;
const LOADS: Record<'inFlight' | 'ewma' | 'bytes', LoadOf> = {
  inFlight: (s) => (s.load + 1) / s.weight,
  ewma: (s) => s.cost / s.weight,
  bytes: (s) => (s.bytesInFlight + 1 + (s.load - s.inFlight)) / s.weight,
};

/**
 * The two-choice pick as documented (Mitzenmacher; Finagle's "hole" trick): i uniform in [0, n),
 * j uniform in [0, n − 1) stepped over i, the second wins only when strictly less loaded.
 */
function referencePick(shards: readonly ShardState[], random: () => number, loadOf: LoadOf) {
  const n = shards.length;
  if (n <= 1) return shards[0];
  const i = (random() * n) | 0;
  let j = (random() * (n - 1)) | 0;
  if (j >= i) j++;
  return loadOf(shards[j]!) < loadOf(shards[i]!) ? shards[j] : shards[i];
}

/** Shards with assorted loads, weights, costs and bytes (many ties among them), seeded. */
function assorted(n: number, seed: number): ShardState[] {
  const rnd = seededRandom(seed);
  return Array.from({ length: n }, (_, i) => {
    const inFlight = (rnd() * 6) | 0;
    const shard = fakeShard(`s${i}`, i, {
      inFlight,
      weight: rnd() < 0.3 ? 1 + ((rnd() * 3) | 0) : 1,
      rttMs: rnd() < 0.5 ? 10 : 10 + ((rnd() * 40) | 0),
      load: inFlight + (rnd() < 0.1 ? 1e9 : 0),
    });
    return { ...shard, bytesInFlight: (rnd() * 4) | 0 };
  });
}

describe('p2c at d = 2 (the default): same seed, same picks as before choices existed', () => {
  it.each([
    ['inFlight', () => p2c()],
    ['ewma', () => p2c({ load: 'ewma' })],
    ['bytes', () => p2c({ load: 'bytes' })],
    ['ewma', () => peakEwma()],
  ] as const)(
    '%s: identical to the reference pick over 20k seeded picks per size',
    (mode, make) => {
      const picker: Picker = make();
      for (const n of [2, 3, 5, 8, 100, 1000]) {
        const shards = assorted(n, n);
        const mine = seededRandom(99 + n);
        const theirs = seededRandom(99 + n);
        const req = request(mine);
        let differ = 0;
        for (let k = 0; k < 20_000; k++) {
          if (picker.pick(shards, req) !== referencePick(shards, theirs, LOADS[mode])) differ++;
        }
        expect(differ).toBe(0);
      }
    },
  );
});
