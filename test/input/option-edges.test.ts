import { describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { aimd, Balancer, ConfigError, consistentHash } from '../../src/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';

const shards = [
  { id: 'a', target: 'a' },
  { id: 'b', target: 'b' },
];
const send = async () => {};

function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (error) {
    return error;
  }
  return undefined;
}
async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('testing kit: ManualClock and seededRandom take any argument', () => {
  it('ManualClock.advance(NaN) is a ConfigError, not "fire every timer"', () => {
    const clock = new ManualClock();
    let fired = 0;
    clock.setTimer(() => fired++, 1_000);
    clock.setTimer(() => fired++, 60_000);
    const error = thrown(() => clock.advance(Number.NaN));
    expect(fired).toBe(0); // today: both fire and now() jumps to 60 000
    expect(clock.now()).toBe(0);
    expect(error).toBeInstanceOf(ConfigError);
  });

  it("ManualClock.advance('10') is a ConfigError, not a string clock", () => {
    const clock = new ManualClock();
    const error = thrown(() => clock.advance('10' as never));
    expect(typeof clock.now()).toBe('number'); // today: now() === "010"
    expect(error).toBeInstanceOf(ConfigError);
  });

  it('ManualClock.advance(-5) is a ConfigError (time cannot go back), not silently ignored', () => {
    expect(thrown(() => new ManualClock().advance(-5))).toBeInstanceOf(ConfigError);
  });

  it('new ManualClock(NaN) is a ConfigError, not a clock whose now() is NaN', () => {
    expect(thrown(() => new ManualClock(Number.NaN))).toBeInstanceOf(ConfigError);
  });

  it('seededRandom(NaN) / seededRandom("abc") are ConfigErrors, not seed 0', () => {
    expect(thrown(() => seededRandom(Number.NaN))).toBeInstanceOf(ConfigError);
    expect(thrown(() => seededRandom('abc' as never))).toBeInstanceOf(ConfigError);
  });
});

describe('ingest batch.retry', () => {
  const balancer = new Balancer<string>({ shards });

  it('batch.retry: null is a ConfigError (as the core retry: null is), not the default policy', async () => {
    const error = await rejection(balancer.ingest([1], { send, batch: { retry: null } } as never));
    expect(error).toBeInstanceOf(ConfigError);
  });

  it('batch.retry.budget.ratio: 2 states the expectation (a number from 0 to 1)', async () => {
    const error = (await rejection(
      balancer.ingest([1], { send, batch: { retry: { budget: { ratio: 2 } } } } as never),
    )) as Error;
    expect(error).toBeInstanceOf(ConfigError);
    // today: "`ingest.batch.retry.budget.ratio` is invalid (see RetryBudgetOptions), got 2 (number)"
    expect(error.message).toMatch(/from 0 to 1/);
  });

  it('an unknown key in batch.retry.budget lists the known ones', async () => {
    const error = (await rejection(
      balancer.ingest([1], { send, batch: { retry: { budget: { ratoi: 0.5 } } } } as never),
    )) as Error;
    expect(error).toBeInstanceOf(ConfigError);
    // today: "... is invalid (see RetryBudgetOptions), got \"[redacted]\" (string)"
    expect(error.message).toMatch(/not a known option \(known: ratio, minPerSecond, ttlMs\)/);
  });
});

describe('messages and field paths', () => {
  it('retry.budget.minPerSecond is a rate: its error does not call it a number of ms', () => {
    const error = thrown(
      () => new Balancer({ shards, retry: { budget: { minPerSecond: -1 } } }),
    ) as Error;
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).not.toMatch(/number of ms/);
  });

  it('createHttpBalancer with a repeated origin names origins[1], the option given', async () => {
    const error = thrown(() =>
      createHttpBalancer({ origins: ['http://127.0.0.1:1', 'http://127.0.0.1:1/'] }),
    ) as ConfigError;
    expect(error).toBeInstanceOf(ConfigError);
    // today: field `shards[1].id` — the caller passed no `shards`
    expect(error.field).toMatch(/^origins\[1\]/);
  });

  it('aimd({ min: 20 }) is valid (the default initial fits itself into [min, max], as gradient() does)', () => {
    // today: "`aimd.initial` must be between aimd.min (20) and aimd.max (200), got 10" — for a
    // field the caller never gave
    expect(() => aimd({ min: 20 })).not.toThrow();
    expect(() => aimd({ max: 5 })).not.toThrow();
  });
});

describe('arguments of methods', () => {
  it('homeOf(5) under a keyed picker is a ConfigError, not undefined', async () => {
    const balancer = new Balancer({ shards, picker: consistentHash() });
    expect(balancer.homeOf('user-1')).toBeTypeOf('string');
    const error = thrown(() => balancer.homeOf(5 as never));
    await balancer.close();
    expect(error).toBeInstanceOf(ConfigError);
  });
});
