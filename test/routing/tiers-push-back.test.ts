import { describe, expect, it } from 'vitest';
import { PushBackError, type RouteEvent, roundRobin } from '../../src/index.js';
import { flush, makeBalancer, tick, track } from '../helpers.js';

function make(prefer: boolean, spillAfterMs: number) {
  const { clock, balancer } = makeBalancer({
    shards: [
      { id: 'op-1', target: 'op-1', labels: { site: 'onprem' } },
      { id: 'cl-1', target: 'cl-1', labels: { site: 'cloud' } },
    ],
    picker: roundRobin(),
    ...(prefer ? { prefer: [{ site: 'onprem' }, { site: 'cloud' }] } : {}),
    spillAfterMs,
    retry: false,
  });
  return { clock, balancer };
}

describe('push-back on the only shard a rule allows, with prefer tiers', () => {
  it('a run whose rule allows only the pushed-back shard is not held for spillAfterMs (there is no other shard to spill to)', async () => {
    const when: Record<string, number | undefined> = {};
    for (const prefer of [false, true]) {
      const { clock, balancer } = make(prefer, 60_000);
      const first = track(
        balancer.run(
          async () => {
            throw new PushBackError(10_000);
          },
          { require: { site: 'onprem' } },
        ),
      );
      await flush();
      expect(first.error).toBeInstanceOf(PushBackError);
      let startedAt: number | undefined;
      const next = track(
        balancer.run(
          async (shard) => {
            startedAt = clock.now();
            return shard.id;
          },
          { require: { site: 'onprem' } },
        ),
      );
      await tick(clock, 120_000);
      when[prefer ? 'withTiers' : 'withoutTiers'] = next.ok ? startedAt : -1;
      await balancer.close();
    }
    // Without tiers the run goes at once to op-1 (no other shard the run may use). With tiers it must
    // at least not wait past the end of the push-back (10 s).
    expect(when.withoutTiers).toBe(0);
    expect(when.withTiers).toBeLessThanOrEqual(10_000);
  });

  it('when every shard pushes back, a run is offered them again (not held for spillAfterMs)', async () => {
    const when: Record<string, number | undefined> = {};
    for (const prefer of [false, true]) {
      const { clock, balancer } = make(prefer, 60_000);
      const routes: RouteEvent[] = [];
      balancer.on('route', (e) => routes.push(e));
      for (const site of ['onprem', 'cloud']) {
        const r = track(
          balancer.run(
            async () => {
              throw new PushBackError(10_000);
            },
            { require: { site } },
          ),
        );
        await flush();
        expect(r.error).toBeInstanceOf(PushBackError);
      }
      let startedAt: number | undefined;
      const next = track(
        balancer.run(async (shard) => {
          startedAt = clock.now();
          return shard.id;
        }),
      );
      await tick(clock, 120_000);
      when[prefer ? 'withTiers' : 'withoutTiers'] = next.ok ? startedAt : -1;
      await balancer.close();
    }
    expect(when).toEqual({ withoutTiers: 0, withTiers: 0 });
  });
});
