/**
 * Tiers with push-back: a retry is sent to an untried shard that pushes back while a shard it
 * tried (failed for another reason) could take it.
 */
import { describe, expect, it } from 'vitest';
import { PushBackError } from '../../src/index.js';
import { ManualClock } from '../../src/testing/index.js';
import { failAfter, flush, makeBalancer, resolveAfter, tick, track } from '../helpers.js';

function make(clock: ManualClock, tiers: boolean) {
  return makeBalancer({
    clock,
    shards: [
      { id: 'local', target: 'local', labels: { site: 'onprem' } },
      { id: 'cloud', target: 'cloud', labels: { site: 'cloud' } },
    ],
    ...(tiers ? { prefer: [{ site: 'onprem' }, { site: 'cloud' }] } : {}),
    health: false,
    retry: { attempts: 3, backoff: { baseMs: 1, maxMs: 1 }, budget: false },
  }).balancer;
}

async function scenario(tiers: boolean) {
  const clock = new ManualClock();
  const balancer = make(clock, tiers);
  // 'local' pushes back for 5 s (another run's answer)
  const x = track(
    balancer.run(
      (shard) =>
        shard.id === 'local'
          ? failAfter(clock, 1, new PushBackError(5_000))
          : resolveAfter(clock, 1, shard.id),
      { require: { site: 'onprem' }, idempotent: true, deliveryTimeoutMs: 100 },
    ),
  );
  await tick(clock, 5);
  expect(x.settled).toBe(true); // refused: its only shard pushes back past its delivery deadline
  // a run that goes to 'cloud' (local spares itself), fails there with a 500-like error
  const seen: string[] = [];
  const r = track(
    balancer.run(
      (shard) => {
        seen.push(shard.id);
        if (shard.id === 'local') return failAfter(clock, 1, new PushBackError(5_000));
        return seen.length === 1
          ? failAfter(clock, 1, new Error('blip'))
          : resolveAfter(clock, 1, shard.id);
      },
      { idempotent: true },
    ),
  );
  await tick(clock, 50);
  await flush();
  await balancer.close({ drain: false });
  return { seen, r };
}

describe('a retry does not go to a shard pushing back while another it may use can take it', () => {
  it('control, no tiers: the retry goes back to the tried shard that does not push back', async () => {
    const { seen, r } = await scenario(false);
    expect(seen).toEqual(['cloud', 'cloud']);
    expect(r.value).toBe('cloud');
  });

  it('with prefer tiers too: the retry goes back to the tried shard, not to one pushing back', async () => {
    const { seen, r } = await scenario(true);
    // docs/retries-and-health.md (Push-back): "the shard is not offered to the picker for
    // retryAfterMs while another shard the run may use can take it — whatever the picker";
    // "a retry that can go to a shard that is not pushing back — one it has not tried, or else
    // one it tried that failed for another reason — waits only its backoff".
    expect(seen).toEqual(['cloud', 'cloud']);
    expect(r.value).toBe('cloud');
  });
});
