/**
 * Ingestion through faults, on virtual time: a blocked or slow home holds only its own records
 * (the others keep flowing), push-back waits without spending attempts, a home unreachable for a
 * whole delivery timeout is down (its records fail at once, but for one batch that probes it), and
 * the balancer's one retry setting reaches batches.
 */
import { describe, expect, it } from 'vitest';
import {
  consistentHash,
  PushBackError,
  RetriesExhaustedError,
  type ShardState,
  ShardUnavailableError,
  TimeoutError,
} from '../../src/index.js';
import { fleet, ManualClock, type Rec, run } from './helpers.js';

/** An error that proves the request never left (a refused connection). */
const refused = () => Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });

/** `n` records whose keys spread over the homes of `balancer` (ids 0 … n − 1). */
function keyed(n: number): Rec[] {
  return Array.from({ length: n }, (_, id) => ({ id, key: `tenant-${id % 64}` }));
}

/** Advances virtual time in steps until `done()` (bounded). */
async function until(clock: ManualClock, done: () => boolean, limitMs = 60_000, stepMs = 5) {
  for (let t = 0; !done(); t += stepMs) {
    if (t > limitMs) throw new Error(`not done after ${limitMs} ms of virtual time`);
    clock.advance(stepMs);
    await new Promise((r) => setImmediate(r));
  }
}

describe('a blocked home holds only its own records', () => {
  it('the other homes are written while one home answers nothing; then it is written too', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 4, picker: consistentHash(), maxInFlightPerShard: 2 });
    const data = keyed(4_000);
    const blockedHome = balancer.homeOf(data[0]!.key!)!;
    const ofBlocked = data.filter((r) => balancer.homeOf(r.key!) === blockedHome).length;
    let open = false;
    const waiting: (() => void)[] = [];
    const written = new Map<string, number>();
    const ingestion = balancer.ingest(data, {
      key: (r) => r.key,
      batch: { maxRecords: 50, lingerMs: 5, maxHeldRecords: 2_000 },
      send: async (shard: ShardState<string>, batch: Rec[]) => {
        if (shard.id === blockedHome && !open) await new Promise<void>((r) => waiting.push(r));
        await new Promise<void>((r) => clock.setTimer(r, 1));
        written.set(shard.id, (written.get(shard.id) ?? 0) + batch.length);
      },
    });
    // Every record of the other homes is written while the blocked home holds its slots:
    // nothing of it stands in their way (no slot, no queue place, no share of the held bound).
    // The source reaches the blocked home's share only after the others' records are done.
    const others = data.length - ofBlocked;
    const writtenElsewhere = () =>
      [...written].filter(([id]) => id !== blockedHome).reduce((sum, [, n]) => sum + n, 0);
    await until(clock, () => writtenElsewhere() >= Math.min(others, 1_000));
    expect(written.get(blockedHome) ?? 0).toBe(0);
    // What the blocked home holds stays within its share: 2 000 held over 4 homes.
    const progress = (balancer.stats().shards.find((s) => s.id === blockedHome) ?? { inFlight: 0 })
      .inFlight;
    expect(progress).toBe(2);
    open = true;
    for (const resolve of waiting.splice(0)) resolve();
    const summary = await run(clock, ingestion);
    expect(summary.written).toBe(data.length);
    expect(summary.failed + summary.uncertain).toBe(0);
    expect(written.get(blockedHome)).toBe(ofBlocked);
  });

  it('a slow home does not starve a fast one: the fast home is done while the slow one still runs', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 2, picker: consistentHash(), maxInFlightPerShard: 1 });
    const data = Array.from({ length: 200 }, (_, id) => ({ id, key: `t${id % 16}` }));
    const slow = balancer.homeOf(data[0]!.key!)!;
    const doneAt = new Map<string, number>();
    let slowLeft = data.filter((r) => balancer.homeOf(r.key) === slow).length;
    let fastLeft = data.length - slowLeft;
    const ingestion = balancer.ingest(data, {
      key: (r) => r.key,
      batch: { maxRecords: 5, lingerMs: 5 },
      send: async (shard: ShardState<string>, batch: Rec[]) => {
        await new Promise<void>((r) => clock.setTimer(r, shard.id === slow ? 1_000 : 1));
        if (shard.id === slow) slowLeft -= batch.length;
        else fastLeft -= batch.length;
        if (fastLeft === 0 && !doneAt.has('fast')) doneAt.set('fast', clock.now());
        if (slowLeft === 0 && !doneAt.has('slow')) doneAt.set('slow', clock.now());
      },
    });
    const summary = await run(clock, ingestion, 200_000);
    expect(summary.written).toBe(200);
    // One batch of 5 a second on the slow home: it takes ~20 s; the fast home is done in < 1 s.
    expect(doneAt.get('fast')!).toBeLessThan(1_000);
    expect(doneAt.get('slow')!).toBeGreaterThan(10_000);
  });
});

describe('push-back waits; only failures spend attempts', () => {
  it('a home pushing back for 5 s (1 s at a time) loses no record, whatever retry.attempts', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, {
      shards: 2,
      picker: consistentHash(),
      retry: { attempts: 2, budget: false },
    });
    const data = Array.from({ length: 300 }, (_, id) => ({ id, key: `t${id % 8}` }));
    let pushBacks = 0;
    const summary = await run(
      clock,
      balancer.ingest(data, {
        key: (r) => r.key,
        batch: { maxRecords: 20, lingerMs: 5 },
        send: async (shard: ShardState<string>) => {
          await new Promise<void>((r) => clock.setTimer(r, 1));
          if (shard.id === 'a' && clock.now() < 5_000) {
            pushBacks++;
            throw new PushBackError(1_000);
          }
        },
      }),
      60_000,
    );
    expect(pushBacks).toBeGreaterThan(2);
    expect(summary.written).toBe(300);
    expect(summary.failed).toBe(0);
  });

  it("a run's push-back spends no attempt either, and waits no longer than its delivery deadline", async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, {
      shards: 1,
      retry: { attempts: 1, budget: false },
      deliveryTimeoutMs: 3_500,
    });
    let calls = 0;
    const ok = balancer.run(async () => {
      calls++;
      if (calls <= 3) throw new PushBackError(1_000);
      return 'stored';
    });
    expect(await run(clock, ok)).toBe('stored');
    expect(calls).toBe(4);
    // Pushing back past the deadline: the run fails, naming the wait.
    let more = 0;
    const late = balancer.run(async () => {
      more++;
      throw new PushBackError(1_000);
    });
    const error = await run(clock, late).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetriesExhaustedError);
    expect((error as Error).message).toMatch(/past its delivery deadline/);
    expect(more).toBe(4); // at 0, 1 s, 2 s, 3 s: the next wait would end past 3.5 s
  });
});

describe('one retry setting', () => {
  it("the balancer's retry reaches batches: 8 attempts write a batch that fails 7 times", async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, {
      shards: 1,
      retry: { attempts: 8, backoff: { baseMs: 1, maxMs: 1 }, budget: false },
    });
    let sends = 0;
    const summary = await run(
      clock,
      balancer.ingest([{ id: 1 }], {
        batch: { maxRecords: 1 },
        send: async () => {
          if (++sends < 8) throw new Error(`boom ${sends}`);
        },
      }),
    );
    expect(sends).toBe(8);
    expect(summary.written).toBe(1);
  });

  it("the balancer's retry reaches records refused one by one, too", async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, {
      shards: 1,
      retry: { attempts: 6, backoff: { baseMs: 1, maxMs: 1 }, budget: false },
    });
    let sends = 0;
    const summary = await run(
      clock,
      balancer.ingest([{ id: 1 }], {
        batch: { maxRecords: 1 },
        send: async () => {
          sends++;
          return sends < 6 ? { failed: [{ index: 0 }] } : undefined;
        },
      }),
    );
    expect(sends).toBe(6);
    expect(summary.written).toBe(1);
  });

  it('batch.retry overrides it, for whole batches and refused records alike', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 1, retry: { attempts: 8, budget: false } });
    let sends = 0;
    const summary = await run(
      clock,
      balancer.ingest([{ id: 1 }], {
        batch: { maxRecords: 1, retry: { attempts: 2, backoff: { baseMs: 1, maxMs: 1 } } },
        send: async () => {
          sends++;
          throw new Error('boom');
        },
      }),
    );
    expect(sends).toBe(2);
    expect(summary.failed).toBe(1);
  });
});

describe('a home that cannot be reached', () => {
  it('waits for it until the delivery deadline, then its records fail naming it; later ones fail at once', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, {
      shards: 2,
      picker: consistentHash(),
      maxInFlightPerShard: 2,
      health: { baseEjectionMs: 600_000 },
    });
    const dead = 'a';
    const sentTo = new Map<string, number>();
    const data = Array.from({ length: 2_000 }, (_, id) => ({ id, key: `t${id % 32}` }));
    const failedAt: number[] = [];
    const ingestion = balancer.ingest(data, {
      key: (r) => r.key,
      deliveryTimeoutMs: 10_000,
      batch: { maxRecords: 20, lingerMs: 5, maxHeldRecords: 400 },
      onFailed: () => failedAt.push(clock.now()),
      send: async (shard: ShardState<string>) => {
        sentTo.set(shard.id, (sentTo.get(shard.id) ?? 0) + 1);
        await new Promise<void>((r) => clock.setTimer(r, 1));
        if (shard.id === dead) throw refused();
      },
    });
    const summary = await run(clock, ingestion, 120_000);
    const ofDead = data.filter((r) => balancer.homeOf(r.key) === dead).length;
    expect(summary.written).toBe(data.length - ofDead);
    expect(summary.failed).toBe(ofDead);
    for (const { error } of summary.failures) {
      expect(error).toBeInstanceOf(ShardUnavailableError);
      expect((error as ShardUnavailableError).shardId).toBe(dead);
    }
    // The first ones waited the whole deadline; once the home is down, records fail at once, but
    // for one probing batch at a time (waiting at most 5 s): the whole run costs about one
    // deadline, not one deadline per batch — and the dead home is not hammered meanwhile.
    // (A retry whose backoff — 2 s at most — would end past the deadline gives up at once.)
    expect(Math.min(...failedAt)).toBeGreaterThanOrEqual(10_000 - 2_000);
    expect(Math.max(...failedAt)).toBeLessThanOrEqual(10_000 + 5_000 + 100);
    expect(sentTo.get(dead)!).toBeLessThan(40);
  });

  it('a home back before the deadline takes its records again (early probes), none lost', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, {
      shards: 3,
      picker: consistentHash(),
      maxInFlightPerShard: 2,
      // Without early probes the home would wait for the whole ejection: ten minutes.
      health: { baseEjectionMs: 600_000 },
    });
    const data = Array.from({ length: 3_000 }, (_, id) => ({ id, key: `t${id % 48}` }));
    const restarting = balancer.homeOf(data[0]!.key)!;
    let writtenThereAt = -1;
    const summary = await run(
      clock,
      balancer.ingest(data, {
        key: (r) => r.key,
        batch: { maxRecords: 20, lingerMs: 5, maxHeldRecords: 600 },
        send: async (shard: ShardState<string>) => {
          await new Promise<void>((r) => clock.setTimer(r, 2));
          const down = clock.now() < 2_000;
          if (shard.id === restarting && down) throw refused();
          if (shard.id === restarting && writtenThereAt < 0) writtenThereAt = clock.now();
        },
      }),
      120_000,
    );
    expect(summary.written).toBe(data.length);
    expect(summary.failed + summary.uncertain).toBe(0);
    // Down for its first 2 s: ejected at once; early probes at +250, +500, +1 000, +2 000 ms… the
    // first after 2 s succeeds: written again within about 2 s of the restart, not after the
    // 10-minute ejection.
    expect(writtenThereAt).toBeGreaterThanOrEqual(2_000);
    expect(writtenThereAt).toBeLessThan(2_000 + 2_100);
  });
});

describe('drain({ timeoutMs })', () => {
  it('rejects with a TimeoutError naming what still runs; the runs go on', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, { shards: 1 });
    let finish!: () => void;
    const hung = balancer.run(() => new Promise<string>((r) => (finish = () => r('late'))));
    const drained = balancer.drain({ timeoutMs: 1_000 }).then(
      () => 'drained',
      (error: Error) => error,
    );
    clock.advance(999);
    await new Promise((r) => setImmediate(r));
    clock.advance(1);
    const error = (await drained) as Error;
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.message).toMatch(/1 run\(s\) had not settled/);
    finish();
    expect(await hung).toBe('late');
    expect(await balancer.drain({ timeoutMs: 1_000 }).then(() => 'drained')).toBe('drained');
    await expect(balancer.drain({ timeoutMs: -1 })).rejects.toThrow(/drain\.timeoutMs/);
  });
});
