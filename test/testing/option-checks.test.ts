import { describe, expect, it } from 'vitest';
import { ConfigError, consistentHash, isShardwiseError, p2c } from '../../src/index.js';
import { pickerConformance, remapFraction, shardViews, simulate } from '../../src/testing/index.js';

/** The testing kit takes a test author's input: bad shapes are `ConfigError`s naming the field. */
function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (error) {
    return error;
  }
  return undefined;
}

/** `[, x]`: index 0 is a hole. */
function holeFirst<T>(value: T): T[] {
  const out: T[] = [];
  out[1] = value;
  return out;
}

describe('shardViews', () => {
  it.each([
    [
      'labels: "eu" (a string, spread into { 0: "e", 1: "u" })',
      { id: 'a', labels: 'eu' },
      /^shards\[0\]\.labels/,
    ],
    ['labels: { region: 5 }', { id: 'a', labels: { region: 5 } }, /^shards\[0\]\.labels\.region$/],
    ['zone: 5', { id: 'a', zone: 5 }, /^shards\[0\]\.zone$/],
  ])('%s is a ConfigError, as a ShardSpec of the Balancer is', (_name, spec, field) => {
    const error = thrown(() => shardViews([spec as never]));
    // today: accepted — a view whose labels are { 0: 'e', 1: 'u' } / { region: 5 }, zone 5
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toMatch(field);
  });

  it('a sparse list is a ConfigError naming the hole, not a list of views with a hole in it', () => {
    const error = thrown(() => shardViews(holeFirst('b')));
    // today: returns an array of length 2 whose index 0 is a hole (a picker reading shards[0] gets undefined)
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toBe('shards[0]');
  });
});

describe('remapFraction', () => {
  it('a hole in `before` is a ConfigError naming before[0], not a TypeError from the ring', () => {
    const error = thrown(() =>
      remapFraction({
        picker: () => consistentHash(),
        before: holeFirst('b'),
        after: ['a', 'b'],
        keys: 100,
      }),
    );
    // today: TypeError: Cannot read properties of undefined (reading 'weight')
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toMatch(/^before\[0\]/);
  });

  it('a hole in `keys` is a ConfigError naming keys[i], not a key counted as "not moved"', () => {
    const keys: string[] = ['k0'];
    keys[2] = 'k2';
    const error = thrown(() =>
      remapFraction({ picker: () => consistentHash(), before: ['a'], after: ['b'], keys }),
    );
    // today: returns 2/3 — the hole counts as a key that stayed (every real key moved a → b)
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toBe('keys[1]');
  });
});

describe('pickerConformance', () => {
  it.each([
    ['a picker instead of its factory', p2c()],
    ['null', null],
  ])(
    'pickerConformance(%s) is a ConfigError (code SHARDWISE_CONFIG) naming factory',
    (_name, bad) => {
      const error = thrown(() => pickerConformance(bad as never));
      // today: a plain TypeError, without a `code`: isShardwiseError() is false
      expect(error).toBeInstanceOf(ConfigError);
      expect(isShardwiseError(error, 'SHARDWISE_CONFIG')).toBe(true);
      expect((error as ConfigError).field).toBe('factory');
    },
  );
});

describe('simulate({ balancerOptions })', () => {
  const base = { shards: [{ id: 'a', latency: 1 }], requests: 10, seed: 1 };

  it.each([
    ['retry: null', { retry: null }, 'balancerOptions.retry'],
    ['an unknown name (maxInflight)', { maxInflight: 3 }, 'balancerOptions.maxInflight'],
    ['maxQueued: -1', { maxQueued: -1 }, 'balancerOptions.maxQueued'],
    [
      'health.panicThreshold: 101',
      { health: { panicThreshold: 101 } },
      'balancerOptions.health.panicThreshold',
    ],
  ])(
    '%s: the ConfigError names the path the caller wrote',
    async (_name, balancerOptions, field) => {
      const error = await simulate({ ...base, balancerOptions: balancerOptions as never }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ConfigError);
      // today: `retry`, `maxInflight`, `maxQueued`, `health.panicThreshold` — options of no object
      // the caller passed to simulate()
      expect((error as ConfigError).field).toBe(field);
    },
  );

  it('a picker factory that returns undefined is a ConfigError naming picker, not a silent peakEwma()', async () => {
    const error = await simulate({ ...base, picker: (() => undefined) as never }).then(
      () => undefined,
      (e: unknown) => e,
    );
    // today: resolves — the run silently used the default picker
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toBe('picker');
  });
});
