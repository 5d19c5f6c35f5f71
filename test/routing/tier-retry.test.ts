/**
 * "A retry goes to a shard the run has not tried yet" (docs/retries-and-health.md) holds across
 * `prefer` tiers: an untried shard of a later tier before a tried one of an earlier tier.
 */
import { describe, expect, it } from 'vitest';
import { roundRobin } from '../../src/index.js';
import { failAfter, makeBalancer, resolveAfter, tick, track } from '../helpers.js';

describe('retries with prefer tiers', () => {
  it('a failed attempt on the only on-prem shard is retried on an untried shard that can take it', async () => {
    const { clock, balancer } = makeBalancer({
      shards: [
        { id: 'op-1', target: 'op-1', labels: { site: 'onprem' } },
        { id: 'cl-1', target: 'cl-1', labels: { site: 'cloud' } },
      ],
      picker: roundRobin(),
      prefer: [{ site: 'onprem' }, { site: 'cloud' }],
      retry: { attempts: 3 },
    });
    const routes: string[] = [];
    balancer.on('route', (e) => routes.push(`${e.shardId}:${e.reason}`));
    const tried: string[] = [];
    const run = track(
      balancer.run(
        (shard) => {
          tried.push(shard.id);
          return shard.id === 'op-1'
            ? failAfter(clock, 1, new Error('503 from op-1'))
            : resolveAfter(clock, 1, shard.id);
        },
        { idempotent: true },
      ),
    );
    await tick(clock, 1_000);
    expect({
      tried,
      value: run.value,
      error: run.error === undefined ? undefined : String(run.error),
    }).toEqual({
      tried: ['op-1', 'cl-1'],
      value: 'cl-1',
      error: undefined,
    });
    expect(routes).toEqual(['op-1:preferred', 'cl-1:spill:retry']);
  });
});
