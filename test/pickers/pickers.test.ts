import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  isShardwiseError,
  leastInFlight,
  type Picker,
  type PickRequest,
  p2c,
  peakEwma,
  random,
  roundRobin,
  type ShardState,
  weightedRoundRobin,
} from '../../src/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { countBy, fakeShard, scripted } from '../helpers.js';

const N = 100_000;
const EPS = 0.01;

function request(rng: () => number): PickRequest {
  return { key: undefined, attempt: 1, random: rng, totalInFlight: 0 };
}

function pickMany(picker: Picker, shards: readonly ShardState[], n: number, seed: number) {
  const req = request(seededRandom(seed));
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(picker.pick(shards, req)!.id);
  return countBy(ids);
}

function shares(counts: Record<string, number>, total: number, ids: readonly string[]): number[] {
  return ids.map((id) => (counts[id] ?? 0) / total);
}

const FACTORIES: [string, () => Picker][] = [
  ['roundRobin', () => roundRobin()],
  ['weightedRoundRobin', () => weightedRoundRobin()],
  ['random', () => random()],
  ['p2c', () => p2c()],
  ['p2c ewma', () => p2c({ load: 'ewma' })],
  ['leastInFlight', () => leastInFlight()],
  ['peakEwma', () => peakEwma()],
];

describe.each(FACTORIES)('%s on degenerate lists', (_name, factory) => {
  it('returns undefined on [] and the only shard on [x], drawing nothing it does not need', () => {
    const picker = factory();
    const req = request(seededRandom(3));
    expect(picker.pick([], req)).toBeUndefined();
    const only = fakeShard('x', 0, { inFlight: 7, weight: 3 });
    for (let i = 0; i < 5; i++) expect(picker.pick([only], req)).toBe(only);
  });

  it('always returns one of the shards it was offered', () => {
    const picker = factory();
    const shards = [0, 1, 2, 3, 4].map((i) =>
      fakeShard(`s${i}`, i, { weight: i + 1, inFlight: i % 3 }),
    );
    const req = request(seededRandom(11));
    for (let i = 0; i < 1_000; i++) expect(shards).toContain(picker.pick(shards, req));
  });
});

describe('roundRobin', () => {
  it('starts at the first shard and wraps in order', () => {
    const shards = ['a', 'b', 'c'].map((id, i) => fakeShard(id, i));
    const picker = roundRobin();
    const req = request(scripted([]));
    const order = Array.from({ length: 7 }, () => picker.pick(shards, req)!.id);
    expect(order).toEqual(['a', 'b', 'c', 'a', 'b', 'c', 'a']);
  });

  it('wraps to the first when the list shrinks under its cursor', () => {
    const shards = ['a', 'b', 'c'].map((id, i) => fakeShard(id, i));
    const picker = roundRobin();
    const req = request(scripted([]));
    picker.pick(shards, req);
    picker.pick(shards, req);
    picker.pick(shards, req);
    expect(picker.pick(shards.slice(0, 2), req)!.id).toBe('a');
  });
});

describe('weightedRoundRobin (smooth, nginx)', () => {
  const shards = [
    fakeShard('a', 0, { weight: 5 }),
    fakeShard('b', 1, { weight: 1 }),
    fakeShard('c', 2, { weight: 1 }),
  ];

  it('weights 5,1,1 give a a b a c a a, every 7 picks', () => {
    const picker = weightedRoundRobin();
    picker.rebuild!(shards);
    const req = request(scripted([]));
    const seq = Array.from({ length: 21 }, () => picker.pick(shards, req)!.id);
    const round = ['a', 'a', 'b', 'a', 'c', 'a', 'a'];
    expect(seq).toEqual([...round, ...round, ...round]);
  });

  it('works standalone, without rebuild', () => {
    const picker = weightedRoundRobin();
    const req = request(scripted([]));
    const seq = Array.from({ length: 7 }, () => picker.pick(shards, req)!.id);
    expect(seq).toEqual(['a', 'a', 'b', 'a', 'c', 'a', 'a']);
  });

  it('gives exact proportions over 7000 picks', () => {
    const picker = weightedRoundRobin();
    picker.rebuild!(shards);
    const req = request(scripted([]));
    const ids = Array.from({ length: 7_000 }, () => picker.pick(shards, req)!.id);
    expect(countBy(ids)).toEqual({ a: 5_000, b: 1_000, c: 1_000 });
  });

  it('equal weights degrade to plain round robin', () => {
    const equal = ['a', 'b', 'c'].map((id, i) => fakeShard(id, i));
    const picker = weightedRoundRobin();
    picker.rebuild!(equal);
    const req = request(scripted([]));
    const seq = Array.from({ length: 6 }, () => picker.pick(equal, req)!.id);
    expect(seq).toEqual(['a', 'b', 'c', 'a', 'b', 'c']);
  });
});

describe('random', () => {
  it('is uniform over equal weights (within ε over 100k seeded picks)', () => {
    const shards = ['a', 'b', 'c', 'd'].map((id, i) => fakeShard(id, i));
    const counts = pickMany(random(), shards, N, 42);
    for (const share of shares(counts, N, ['a', 'b', 'c', 'd'])) {
      expect(Math.abs(share - 0.25)).toBeLessThan(EPS);
    }
  });

  it('is proportional to weight (within ε over 100k seeded picks)', () => {
    const shards = [1, 2, 3, 4].map((w, i) => fakeShard(`w${w}`, i, { weight: w }));
    const counts = pickMany(random(), shards, N, 43);
    const got = shares(counts, N, ['w1', 'w2', 'w3', 'w4']);
    [0.1, 0.2, 0.3, 0.4].forEach((expected, i) => {
      expect(Math.abs(got[i]! - expected)).toBeLessThan(EPS);
    });
  });

  it('ignores load', () => {
    const shards = [fakeShard('busy', 0, { inFlight: 100 }), fakeShard('idle', 1)];
    const counts = pickMany(random(), shards, N, 44);
    expect(Math.abs(counts.busy! / N - 0.5)).toBeLessThan(EPS);
  });
});

/** Wraps shards so that reading `load` or `cost` records which shard was compared. */
function instrumented(shards: readonly ShardState[], seen: number[]): ShardState[] {
  return shards.map((s) => {
    const copy = { ...s };
    Object.defineProperty(copy, 'load', {
      get() {
        seen.push(s.index);
        return s.load;
      },
    });
    Object.defineProperty(copy, 'cost', {
      get() {
        seen.push(s.index);
        return s.cost;
      },
    });
    return copy as ShardState;
  });
}

describe.each([
  ['p2c', () => p2c()],
  ['p2c ewma', () => p2c({ load: 'ewma' })],
  ['peakEwma', () => peakEwma()],
])('%s: two distinct choices', (_name, factory) => {
  it('compares two distinct shards on every pick (100k seeded picks, 5 shards)', () => {
    const seen: number[] = [];
    const shards = instrumented(
      ['a', 'b', 'c', 'd', 'e'].map((id, i) => fakeShard(id, i)),
      seen,
    );
    const picker = factory();
    const req = request(seededRandom(7));
    const pairs = new Map<number, number>();
    let broken = 0;
    for (let i = 0; i < N; i++) {
      seen.length = 0;
      picker.pick(shards, req);
      if (seen.length !== 2 || seen[0] === seen[1]) broken++;
      const pair = Math.min(seen[0]!, seen[1]!) * 10 + Math.max(seen[0]!, seen[1]!);
      pairs.set(pair, (pairs.get(pair) ?? 0) + 1);
    }
    expect(broken).toBe(0);
    // Every unordered pair of 5 shards appears, each ~1/10 of the time.
    expect(pairs.size).toBe(10);
    for (const count of pairs.values()) expect(Math.abs(count / N - 0.1)).toBeLessThan(EPS);
  });

  it('the hole trick maps every pair of draws to a distinct ordered pair (exhaustive, n = 4)', () => {
    const n = 4;
    const seen: number[] = [];
    const shards = instrumented(
      ['a', 'b', 'c', 'd'].map((id, i) => fakeShard(id, i)),
      seen,
    );
    const picker = factory();
    const ordered = new Set<string>();
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n - 1; j++) {
        seen.length = 0;
        picker.pick(shards, request(scripted([(i + 0.5) / n, (j + 0.5) / (n - 1)])));
        // loadOf(b) is read before loadOf(a): seen = [second, first].
        expect(seen).toHaveLength(2);
        expect(seen[0]).not.toBe(seen[1]);
        expect(seen[1]).toBe(i);
        ordered.add(`${seen[1]}>${seen[0]}`);
      }
    }
    expect(ordered.size).toBe(n * (n - 1));
  });

  it('draws exactly two random numbers per pick on 2+ shards', () => {
    const shards = ['a', 'b'].map((id, i) => fakeShard(id, i));
    const picker = factory();
    const req = request(scripted([0.1, 0.9]));
    picker.pick(shards, req);
    expect(() => req.random()).toThrow(/exhausted/);
  });
});

describe('p2c decisions', () => {
  it('the less loaded of the two wins, whichever was drawn first', () => {
    const shards = [fakeShard('a', 0, { inFlight: 3 }), fakeShard('b', 1, { inFlight: 1 })];
    const picker = p2c();
    // i = 0 (a), j = 0 → stepped over a → 1 (b)
    expect(picker.pick(shards, request(scripted([0.1, 0.1])))!.id).toBe('b');
    // i = 1 (b), j = 0 (a)
    expect(picker.pick(shards, request(scripted([0.9, 0.1])))!.id).toBe('b');
  });

  it('a tie goes to the first one drawn', () => {
    const shards = ['a', 'b', 'c'].map((id, i) => fakeShard(id, i, { inFlight: 2 }));
    const picker = p2c();
    // i = 2 (c), j = 0 (a): tie → c
    expect(picker.pick(shards, request(scripted([0.9, 0.1])))!.id).toBe('c');
    // i = 0 (a), j = 1 → stepped to 2 (c): tie → a
    expect(picker.pick(shards, request(scripted([0.1, 0.9])))!.id).toBe('a');
    // i = 1 (b), j = 0 (a): tie → b
    expect(picker.pick(shards, request(scripted([0.5, 0.1])))!.id).toBe('b');
  });

  it('divides load by weight: (inFlight + 1) / weight', () => {
    // a: (3 + 1) / 4 = 1; b: (0 + 1) / 1 = 1 → tie, first wins; c: (1 + 1) / 4 = 0.5
    const shards = [
      fakeShard('a', 0, { inFlight: 3, weight: 4 }),
      fakeShard('b', 1, { inFlight: 0, weight: 1 }),
      fakeShard('c', 2, { inFlight: 1, weight: 4 }),
    ];
    const picker = p2c();
    expect(picker.pick(shards, request(scripted([0.1, 0.1])))!.id).toBe('a');
    expect(picker.pick(shards, request(scripted([0.5, 0.1])))!.id).toBe('b');
    expect(picker.pick(shards, request(scripted([0.5, 0.9])))!.id).toBe('c');
  });

  it('never sends to a strictly most-loaded shard (100k seeded picks)', () => {
    const shards = [
      fakeShard('a', 0, { inFlight: 1 }),
      fakeShard('b', 1, { inFlight: 1 }),
      fakeShard('c', 2, { inFlight: 1 }),
      fakeShard('hot', 3, { inFlight: 10 }),
    ];
    const counts = pickMany(p2c(), shards, N, 5);
    expect(counts.hot ?? 0).toBe(0);
    for (const id of ['a', 'b', 'c']) expect(Math.abs(counts[id]! / N - 1 / 3)).toBeLessThan(EPS);
  });

  it('shares follow the pair rule: shard of rank k wins 2·(n−1−k)/(n(n−1)) of picks', () => {
    // Loads 0 < 1 < 2 < 3: the least loaded wins every pair it is in (1/2), then 1/3, 1/6, 0.
    const shards = [0, 1, 2, 3].map((load, i) => fakeShard(`l${load}`, i, { inFlight: load }));
    const counts = pickMany(p2c(), shards, N, 6);
    const got = shares(counts, N, ['l0', 'l1', 'l2', 'l3']);
    [1 / 2, 1 / 3, 1 / 6, 0].forEach((expected, i) => {
      expect(Math.abs(got[i]! - expected)).toBeLessThan(EPS);
    });
    expect(counts.l3 ?? 0).toBe(0);
  });

  it('p2c ewma and peakEwma never send to a shard whose cost is 10× the others', () => {
    const shards = [
      fakeShard('a', 0, { rttMs: 10 }),
      fakeShard('b', 1, { rttMs: 10 }),
      fakeShard('c', 2, { rttMs: 10 }),
      fakeShard('slow', 3, { rttMs: 100 }),
    ];
    for (const picker of [p2c({ load: 'ewma' }), peakEwma()]) {
      const counts = pickMany(picker, shards, N, 8);
      expect(counts.slow ?? 0).toBe(0);
      for (const id of ['a', 'b', 'c']) {
        expect(Math.abs(counts[id]! / N - 1 / 3)).toBeLessThan(EPS);
      }
    }
  });

  it('p2c (inFlight) ignores latency; p2c ewma ignores nothing', () => {
    const shards = [fakeShard('fast', 0, { rttMs: 1 }), fakeShard('slow', 1, { rttMs: 1_000 })];
    const byCount = pickMany(p2c(), shards, 10_000, 9);
    // equal in-flight: ties go to the first drawn, which is uniform
    expect(Math.abs(byCount.slow! / 10_000 - 0.5)).toBeLessThan(0.02);
    const byCost = pickMany(p2c({ load: 'ewma' }), shards, 10_000, 9);
    expect(byCost).toEqual({ fast: 10_000 });
  });

  it('a pushed-back shard (load 1e9) is chosen only against another pushed-back one', () => {
    const shards = [fakeShard('pb', 0, { load: 1e9 }), fakeShard('ok', 1, { load: 0 })];
    expect(pickMany(p2c(), shards, 1_000, 10)).toEqual({ ok: 1_000 });
  });

  it('validates its options: unknown key and bad load value throw ConfigError', () => {
    expect(() => p2c({ weight: true } as never)).toThrow(ConfigError);
    try {
      p2c({ weight: true } as never);
    } catch (error) {
      expect(isShardwiseError(error, 'SHARDWISE_CONFIG')).toBe(true);
      expect((error as ConfigError).field).toBe('p2c.weight');
    }
    let caught: unknown;
    try {
      p2c({ load: 'latency' as never });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect(caught).toBeInstanceOf(TypeError);
    expect((caught as ConfigError).field).toBe('p2c.load');
    expect((caught as ConfigError).message).toMatch(
      /^`p2c\.load` must be one of 'inFlight', 'ewma'.*, got "latency" \(string\)$/,
    );
    expect(() => p2c(null as never)).toThrow(ConfigError);
    expect(() => p2c({ load: undefined })).not.toThrow();
  });

  it('peakEwma validates its options', () => {
    expect(() => peakEwma({ decayMs: 0 })).toThrow(/`peakEwma.decayMs`.*got 0 \(number\)/);
    expect(() => peakEwma({ defaultRttMs: -1 })).toThrow(/`peakEwma.defaultRttMs`.*got -1/);
    expect(() => peakEwma({ tau: 5 } as never)).toThrow(/`peakEwma.tau` is not a known option/);
    expect(peakEwma({ decayMs: 5_000, defaultRttMs: 0 }).ewma).toEqual({
      decayMs: 5_000,
      defaultRttMs: 0,
    });
  });
});

describe('leastInFlight', () => {
  it('always picks the minimum (in-flight + 1) / weight', () => {
    const shards = [
      fakeShard('a', 0, { inFlight: 3 }),
      fakeShard('b', 1, { inFlight: 1 }),
      fakeShard('c', 2, { inFlight: 2 }),
      fakeShard('d', 3, { inFlight: 5, weight: 2 }),
    ];
    expect(pickMany(leastInFlight(), shards, 10_000, 12)).toEqual({ b: 10_000 });
  });

  it('takes weight into account', () => {
    // a: 4/1 = 4, b: 5/2 = 2.5, c: 7/4 = 1.75
    const shards = [
      fakeShard('a', 0, { inFlight: 3 }),
      fakeShard('b', 1, { inFlight: 4, weight: 2 }),
      fakeShard('c', 2, { inFlight: 6, weight: 4 }),
    ];
    expect(pickMany(leastInFlight(), shards, 1_000, 13)).toEqual({ c: 1_000 });
  });

  it('draws one random number a pick however many shards tie, and still spreads scattered ties uniformly', () => {
    // Loads 2, 1, 3, 1, 2, 1: the ties (b, d, f) are scattered, after a busier first shard.
    const loads = [2, 1, 3, 1, 2, 1];
    const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
    const shards = ids.map((id, i) => fakeShard(id, i, { inFlight: loads[i]! }));
    const source = seededRandom(16);
    let draws = 0;
    const req = request(() => {
      draws++;
      return source();
    });
    const picker = leastInFlight();
    const picked: string[] = [];
    for (let i = 0; i < N; i++) picked.push(picker.pick(shards, req)!.id);
    expect(draws).toBe(N);
    const counts = countBy(picked);
    expect(Object.keys(counts).sort()).toEqual(['b', 'd', 'f']);
    for (const share of shares(counts, N, ['b', 'd', 'f'])) {
      expect(Math.abs(share - 1 / 3)).toBeLessThan(EPS);
    }
    // An idle fleet of 1 000: every shard ties, still one draw a pick, and every shard is reached.
    const idle = Array.from({ length: 1_000 }, (_, i) => fakeShard(`s${i}`, i));
    draws = 0;
    const reached = new Set<string>();
    for (let i = 0; i < 20_000; i++) reached.add(picker.pick(idle, req)!.id);
    expect(draws).toBe(20_000);
    expect(reached.size).toBe(1_000);
    // One shard alone at the least load: no draw at all.
    const busy = Array.from({ length: 1_000 }, (_, i) =>
      fakeShard(`s${i}`, i, { inFlight: i === 700 ? 0 : 1 }),
    );
    draws = 0;
    expect(picker.pick(busy, req)?.id).toBe('s700');
    expect(draws).toBe(0);
  });

  it('spreads ties uniformly when every shard ties (within ε over 100k seeded picks)', () => {
    const shards = ['a', 'b', 'c', 'd'].map((id, i) => fakeShard(id, i, { inFlight: 2 }));
    const counts = pickMany(leastInFlight(), shards, N, 15);
    for (const share of shares(counts, N, ['a', 'b', 'c', 'd'])) {
      expect(Math.abs(share - 0.25)).toBeLessThan(EPS);
    }
  });

  // A scan that started at a random index and kept the first minimum it met would hand a busier
  // shard's share to the tied shard after it (here `a` would get 2/5).
  it('spreads ties uniformly among the least loaded when others are busier (within ε over 100k seeded picks)', () => {
    const shards = [
      fakeShard('a', 0, { inFlight: 1 }),
      fakeShard('b', 1, { inFlight: 1 }),
      fakeShard('c', 2, { inFlight: 1 }),
      fakeShard('d', 3, { inFlight: 1 }),
      fakeShard('busy', 4, { inFlight: 2 }),
    ];
    const counts = pickMany(leastInFlight(), shards, N, 14);
    expect(counts.busy ?? 0).toBe(0);
    for (const share of shares(counts, N, ['a', 'b', 'c', 'd'])) {
      expect(Math.abs(share - 0.25)).toBeLessThan(EPS);
    }
  });
});
