import { describe, expect, it } from 'vitest';
import { peakEwma, type ShardState } from '../../src/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
import { flush, makeBalancer } from '../helpers.js';

/**
 * The real Balancer on a manual clock, with shards as functions whose behaviour follows a
 * schedule: they fail, hang, recover, and are removed and added while 100 000 idempotent writes
 * flow. Nothing may be lost, nothing may settle twice, and since a healthy shard exists all
 * along, no write may be reported failed.
 */
type Mode = 'ok' | 'fail' | 'hang' | 'flaky';

describe('a failing fleet (simulated, deterministic)', () => {
  it('delivers 100 000 idempotent writes while shards fail, hang, recover and change', async () => {
    const clock = new ManualClock();
    const rnd = seededRandom(99);
    const modes = new Map<string, Mode>();
    const spec = (id: string) => {
      modes.set(id, 'ok');
      return { id, target: id };
    };
    const { balancer } = makeBalancer({
      clock,
      shards: Array.from({ length: 8 }, (_, i) => spec(`s${i}`)),
      picker: peakEwma(),
      maxInFlightPerShard: 64,
      timeoutMs: 50,
      retry: { attempts: 5, backoff: { baseMs: 5, maxMs: 40 } },
      random: seededRandom(7),
    });
    const delivered = new Map<number, number>(); // id → deliveries
    const settled = new Uint8Array(100_000);
    let failed = 0;
    let twice = 0;
    const send = (id: number) => (shard: ShardState<string>) =>
      new Promise<void>((resolve, reject) => {
        const mode = modes.get(shard.target);
        if (mode === 'hang') return; // never answers: the timeout cuts it
        clock.setTimer(
          () => {
            if (mode === 'fail' || (mode === 'flaky' && rnd() < 0.5))
              reject(new Error(`${shard.id} failed`));
            else {
              delivered.set(id, (delivered.get(id) ?? 0) + 1);
              resolve();
            }
          },
          2 + rnd() * 6,
        );
      });

    const schedule: [number, () => void][] = [
      [1_000, () => modes.set('s2', 'fail')],
      [2_000, () => modes.set('s5', 'hang')],
      [3_000, () => modes.set('s2', 'ok')],
      [4_000, () => modes.set('s5', 'ok')],
      [5_000, () => void balancer.removeShard('s7', { drain: false })],
      [5_500, () => balancer.addShard(spec('n1'))],
      [6_000, () => modes.set('s3', 'flaky')],
      [8_000, () => modes.set('s3', 'ok')],
      [
        8_500,
        () =>
          void balancer.setShards([
            ...balancer.shards.map((s) => ({ id: s.id, target: s.target })),
            spec('n2'),
          ]),
      ],
    ];
    let next = 0;
    for (let ms = 0; ms < 10_000; ms++) {
      while (schedule[0] !== undefined && schedule[0][0] <= ms) schedule.shift()![1]();
      for (let k = 0; k < 10; k++) {
        const id = next++;
        balancer.run(send(id), { idempotent: true }).then(
          () => {
            if (settled[id]! > 0) twice++;
            settled[id]!++;
          },
          () => {
            if (settled[id]! > 0) twice++;
            settled[id]!++;
            failed++;
          },
        );
      }
      clock.advance(1);
      await flush();
    }
    for (let i = 0; i < 2_000 && balancer.stats().inFlight + balancer.stats().queued > 0; i++) {
      clock.advance(10);
      await flush();
    }
    await balancer.drain();
    expect(next).toBe(100_000);
    expect(twice).toBe(0);
    expect(settled.every((count) => count === 1)).toBe(true);
    expect(failed).toBe(0);
    // Nothing lost: every write that succeeded reached some shard at least once.
    expect(delivered.size).toBe(100_000);
    const stats = balancer.stats();
    expect(stats.completed).toBe(100_000);
    expect(stats.retries).toBeGreaterThan(0);
    expect(stats.shards.map((s) => s.id)).toEqual([
      's0',
      's1',
      's2',
      's3',
      's4',
      's5',
      's6',
      'n1',
      'n2',
    ]);
    expect(stats.shards.find((s) => s.id === 's2')!.ejections).toBeGreaterThan(0);
  });
});
