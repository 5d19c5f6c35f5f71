import { afterAll, beforeAll, describe, it } from 'vitest';
import { createHttpBalancer, type HttpBalancer } from '../../src/http/index.js';
import { Balancer } from '../../src/index.js';
import { simulate } from '../../src/testing/index.js';
import { expectConfigError, holeInTheMiddle, notABag, sparse } from './shapes.js';

/**
 * Bad input shapes that still escape as a raw `TypeError` or are silently ignored, in files the
 * core owns (`retry/options.ts`, `routing/requirement.ts`, `http/balancer.ts`,
 * `testing/simulate-options.ts`). Each names the promise it checks: a `ConfigError` naming the
 * field. Kept apart from entries.test.ts so the fixes there can be told from these.
 */
const shards = [{ id: 'a', target: 0 }];

describe('the core Balancer', () => {
  it('new Balancer({ retry: null }) is a ConfigError, not the default retry policy', async () => {
    await expectConfigError(
      'retry',
      () => new Balancer({ shards, retry: null as never }),
      /^retry$/,
    );
  });

  it.each([
    ['a Map', new Map([['region', 'eu']])],
    ['a Date', new Date(0)],
  ])(
    'run(fn, { require: %s }) is a ConfigError, not a rule that allows every shard',
    async (_name, bad) => {
      const balancer = new Balancer({ shards: [{ id: 'a', target: 0, labels: { region: 'us' } }] });
      await expectConfigError(
        'require',
        () => balancer.run(async () => 'ran', { require: bad as never }),
        /^require$/,
      );
      await balancer.close();
    },
  );
});

describe('HttpBalancer.sendTo', () => {
  let http: HttpBalancer;
  beforeAll(() => {
    http = createHttpBalancer({ origins: ['http://127.0.0.1:1'] });
  });
  afterAll(async () => {
    await http.close();
  });

  it.each([
    ['a number', 42],
    ['a string', 'ctx'],
    ['an object without onAbort', {}],
    ['a Map', new Map()],
    ['a Date', new Date(0)],
  ])(
    'sendTo(shard, request, %s) is a ConfigError naming ctx, not "ctx.onAbort is not a function"',
    async (_name, bad) => {
      await expectConfigError(
        'sendTo ctx',
        () => http.sendTo(http.shards[0]!, { path: '/' }, bad as never),
        /^ctx/,
      );
    },
  );
});

describe('simulate()', () => {
  const shard = { id: 'a', latency: 1 };
  const base = { shards: [shard], requests: 10, seed: 1 };

  it.each([
    ['a hole first', sparse({ atMs: 1, latency: 2 })],
    ['a hole in the middle', holeInTheMiddle({ atMs: 1, latency: 2 })],
  ])(
    'simulate({ shards: [{ schedule: %s }] }) is a ConfigError naming the hole',
    async (_name, bad) => {
      await expectConfigError(
        'schedule',
        () => simulate({ ...base, shards: [{ ...shard, schedule: bad as never }] }),
        /^shards\[0\]\.schedule/,
      );
    },
  );

  it.each(notABag().filter(([name]) => name !== 'a function'))(
    'simulate({ balancerOptions: %s }) is a ConfigError naming balancerOptions',
    async (_name, bad) => {
      await expectConfigError(
        'balancerOptions',
        () => simulate({ ...base, balancerOptions: bad as never }),
        /^balancerOptions/,
      );
    },
  );
});
