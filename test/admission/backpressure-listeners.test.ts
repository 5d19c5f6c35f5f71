/**
 * Membership changed from inside a `saturated` listener: scaling out when the queue fills.
 */
import { describe, expect, it } from 'vitest';
import { roundRobin } from '../../src/index.js';
import { makeBalancer, resolveAfter, tick, track } from '../helpers.js';

describe('addShard from a saturated listener', () => {
  it('the run that filled the queue starts on the new shard and resolves with its value', async () => {
    const { clock, balancer } = makeBalancer(
      { picker: roundRobin(), maxInFlightPerShard: 1, maxQueued: 1 },
      ['a'],
    );
    let added = 0;
    balancer.on('saturated', () => {
      // Scale out: more capacity when the queue fills.
      added++;
      balancer.addShard({ id: `extra${added}`, target: `extra${added}` });
    });
    const calls: string[] = [];
    const first = track(balancer.run((s) => resolveAfter(clock, 100, s.id)));
    const second = track(
      balancer.run((s) => {
        calls.push(s.id);
        return resolveAfter(clock, 10, s.id);
      }),
    );
    await tick(clock, 200);
    expect(calls).toEqual(['extra1']); // fn ran, and succeeded on the new shard
    expect({ ok: second.ok, value: second.value, error: String(second.error ?? '') }).toEqual({
      ok: true,
      value: 'extra1',
      error: '',
    });
    expect(first.value).toBe('a');
    const st = balancer.stats();
    expect(st.completed + st.failed + st.refused).toBe(2);
  });
});
