import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_TIMER_STEP_MS, setLongTimer } from '../../src/base/runtime.js';
import { MAX_DURATION_MS } from '../../src/base/validate.js';
import { createHttpBalancer } from '../../src/http/index.js';
import {
  Balancer,
  ConfigError,
  PushBackError,
  p2c,
  roundRobin,
  systemClock,
  TimeoutError,
} from '../../src/index.js';
import { createS3Balancer, createS3Client } from '../../src/s3/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
import { makeBalancer, processWarnings, tick } from '../helpers.js';
import { sleep, startServer, type TestServer } from '../http/servers.js';
import { clientOptions } from '../s3/server.js';

/**
 * Issue #13: Node's timers hold at most 2³¹ − 1 ms; a longer delay fires after about 1 ms. Every
 * duration shardwise waits — attempt deadlines, ejections, push-back — must wait as long as
 * asked, up to the documented ceiling (365 days); past it, a `ConfigError`.
 */
const TWO_31 = 2 ** 31;
const DAYS_30 = 30 * 24 * 3_600_000;
const DAYS_366 = 366 * 24 * 3_600_000;
const LONG: [string, number][] = [
  ['2³¹ ms', TWO_31],
  ['30 days', DAYS_30],
];

/** What `call` threw or rejected with. */
async function errorOf(call: () => unknown): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  return undefined;
}

/** A function that never settles on its own: the run ends only by its deadline. */
const never = () => new Promise<never>(() => {});

describe('long durations on the virtual clock (the core does not shorten them)', () => {
  it.each(LONG)('timeoutMs of %s fires exactly then', async (_name, ms) => {
    const clock = new ManualClock();
    const { balancer } = makeBalancer({
      clock,
      shards: [{ id: 'a', target: 0 }],
      timeoutMs: ms,
      random: undefined,
    });
    let settled: unknown;
    void balancer.run(never).catch((e: unknown) => {
      settled = e;
    });
    await tick(clock, ms - 1);
    expect(settled).toBeUndefined();
    await tick(clock, 1);
    expect(settled).toBeInstanceOf(TimeoutError);
    await balancer.close();
  });

  it.each(LONG)(
    'health.baseEjectionMs of %s holds the ejection exactly that long',
    async (_name, ms) => {
      const { clock, balancer } = makeBalancer({
        shards: [
          { id: 'bad', target: 0 },
          { id: 'b', target: 1 },
          { id: 'c', target: 2 },
        ],
        picker: roundRobin(),
        retry: false,
        health: { consecutiveFailures: 1, baseEjectionMs: ms, maxEjectionMs: ms },
      });
      const restored: string[] = [];
      balancer.on('restore', ({ shardId, phase }) => restored.push(`${shardId}:${phase}`));
      await balancer
        .run(async (shard) => {
          if (shard.id === 'bad') throw new Error('boom');
        })
        .catch(() => {});
      expect(balancer.stats().shards[0]!.ejected).toBe(true);
      await tick(clock, ms - 1);
      expect(balancer.stats().shards[0]!.ejected).toBe(true);
      expect(restored).toEqual([]);
      await tick(clock, 1);
      expect(restored).toEqual(['bad:probe']);
      await balancer.close();
    },
  );

  it.each(LONG)('a PushBackError of %s holds its shard exactly that long', async (_name, ms) => {
    const { clock, balancer } = makeBalancer({
      shards: [
        { id: 'pushing', target: 0 },
        { id: 'b', target: 1 },
      ],
      picker: p2c(),
      random: seededRandom(5),
      retry: false,
    });
    let pushed = false;
    const picks: string[] = [];
    balancer.on('pick', ({ shardId }) => picks.push(shardId));
    const once = () =>
      balancer
        .run(async (shard) => {
          if (shard.id === 'pushing' && !pushed) {
            pushed = true;
            throw new PushBackError(ms);
          }
        })
        .catch(() => {});
    for (let i = 0; i < 40 && !pushed; i++) await once();
    expect(pushed).toBe(true);
    picks.length = 0;
    await tick(clock, ms - 1);
    for (let i = 0; i < 20; i++) await once();
    expect(picks).not.toContain('pushing');
    await tick(clock, 1);
    for (let i = 0; i < 40 && !picks.includes('pushing'); i++) await once();
    expect(picks).toContain('pushing');
    await balancer.close();
  });

  it.each(LONG)(
    'a retry that must wait %s for push-back waits exactly that long',
    async (_name, ms) => {
      const { clock, balancer } = makeBalancer({
        shards: [{ id: 'only', target: 0 }],
        random: seededRandom(2),
        // No delivery deadline: the run may wait for push-back as long as the shard asks.
        deliveryTimeoutMs: Number.POSITIVE_INFINITY,
      });
      let calls = 0;
      let settled: unknown;
      void balancer
        .run(
          async () => {
            if (++calls === 1) throw new PushBackError(ms);
            return 'done';
          },
          { idempotent: true },
        )
        .then((v) => {
          settled = v;
        });
      await tick(clock, ms - 1);
      expect(calls).toBe(1);
      await tick(clock, 1);
      expect(calls).toBe(2);
      expect(settled).toBe('done');
      await balancer.close();
    },
  );
});

describe('long durations on the system clock (no timer overflow)', () => {
  const warnings = processWarnings();

  it.each(LONG)(
    'systemClock.setTimer and setLongTimer of %s have not fired after 50 ms',
    async (_name, ms) => {
      let fired = 0;
      const cancels = [
        systemClock.setTimer(() => fired++, ms),
        systemClock.setTimer(() => fired++, ms, true),
        setLongTimer(() => fired++, ms),
      ];
      await sleep(50);
      for (const cancel of cancels) cancel();
      // A delay Node's own setTimeout cannot hold: it would fire after 1 ms, with a
      // TimeoutOverflowWarning (no control timer shows it here: its warning, printed in every
      // `npm test`, read like a failure).
      expect(ms).toBeGreaterThan(MAX_TIMER_STEP_MS);
      expect(fired).toBe(0);
      expect(warnings).not.toContain('TimeoutOverflowWarning');
    },
  );

  it.each(LONG)('a run’s timeoutMs of %s has not fired after 50 ms', async (_name, ms) => {
    const balancer = new Balancer({ shards: [{ id: 'a', target: 0 }], timeoutMs: ms });
    let settled: unknown;
    const run = balancer.run(never).catch((e: unknown) => {
      settled = e;
    });
    await sleep(50);
    expect(settled).toBeUndefined();
    expect(balancer.stats().inFlight).toBe(1);
    await balancer.close({ drain: false });
    await run;
    expect(warnings).not.toContain('TimeoutOverflowWarning');
  });

  it.each(LONG)('an ejection of %s has not ended after 50 ms', async (_name, ms) => {
    const balancer = new Balancer({
      shards: [
        { id: 'bad', target: 0 },
        { id: 'b', target: 1 },
      ],
      picker: roundRobin(),
      retry: false,
      health: { consecutiveFailures: 1, baseEjectionMs: ms, maxEjectionMs: ms },
    });
    const restored: string[] = [];
    balancer.on('restore', ({ shardId }) => restored.push(shardId));
    await balancer
      .run(async () => {
        throw new Error('boom');
      })
      .catch(() => {});
    expect(balancer.stats().shards[0]!.ejected).toBe(true);
    await sleep(50);
    expect(restored).toEqual([]);
    expect(balancer.stats().shards[0]!.ejected).toBe(true);
    await balancer.close();
    expect(warnings).not.toContain('TimeoutOverflowWarning');
  });

  it.each(LONG)(
    'a retry waiting %s for the only shard’s push-back has not started after 50 ms',
    async (_name, ms) => {
      const balancer = new Balancer({
        shards: [{ id: 'only', target: 0 }],
        deliveryTimeoutMs: Number.POSITIVE_INFINITY,
      });
      let calls = 0;
      let settled: unknown;
      const run = balancer
        .run(
          async () => {
            calls++;
            throw new PushBackError(ms);
          },
          { idempotent: true },
        )
        .then(
          (v) => {
            settled = v;
          },
          (e: unknown) => {
            settled = e;
          },
        );
      await sleep(50);
      expect(calls).toBe(1);
      expect(settled).toBeUndefined();
      expect(balancer.stats().retrying).toBe(1);
      await balancer.close({ drain: false });
      await run;
      expect(warnings).not.toContain('TimeoutOverflowWarning');
    },
  );
});

describe('long transport timeouts on real sockets', () => {
  let silent: TestServer;
  beforeAll(async () => {
    silent = await startServer(() => {});
  });
  afterAll(async () => {
    await silent.close();
  });

  it('headersTimeoutMs, bodyTimeoutMs and timeoutMs of 2³¹ ms have not fired after 100 ms', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    const http = createHttpBalancer({
      origins: [silent.origin],
      headersTimeoutMs: TWO_31,
      bodyTimeoutMs: TWO_31,
      keepAliveTimeoutMs: TWO_31,
      keepAliveProbeMs: TWO_31,
      timeoutMs: TWO_31,
    });
    let settled: unknown;
    void http.request({ method: 'POST', path: '/', body: 'x' }).then(
      (r) => {
        settled = r;
      },
      (e: unknown) => {
        settled = e;
      },
    );
    await sleep(100);
    process.off('warning', onWarning);
    expect(settled).toBeUndefined();
    expect(http.stats().shards[0]!.running).toBe(1);
    expect(warnings.map((w) => w.name)).not.toContain('TimeoutOverflowWarning');
    await http.close({ drain: false });
  });
});

describe('a Retry-After of 2³¹ ms and 30 days, on real sockets and the virtual clock', () => {
  let advice = '';
  let pushing: TestServer;
  let other: TestServer;
  beforeAll(async () => {
    pushing = await startServer((_req, res) => {
      res.statusCode = 429;
      res.setHeader('retry-after', advice);
      res.end('not now');
    });
    other = await startServer((_req, res) => res.end('ok'));
  });
  afterAll(async () => {
    await Promise.all([pushing.close(), other.close()]);
  });

  it.each(LONG)(
    'holds the shard exactly %s (maxRetryAfterMs raised to allow it)',
    async (_name, ms) => {
      const seconds = Math.ceil(ms / 1000);
      advice = String(seconds);
      const clock = new ManualClock();
      const http = createHttpBalancer({
        origins: [pushing.origin, other.origin],
        picker: p2c(),
        clock,
        random: seededRandom(9),
        maxRetryAfterMs: 31 * 24 * 3_600_000,
        retry: { backoff: { baseMs: 0, maxMs: 0 } },
      });
      pushing.requests = 0;
      const send = () => http.request({ method: 'POST', path: '/', body: 'x' });
      for (let i = 0; i < 50 && pushing.requests === 0; i++) await send();
      expect(pushing.requests).toBe(1);
      clock.advance(seconds * 1000 - 1);
      for (let i = 0; i < 20; i++) await send();
      expect(pushing.requests).toBe(1);
      clock.advance(1);
      for (let i = 0; i < 50 && pushing.requests === 1; i++) await send();
      expect(pushing.requests).toBe(2);
      await http.close();
    },
  );
});

describe('durations past the ceiling (365 days) are a ConfigError', () => {
  const shards = [{ id: 'a', target: 0 }];
  const cases: [string, () => unknown][] = [
    ['timeoutMs', () => new Balancer({ shards, timeoutMs: DAYS_366 })],
    ['health.baseEjectionMs', () => new Balancer({ shards, health: { baseEjectionMs: DAYS_366 } })],
    ['health.maxEjectionMs', () => new Balancer({ shards, health: { maxEjectionMs: DAYS_366 } })],
    [
      'health.failureWindowMs',
      () => new Balancer({ shards, health: { failureWindowMs: DAYS_366 } }),
    ],
    [
      'retry.backoff.maxMs',
      () => new Balancer({ shards, retry: { backoff: { maxMs: DAYS_366 } } }),
    ],
    ['spillAfterMs', () => new Balancer({ shards, spillAfterMs: DAYS_366 })],
    ['retryAfterMs', () => new PushBackError(DAYS_366)],
    [
      'maxRetryAfterMs',
      () => createHttpBalancer({ origins: ['http://127.0.0.1:1'], maxRetryAfterMs: DAYS_366 }),
    ],
    [
      'headersTimeoutMs',
      () => createHttpBalancer({ origins: ['http://127.0.0.1:1'], headersTimeoutMs: DAYS_366 }),
    ],
    [
      'bodyTimeoutMs',
      () => createHttpBalancer({ origins: ['http://127.0.0.1:1'], bodyTimeoutMs: DAYS_366 }),
    ],
    [
      'keepAliveTimeoutMs',
      () => createHttpBalancer({ origins: ['http://127.0.0.1:1'], keepAliveTimeoutMs: DAYS_366 }),
    ],
    [
      'maxConnectionAgeMs',
      () => createHttpBalancer({ origins: ['http://127.0.0.1:1'], maxConnectionAgeMs: DAYS_366 }),
    ],
    [
      'timeoutMs',
      () => createHttpBalancer({ origins: ['http://127.0.0.1:1'], timeoutMs: DAYS_366 }),
    ],
    ['maxRetryAfterMs', () => s3With({ maxRetryAfterMs: DAYS_366 })],
    ['defaultRetryAfterMs', () => s3With({ defaultRetryAfterMs: DAYS_366 })],
    ['timeoutMs', () => s3With({ timeoutMs: DAYS_366 })],
  ];

  function s3With(extra: Record<string, number>) {
    const client = createS3Client(clientOptions('http://127.0.0.1:1'));
    try {
      return createS3Balancer({ targets: [{ client, bucket: 'bucket-a' }], ...extra });
    } finally {
      client.destroy();
    }
  }

  it.each(cases)('%s', (field, make) => {
    let error: unknown;
    try {
      make();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toBe(field);
    expect((error as ConfigError).message).toContain('365 days');
  });

  it('run(), close() and request() refuse a timeoutMs past the ceiling', async () => {
    const balancer = new Balancer({ shards });
    await expect(balancer.run(never, { timeoutMs: DAYS_366 })).rejects.toBeInstanceOf(ConfigError);
    // close() checks its options before it returns a promise: a throw or a rejection.
    expect(await errorOf(() => balancer.close({ timeoutMs: DAYS_366 }))).toBeInstanceOf(
      ConfigError,
    );
    await balancer.close();
    const http = createHttpBalancer({ origins: ['http://127.0.0.1:1'] });
    await expect(http.request({ timeoutMs: DAYS_366 })).rejects.toBeInstanceOf(ConfigError);
    await http.close();
  });

  it('the ceiling itself is accepted', () => {
    expect(MAX_DURATION_MS).toBe(365 * 24 * 3_600_000);
    const balancer = new Balancer({ shards, timeoutMs: MAX_DURATION_MS });
    expect(new PushBackError(MAX_DURATION_MS).retryAfterMs).toBe(MAX_DURATION_MS);
    void balancer.close();
  });
});
