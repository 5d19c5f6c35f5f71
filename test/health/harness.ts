/** A balancer for health tests: round robin, one attempt a run, with its health events recorded. */
import {
  type Balancer,
  type EjectEvent,
  type PanicEvent,
  type RestoreEvent,
  roundRobin,
} from '../../src/index.js';
import type { ManualClock } from '../../src/testing/index.js';
import { makeBalancer, shardsOf, type TestBalancerOptions } from '../helpers.js';

export interface Harness {
  clock: ManualClock;
  balancer: Balancer<string>;
  ejects: EjectEvent[];
  restores: RestoreEvent[];
  panics: PanicEvent[];
  picks: string[];
}

export function healthHarness(
  ids: readonly string[],
  options: TestBalancerOptions<string> = {},
): Harness {
  const { clock, balancer } = makeBalancer({
    shards: shardsOf(ids),
    picker: roundRobin(),
    // one attempt: failures reach health, and no retry muddies the pick order
    retry: { attempts: 1 },
    ...options,
  });
  const h: Harness = { clock, balancer, ejects: [], restores: [], panics: [], picks: [] };
  balancer.on('eject', (e) => h.ejects.push(e));
  balancer.on('restore', (e) => h.restores.push(e));
  balancer.on('panic', (e) => h.panics.push(e));
  balancer.on('pick', (e) => h.picks.push(e.shard.id));
  return h;
}
