import { describe, expect, it } from 'vitest';
import {
  aimd,
  Balancer,
  type ConcurrencyLimit,
  ConfigError,
  fixed,
  gradient,
  roundRobin,
} from '../../src/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { flush, makeBalancer, shardsOf } from '../helpers.js';

describe('adaptive limits in the Balancer', () => {
  it('gives each shard its own limit, reports it in stats and the limit event', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b']),
      picker: roundRobin(),
      maxInFlightPerShard: aimd({ initial: 2, max: 10 }),
      retry: false,
    });
    const changes: { shardId: string; limit: number; previous: number }[] = [];
    balancer.on('limit', (event) => changes.push(event));
    // Two calls on shard a end while both are outstanding: in use → +1 each.
    const wait = (ms: number) => () =>
      new Promise<string>((resolve) => clock.setTimer(() => resolve('ok'), ms));
    const runs = [balancer.run(wait(10)), balancer.run(wait(10)), balancer.run(wait(10))];
    await flush();
    clock.advance(10);
    await Promise.all(runs);
    const limits = Object.fromEntries(balancer.stats().shards.map((s) => [s.id, s.limit]));
    // a ran two calls at once (2 × 2 ≥ 2: in use) → 3; its second end saw 1 × 2 < 3 → no change.
    // b ran one call against a limit of 2 (1 × 2 ≥ 2: in use) → 3.
    expect(limits).toEqual({ a: 3, b: 3 });
    expect(changes).toEqual([
      { shardId: 'a', limit: 3, previous: 2 },
      { shardId: 'b', limit: 3, previous: 2 },
    ]);
  });

  it('does not offer a shard at its current limit: runs queue and ready() waits', async () => {
    const { balancer } = makeBalancer({
      shards: shardsOf(['a']),
      maxInFlightPerShard: fixed(2),
      maxQueued: 1,
      random: seededRandom(2),
    });
    const gate: (() => void)[] = [];
    const task = () => new Promise<void>((resolve) => gate.push(resolve));
    const runs = [balancer.run(task), balancer.run(task), balancer.run(task)];
    expect(balancer.stats()).toMatchObject({ inFlight: 2, queued: 1 });
    let ready = false;
    void balancer.ready().then(() => {
      ready = true;
    });
    await flush();
    expect(ready).toBe(false);
    gate.shift()!();
    await flush();
    expect(ready).toBe(true);
    expect(balancer.stats()).toMatchObject({ inFlight: 2, queued: 0 });
    for (const open of gate.splice(0)) open();
    await flush();
    gate.shift()?.();
    await Promise.all(runs);
  });

  it('shrinks the limit of a shard whose calls time out', async () => {
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a']),
      maxInFlightPerShard: aimd({ initial: 10, backoffRatio: 0.5 }),
      timeoutMs: 100,
      retry: false,
      health: false,
      random: seededRandom(3),
    });
    const hang = () => new Promise<never>(() => {});
    const run = balancer.run(hang).catch((error: unknown) => error);
    clock.advance(100);
    expect(((await run) as Error).name).toBe('TimeoutError');
    expect(balancer.stats().shards[0]!.limit).toBe(5);
  });

  it('accepts a ConcurrencyLimit object, cloned per shard when it offers clone()', () => {
    let made = 0;
    const make = (): ConcurrencyLimit & { clone(): ConcurrencyLimit } => ({
      limit: 7,
      onSample() {},
      clone() {
        made++;
        return make();
      },
    });
    const balancer = new Balancer({
      shards: [
        { id: 'a', target: 1 },
        { id: 'b', target: 2 },
      ],
      maxInFlightPerShard: make(),
    });
    expect(made).toBe(2);
    expect(balancer.stats().shards.map((s) => s.limit)).toEqual([7, 7]);
  });

  it('rejects an object that is not a limit', () => {
    expect(
      () =>
        new Balancer({
          shards: [{ id: 'a', target: 1 }],
          maxInFlightPerShard: { max: 3 } as never,
        }),
    ).toThrow(ConfigError);
  });

  it('rejects a factory whose product is not a limit, by name, before any run can wait on it', () => {
    const field = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return { field: (error as ConfigError).field, message: (error as Error).message };
      }
      throw new Error('did not throw');
    };
    // The maker instead of the factory: gradient() would make a factory, not a limit.
    const maker = field(
      () =>
        new Balancer({ shards: [{ id: 'a', target: 1 }], maxInFlightPerShard: gradient as never }),
    );
    expect(maker.field).toBe('maxInFlightPerShard');
    expect(maker.message).toMatch(/a limit factory returned a function/);
    expect(maker.message).toMatch(/gradient\(\), not its maker/);
    const products: unknown[] = [5, undefined, { limit: 4 }, { limit: Number.NaN, onSample() {} }];
    for (const product of products) {
      const made = field(
        () =>
          new Balancer({
            shards: [{ id: 'a', target: 1 }],
            maxInFlightPerShard: (() => product) as never,
          }),
      );
      expect(made.field).toBe('maxInFlightPerShard');
      expect(made.message).toMatch(/a limit factory returned/);
    }
    expect(
      field(
        () =>
          new Balancer({
            shards: [{ id: 'a', target: 1 }],
            maxInFlightPerShard: { limit: Number.NaN, onSample() {} } as never,
          }),
      ).field,
    ).toBe('maxInFlightPerShard');
    // A clone that is not a limit, and a shard added later: refused there, membership unchanged.
    const cloning = { limit: 2, onSample() {}, clone: () => ({}) };
    expect(
      field(() => new Balancer({ shards: [{ id: 'a', target: 1 }], maxInFlightPerShard: cloning }))
        .message,
    ).toMatch(/its clone\(\) returned/);
    let calls = 0;
    const balancer = new Balancer({
      shards: [{ id: 'a', target: 1 }],
      maxInFlightPerShard: (() => (++calls === 1 ? fixed(3)() : gradient)) as never,
    });
    expect(field(() => balancer.addShard({ id: 'b', target: 2 })).field).toBe(
      'maxInFlightPerShard',
    );
    expect(balancer.shards.map((s) => s.id)).toEqual(['a']);
  });

  it('keeps the last cap when a custom limit turns NaN: every run still completes', async () => {
    let limit = 2;
    const { clock, balancer } = makeBalancer({
      shards: [{ id: 'a', target: 1 }],
      maxInFlightPerShard: () => ({
        get limit() {
          return limit;
        },
        onSample() {
          limit = Number.NaN;
        },
      }),
      retry: false,
      random: undefined,
    });
    const wait = () => new Promise<string>((resolve) => clock.setTimer(() => resolve('ok'), 10));
    const settled: string[] = [];
    const runs = Array.from({ length: 6 }, () =>
      balancer.run(wait).then((v) => {
        settled.push(v);
      }),
    );
    for (let round = 0; round < 3; round++) {
      await flush();
      // Two at a time: the cap of 2 holds after the limit turned NaN.
      expect(balancer.stats().shards[0]!.inFlight).toBe(2);
      expect(balancer.stats().shards[0]!.limit).toBe(2);
      clock.advance(10);
    }
    await Promise.all(runs);
    expect(settled).toHaveLength(6);
  });
});
