/** Two sites as two `prefer` tiers: one on-prem shard (tier 0), one cloud shard (tier 1). */
import { Balancer, type BalancerOptions, roundRobin } from '../../src/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';

export const SITES = [{ site: 'onprem' }, { site: 'cloud' }];

/** `op-1` and `cl-1` under round robin on virtual time; `prefer: false` leaves the tiers out. */
export function twoSites(
  options: Omit<Partial<BalancerOptions<string>>, 'prefer'> & {
    prefer?: typeof SITES | false;
  } = {},
) {
  const clock = new ManualClock();
  const { prefer = SITES, ...rest } = options;
  const balancer = new Balancer<string>({
    shards: [
      { id: 'op-1', target: 'op-1', labels: { site: 'onprem' } },
      { id: 'cl-1', target: 'cl-1', labels: { site: 'cloud' } },
    ],
    picker: roundRobin(),
    ...(prefer === false ? {} : { prefer }),
    clock,
    random: seededRandom(1),
    ...rest,
  });
  return { clock, balancer };
}
