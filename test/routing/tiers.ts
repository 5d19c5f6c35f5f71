/** Two sites as two `prefer` tiers: one on-prem shard (tier 0), one cloud shard (tier 1). */
import { roundRobin } from '../../src/index.js';
import { makeBalancer, type TestBalancerOptions } from '../helpers.js';

export const SITES = [{ site: 'onprem' }, { site: 'cloud' }];

/** `op-1` and `cl-1` under round robin on virtual time; `prefer: false` leaves the tiers out. */
export function twoSites(
  options: Omit<TestBalancerOptions<string>, 'prefer'> & {
    prefer?: typeof SITES | false;
  } = {},
) {
  const { prefer = SITES, ...rest } = options;
  const { clock, balancer } = makeBalancer({
    shards: [
      { id: 'op-1', target: 'op-1', labels: { site: 'onprem' } },
      { id: 'cl-1', target: 'cl-1', labels: { site: 'cloud' } },
    ],
    picker: roundRobin(),
    ...(prefer === false ? {} : { prefer }),
    ...rest,
  });
  return { clock, balancer };
}
