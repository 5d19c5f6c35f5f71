import { describe, expect, it } from 'vitest';
import {
  Balancer,
  type BalancerOptions,
  ConfigError,
  isShardwiseError,
  leastInFlight,
  p2c,
} from '../../src/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';

const shard = { id: 'a', target: 'a' };

function options(extra: Record<string, unknown>): BalancerOptions<string> {
  return {
    shards: [shard],
    clock: new ManualClock(),
    random: seededRandom(1),
    ...extra,
  } as BalancerOptions<string>;
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

/** [case, options, field named in the message, the value as the message describes it] */
const INVALID: [string, Record<string, unknown>, string, string][] = [
  ['empty shard list', { shards: [] }, 'shards', 'an array of length 0'],
  ['shards not an array', { shards: 'a,b' }, 'shards', '"a,b" (string)'],
  ['shards an object', { shards: { a: 1 } }, 'shards', 'an object (Object)'],
  ['duplicate ids', { shards: [shard, { id: 'a', target: 'b' }] }, 'shards[1].id', '"a" (string)'],
  ['empty id', { shards: [{ id: '', target: 'x' }] }, 'shards[0].id', '"" (string)'],
  ['id a number', { shards: [{ id: 7, target: 'x' }] }, 'shards[0].id', '7 (number)'],
  ['missing target', { shards: [{ id: 'a' }] }, 'shards[0].target', 'undefined'],
  ['weight 0', { shards: [{ ...shard, weight: 0 }] }, 'shards[0].weight', '0 (number)'],
  ['weight -1', { shards: [{ ...shard, weight: -1 }] }, 'shards[0].weight', '-1 (number)'],
  [
    'weight NaN',
    { shards: [{ ...shard, weight: Number.NaN }] },
    'shards[0].weight',
    'NaN (number)',
  ],
  [
    'weight Infinity',
    { shards: [{ ...shard, weight: Number.POSITIVE_INFINITY }] },
    'shards[0].weight',
    'Infinity (number)',
  ],
  ["weight '2'", { shards: [{ ...shard, weight: '2' }] }, 'shards[0].weight', '"2" (string)'],
  [
    'shard spec with an unknown key',
    { shards: [{ ...shard, weigth: 2 }] },
    'shards[0].weigth',
    '2 (number)',
  ],
  [
    'labels with a non-string value',
    { shards: [{ ...shard, labels: { region: 5 } }] },
    'shards[0].labels.region',
    '5 (number)',
  ],
  [
    'labels not an object',
    { shards: [{ ...shard, labels: 'eu' }] },
    'shards[0].labels',
    '"eu" (string)',
  ],
  ['zone a number', { shards: [{ ...shard, zone: 3 }] }, 'shards[0].zone', '3 (number)'],
  ['maxInFlightPerShard 1.5', { maxInFlightPerShard: 1.5 }, 'maxInFlightPerShard', '1.5 (number)'],
  ['maxInFlightPerShard 0', { maxInFlightPerShard: 0 }, 'maxInFlightPerShard', '0 (number)'],
  ['maxInFlightPerShard -1', { maxInFlightPerShard: -1 }, 'maxInFlightPerShard', '-1 (number)'],
  ['maxQueued -1', { maxQueued: -1 }, 'maxQueued', '-1 (number)'],
  ['maxQueued 2.5', { maxQueued: 2.5 }, 'maxQueued', '2.5 (number)'],
  ['maxInFlight 0', { maxInFlight: 0 }, 'maxInFlight', '0 (number)'],
  ["overflow 'drop'", { overflow: 'drop' }, 'overflow', '"drop" (string)'],
  ['timeoutMs -5', { timeoutMs: -5 }, 'timeoutMs', '-5 (number)'],
  ['timeoutMs NaN', { timeoutMs: Number.NaN }, 'timeoutMs', 'NaN (number)'],
  ['timeoutMs 0', { timeoutMs: 0 }, 'timeoutMs', '0 (number)'],
  ['unknown option (maxInflight typo)', { maxInflight: 10 }, 'maxInflight', '10 (number)'],
  ['retry.attempts 0', { retry: { attempts: 0 } }, 'retry.attempts', '0 (number)'],
  ['retry.attempts 2.5', { retry: { attempts: 2.5 } }, 'retry.attempts', '2.5 (number)'],
  [
    'retry.backoff.baseMs -1',
    { retry: { backoff: { baseMs: -1 } } },
    'retry.backoff.baseMs',
    '-1 (number)',
  ],
  [
    'retry.backoff.maxMs < baseMs',
    { retry: { backoff: { baseMs: 100, maxMs: 50 } } },
    'retry.backoff.maxMs',
    '50 (number)',
  ],
  [
    'retry.budget.ratio 1.5',
    { retry: { budget: { ratio: 1.5 } } },
    'retry.budget.ratio',
    '1.5 (number)',
  ],
  [
    'retry.budget.ratio -0.1',
    { retry: { budget: { ratio: -0.1 } } },
    'retry.budget.ratio',
    '-0.1 (number)',
  ],
  ['retry.budget.ttlMs 0', { retry: { budget: { ttlMs: 0 } } }, 'retry.budget.ttlMs', '0 (number)'],
  [
    'retry.budget unknown key',
    { retry: { budget: { percent: 20 } } },
    'retry.budget.percent',
    '20 (number)',
  ],
  ['retry unknown key', { retry: { tries: 3 } }, 'retry.tries', '3 (number)'],
  [
    'retry.retryable not a function',
    { retry: { retryable: true } },
    'retry.retryable',
    'true (boolean)',
  ],
  ['retry: true', { retry: true }, 'retry', 'true (boolean)'],
  [
    'health.consecutiveFailures 0',
    { health: { consecutiveFailures: 0 } },
    'health.consecutiveFailures',
    '0 (number)',
  ],
  [
    'health.maxEjectedPercent 101',
    { health: { maxEjectedPercent: 101 } },
    'health.maxEjectedPercent',
    '101 (number)',
  ],
  [
    'health.panicThreshold -1',
    { health: { panicThreshold: -1 } },
    'health.panicThreshold',
    '-1 (number)',
  ],
  [
    'health.baseEjectionMs Infinity',
    { health: { baseEjectionMs: Number.POSITIVE_INFINITY } },
    'health.baseEjectionMs',
    'Infinity (number)',
  ],
  [
    'health.maxEjectionMs 0',
    { health: { maxEjectionMs: 0 } },
    'health.maxEjectionMs',
    '0 (number)',
  ],
  ['health unknown key', { health: { ejectAfter: 3 } }, 'health.ejectAfter', '3 (number)'],
  ['picker without pick', { picker: { name: 'mine' } }, 'picker.pick', 'undefined'],
  ['picker without a name', { picker: { pick: () => undefined } }, 'picker.name', 'undefined'],
  ['picker a string', { picker: 'p2c' }, 'picker', '"p2c" (string)'],
  [
    'picker the maker p2c, not p2c()',
    { picker: p2c },
    'picker',
    'got a function: call the maker, as in `p2c()`',
  ],
  [
    'picker the maker leastInFlight',
    { picker: leastInFlight },
    'picker',
    'as in `leastInFlight()`',
  ],
  ['clock without setTimer', { clock: { now: () => 0 } }, 'clock.setTimer', 'undefined'],
  ['clock without now', { clock: { setTimer: () => () => {} } }, 'clock.now', 'undefined'],
  ['random not a function', { random: 0.5 }, 'random', '0.5 (number)'],
];

describe('Balancer options validation', () => {
  it('covers at least 30 invalid inputs', () => {
    expect(INVALID.length).toBeGreaterThanOrEqual(30);
  });

  it.each(INVALID)(
    '%s → ConfigError naming the field and the value',
    (_name, extra, field, value) => {
      const error = thrown(() => new Balancer(options(extra)));
      expect(error).toBeInstanceOf(ConfigError);
      expect(error).toBeInstanceOf(TypeError);
      expect((error as ConfigError).code).toBe('SHARDWISE_CONFIG');
      expect((error as ConfigError).name).toBe('ConfigError');
      expect(isShardwiseError(error, 'SHARDWISE_CONFIG')).toBe(true);
      expect((error as ConfigError).field).toBe(field);
      const message = (error as ConfigError).message;
      expect(message.startsWith(`\`${field}\` `)).toBe(true);
      expect(message).toContain(value);
    },
  );

  it('options that are not an object are refused', () => {
    for (const bad of [null, undefined, 'shards', 42, []]) {
      const error = thrown(() => new Balancer(bad as never));
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe('options');
    }
  });

  it('gives the documented message for maxQueued -1, exactly', () => {
    expect(() => new Balancer(options({ maxQueued: -1 }))).toThrow(
      new ConfigError('maxQueued', 'must be a positive integer', -1),
    );
    const error = thrown(() => new Balancer(options({ maxQueued: -1 }))) as ConfigError;
    expect(error.message).toBe('`maxQueued` must be a positive integer, got -1 (number)');
    expect(error.value).toBe(-1);
  });

  it('an unknown option lists the known ones', () => {
    const error = thrown(() => new Balancer(options({ maxInflight: 10 }))) as ConfigError;
    expect(error.message).toMatch(
      /^`maxInflight` is not a known option \(known: .*maxInFlight.*\)/,
    );
  });

  it('an unknown option set to undefined is tolerated (spread of optional fields)', () => {
    expect(() => new Balancer(options({ maxInflight: undefined }))).not.toThrow();
  });

  it.each([
    ['maxQueued Infinity', { maxQueued: Number.POSITIVE_INFINITY }],
    ['maxInFlight Infinity', { maxInFlight: Number.POSITIVE_INFINITY }],
    ['timeoutMs Infinity', { timeoutMs: Number.POSITIVE_INFINITY }],
    ['a fractional weight', { shards: [{ ...shard, weight: 0.5 }] }],
    ['retry false', { retry: false }],
    ['health false', { health: false }],
    ['budget false', { retry: { budget: false } }],
    ['zero backoff', { retry: { backoff: { baseMs: 0, maxMs: 0 } } }],
    ['percentages at their bounds', { health: { maxEjectedPercent: 0, panicThreshold: 100 } }],
    ['budget ratio at its bounds', { retry: { budget: { ratio: 0, minPerSecond: 0 } } }],
    ['labels and zone', { shards: [{ ...shard, zone: 'z1', labels: { region: 'eu' } }] }],
    ["overflow 'reject'", { overflow: 'reject' }],
  ])('accepts valid edge values: %s', (_name, extra) => {
    expect(() => new Balancer(options(extra))).not.toThrow();
  });
});

describe('run options validation', () => {
  const RUN_INVALID: [string, Record<string, unknown>, string, string][] = [
    ['key a number', { key: 42 }, 'key', '42 (number)'],
    ['key an object', { key: { id: 1 } }, 'key', 'an object (Object)'],
    ['timeoutMs 0', { timeoutMs: 0 }, 'timeoutMs', '0 (number)'],
    ['timeoutMs -1', { timeoutMs: -1 }, 'timeoutMs', '-1 (number)'],
    ['unknown run option', { retries: 2 }, 'run options.retries', '2 (number)'],
    ["idempotent 'yes'", { idempotent: 'yes' }, 'idempotent', '"yes" (string)'],
    ['bytes -1', { bytes: -1 }, 'bytes', '-1 (number)'],
    ['bytes 1.5', { bytes: 1.5 }, 'bytes', '1.5 (number)'],
    ['signal not an AbortSignal', { signal: {} }, 'signal', 'an object (Object)'],
  ];

  it.each(RUN_INVALID)(
    '%s → run() rejects with ConfigError',
    async (_name, runOptions, field, value) => {
      const balancer = new Balancer(options({}));
      let called = false;
      const error = await balancer
        .run(async () => {
          called = true;
        }, runOptions as never)
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(ConfigError);
      expect(error).toBeInstanceOf(TypeError);
      expect((error as ConfigError).code).toBe('SHARDWISE_CONFIG');
      expect((error as ConfigError).field).toBe(field);
      expect((error as ConfigError).message).toContain(`\`${field}\``);
      expect((error as ConfigError).message).toContain(value);
      expect(called).toBe(false);
      // a refused run is not admitted: nothing to drain
      expect(balancer.stats()).toMatchObject({ inFlight: 0, queued: 0 });
      await balancer.drain();
    },
  );

  it('run options that are not an object reject', async () => {
    const balancer = new Balancer(options({}));
    await expect(balancer.run(async () => 1, 'fast' as never)).rejects.toThrow(
      '`run options` must be an object, got "fast" (string)',
    );
  });

  it('run() never throws synchronously for bad options', () => {
    const balancer = new Balancer(options({}));
    let promise: Promise<unknown> | undefined;
    expect(() => {
      promise = balancer.run(async () => 1, { key: 42 } as never);
    }).not.toThrow();
    return expect(promise).rejects.toBeInstanceOf(ConfigError);
  });
});
