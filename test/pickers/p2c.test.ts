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
  random,
  type ShardState,
} from '../../src/index.js';
import { exponential, seededRandom, simulate } from '../../src/testing/index.js';
import { fakeShard, scripted } from '../helpers.js';

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
    ['inFlight', () => p2c({ choices: 2 })],
    ['ewma', () => p2c({ load: 'ewma' })],
    ['bytes', () => p2c({ load: 'bytes', choices: 2 })],
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

/** Shards whose `load`, `cost` and `bytesInFlight` reads record the shard's index in `seen`. */
function instrumented(shards: readonly ShardState[], seen: number[]): ShardState[] {
  return shards.map((s) => {
    const copy = { ...s };
    for (const field of ['load', 'cost', 'bytesInFlight'] as const) {
      Object.defineProperty(copy, field, {
        get() {
          seen.push(s.index);
          return s[field];
        },
      });
    }
    return copy as ShardState;
  });
}

describe('p2c({ choices: d })', () => {
  it('maps every sequence of draws to a distinct ordered triple of shards (exhaustive, n = 5, d = 3)', () => {
    const n = 5;
    const seen: number[] = [];
    const shards = instrumented(
      Array.from({ length: n }, (_, i) => fakeShard(`s${i}`, i)),
      seen,
    );
    const picker = p2c({ choices: 3 });
    const triples = new Set<string>();
    for (let a = 0; a < n; a++) {
      for (let b = 0; b < n - 1; b++) {
        for (let c = 0; c < n - 2; c++) {
          seen.length = 0;
          const draws = [(a + 0.5) / n, (b + 0.5) / (n - 1), (c + 0.5) / (n - 2)];
          picker.pick(shards, request(scripted(draws)));
          expect(seen).toHaveLength(3);
          expect(new Set(seen).size).toBe(3);
          // The first draw is the a-th shard; later ones step over those drawn.
          expect(seen[0]).toBe(a);
          triples.add(seen.join(','));
        }
      }
    }
    // Uniform over ordered triples: each of the 5 × 4 × 3 appears exactly once.
    expect(triples.size).toBe(n * (n - 1) * (n - 2));
  });

  it('draws exactly d random numbers per pick, or one per shard when there are fewer', () => {
    const five = ['a', 'b', 'c', 'd', 'e'].map((id, i) => fakeShard(id, i));
    const req = request(scripted([0.1, 0.5, 0.9, 0.3]));
    p2c({ choices: 4 }).pick(five, req);
    expect(() => req.random()).toThrow(/exhausted/);
    const three = five.slice(0, 3);
    const fewer = request(scripted([0.1, 0.5, 0.9]));
    p2c({ choices: 8 }).pick(three, fewer);
    expect(() => fewer.random()).toThrow(/exhausted/);
  });

  it('the least loaded of the d wins; a tie goes to the first drawn', () => {
    const shards = [4, 1, 3, 1, 0].map((inFlight, i) => fakeShard(`s${i}`, i, { inFlight }));
    const picker = p2c({ choices: 3 });
    // draws: s0 (4), then s1 (1) of the other four, then s3 (1) of the last three: tie → s1
    expect(picker.pick(shards, request(scripted([0.1, 0.1, 0.5])))!.id).toBe('s1');
    // draws: s2 (3), s4 (0) as the 4th of the remaining four, s0: s4 wins
    expect(picker.pick(shards, request(scripted([0.5, 0.9, 0.1])))!.id).toBe('s4');
  });

  it('with more choices than shards it compares all of them; ties go to a uniformly random one', () => {
    const shards = ['a', 'b', 'c'].map((id, i) => fakeShard(id, i, { inFlight: 2 }));
    const req = request(seededRandom(21));
    const counts: Record<string, number> = {};
    const picker = p2c({ choices: 16 });
    const picks = 30_000;
    for (let k = 0; k < picks; k++) {
      const id = picker.pick(shards, req)!.id;
      counts[id] = (counts[id] ?? 0) + 1;
    }
    for (const id of ['a', 'b', 'c'])
      expect(Math.abs(counts[id]! / picks - 1 / 3)).toBeLessThan(0.01);
    const busy = [fakeShard('x', 0, { inFlight: 3 }), fakeShard('y', 1, { inFlight: 0 })];
    for (let k = 0; k < 100; k++) expect(picker.pick(busy, req)!.id).toBe('y');
  });

  it.each([
    ['ewma', { rttMs: 100 }, { rttMs: 10 }],
    ['bytes', { bytes: 1_000_000 }, { bytes: 10 }],
  ] as const)('works with load: %s', (load, heavy, light) => {
    const make = (id: string, i: number, f: { rttMs?: number; bytes?: number }) => ({
      ...fakeShard(id, i, { rttMs: f.rttMs ?? 10 }),
      bytesInFlight: f.bytes ?? 0,
    });
    // Four heavy shards and one light one: with d = 4 of 5, the light one wins whenever drawn.
    const shards = [0, 1, 2, 3].map((i) => make(`h${i}`, i, heavy));
    shards.push(make('light', 4, light));
    const picker = p2c({ load, choices: 4 });
    expect(picker.name).toBe(`p2c:${load}:d4`);
    const req = request(seededRandom(5));
    let light5 = 0;
    const picks = 20_000;
    for (let k = 0; k < picks; k++) if (picker.pick(shards, req)!.id === 'light') light5++;
    // P(light among 4 distinct of 5) = 4 / 5.
    expect(Math.abs(light5 / picks - 0.8)).toBeLessThan(0.01);
  });

  it.each([1, 0, 17, 2.5, -3, Number.NaN, '3'])(
    'rejects choices: %o with a ConfigError naming p2c.choices',
    (choices) => {
      let caught: unknown;
      try {
        p2c({ choices: choices as never });
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(ConfigError);
      expect((caught as ConfigError).field).toBe('p2c.choices');
      expect((caught as ConfigError).message).toMatch(/must be an integer from 2 to 16/);
    },
  );

  it('names itself after its load and d', () => {
    expect(p2c().name).toBe('p2c');
    expect(p2c({ choices: 2, load: 'ewma' }).name).toBe('p2c:ewma');
    expect(p2c({ choices: 3 }).name).toBe('p2c:d3');
  });
});

describe('the supermarket model on the simulator: d = 3 beats d = 2 beats random', () => {
  it('max queue, 100 single-server shards at 90 % load (exponential service, seeded)', async () => {
    const run = async (picker: () => Picker) => {
      const result = await simulate({
        picker,
        balancerOptions: { maxInFlightPerShard: Number.POSITIVE_INFINITY, retry: false },
        shards: Array.from({ length: 100 }, (_, i) => ({
          id: `s${i}`,
          latency: exponential(10),
          capacity: 1,
        })),
        arrivals: { rate: 9_000 },
        requests: 20_000,
        seed: 5,
      });
      return {
        maxQueue: Math.max(...result.perShard.map((s) => s.maxInFlight)),
        mean: result.latency.mean,
      };
    };
    const uniform = await run(() => random());
    const two = await run(() => p2c());
    const three = await run(() => p2c({ choices: 3 }));
    // Measured: 54, 6, 5 calls at the busiest shard; mean latency 72, 26, 21 ms.
    expect(uniform.maxQueue).toBeGreaterThan(two.maxQueue);
    expect(two.maxQueue).toBeGreaterThan(three.maxQueue);
    expect(uniform.mean).toBeGreaterThan(two.mean);
    expect(two.mean).toBeGreaterThan(three.mean);
  });
});
