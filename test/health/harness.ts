/** A balancer for health tests: round robin, one attempt a run, with its health events recorded. */
import {
  Balancer,
  type BalancerOptions,
  type EjectEvent,
  type PanicEvent,
  type RestoreEvent,
  roundRobin,
} from '../../src/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';

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
  options: Partial<BalancerOptions<string>> = {},
): Harness {
  const clock = new ManualClock();
  const balancer = new Balancer<string>({
    shards: ids.map((id) => ({ id, target: id })),
    picker: roundRobin(),
    // one attempt: failures reach health, and no retry muddies the pick order
    retry: { attempts: 1 },
    clock,
    random: seededRandom(1),
    ...options,
  });
  const h: Harness = { clock, balancer, ejects: [], restores: [], panics: [], picks: [] };
  balancer.on('eject', (e) => h.ejects.push(e));
  balancer.on('restore', (e) => h.restores.push(e));
  balancer.on('panic', (e) => h.panics.push(e));
  balancer.on('pick', (e) => h.picks.push(e.shard.id));
  return h;
}
