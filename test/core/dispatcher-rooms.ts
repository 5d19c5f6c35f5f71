/**
 * A dispatcher with the real rooms it drives — membership, availability, the candidate set, the
 * router, feedback (with the outlier detector when `health` is given), figures — wired as the
 * balancer wires them, but with no balancer: the host calls the dispatcher makes (`changed`,
 * `probeEarly`) are written down, and `changed` acts as the test says.
 */
import { EventEmitter } from 'eventemitter3';
import type { BalancerEvents } from '../../src/base/events.js';
import type { Picker, Requirement, ShardSpec } from '../../src/base/types.js';
import { Dispatcher } from '../../src/core/dispatcher.js';
import { Membership } from '../../src/core/membership.js';
import { type BalancerOptions, resolveOptions } from '../../src/core/options.js';
import { OutlierDetector } from '../../src/health/outlier.js';
import type { AttemptChanges } from '../../src/load/feedback.js';
import { Feedback } from '../../src/load/feedback.js';
import { Shard } from '../../src/load/shard.js';
import { Figures } from '../../src/load/stats.js';
import { TickClock } from '../../src/load/tick.js';
import { TransitLedger } from '../../src/load/transit.js';
import { roundRobin } from '../../src/pickers/index.js';
import { RetryBudget } from '../../src/retry/budget.js';
import { defaultRetryable } from '../../src/retry/options.js';
import { Availability } from '../../src/routing/availability.js';
import { CandidateSet } from '../../src/routing/candidates.js';
import { Router } from '../../src/routing/router.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';

/** One call of the dispatcher's `changed`, with what the dispatcher showed at that moment. */
export interface ChangedCall {
  shard: string;
  changes: AttemptChanges;
  inFlight: number;
  retrying: number;
  completed: number;
  failed: number;
  retries: number;
}

type Options = Omit<BalancerOptions<string>, 'shards' | 'clock' | 'random' | 'picker' | 'prefer'>;

export interface DispatcherSetup {
  ids: string[];
  picker?: Picker;
  options?: Options;
  prefer?: Requirement[];
  /**
   * Acts on an ended attempt's changes and says whether every line may go (the balancer's
   * `#attemptChanged`). Default: as the balancer does for push-back and health, no events.
   */
  changed?: (shard: Shard<string>, changes: AttemptChanges) => boolean;
}

export function dispatcherRooms(setup: DispatcherSetup) {
  const clock = new ManualClock();
  const random = seededRandom(1);
  const events = new EventEmitter<BalancerEvents>();
  const o = resolveOptions({ ...setup.options } as BalancerOptions<unknown>);
  const picker = setup.picker ?? roundRobin();
  const ticker = new TickClock(clock);
  const figures = new Figures(new TransitLedger(o.transitLabel, events));
  const calls: ChangedCall[] = [];
  const probes: string[] = [];
  let dispatcher!: Dispatcher<string>;
  let candidates!: CandidateSet<string>;
  const membership = new Membership<string>(
    {
      picker,
      newShard: (spec, index) =>
        new Shard<string>(spec, index, o.limitFactory?.() ?? o.maxInFlightPerShard, ticker, {}),
      installed: (shards) => candidates.installed(shards),
      abortAttempts: (shard, error) => dispatcher.abortAttempts(shard, error),
      changed: () => dispatcher.membershipChanged(),
    },
    {},
  );
  const outliers =
    o.health === false
      ? undefined
      : new OutlierDetector<Shard<string>>(o.health, {
          clock,
          members: () => membership.shards,
          healthChanged: (shard, change) => {
            availability.recount();
            if (change === 'eject') dispatcher.unavailable(shard, 'ejected');
            dispatcher.wake();
          },
        });
  const availability = new Availability<string>({
    members: () => membership.shards,
    inPanic: () => outliers?.inPanic() ?? false,
    panicChanged: () => {},
  });
  candidates = new CandidateSet<string>(
    {
      clock,
      spillAfterMs: o.spillAfterMs,
      membership,
      availability,
      pump: () => dispatcher.wake(),
    },
    setup.prefer,
  );
  const router = new Router<string>({
    picker,
    random,
    ticker,
    candidates,
    membership,
    inFlight: () => dispatcher.inFlight,
  });
  /** What the balancer does with push-back and health (its events left out). */
  const balancerLike = (shard: Shard<string>, changes: AttemptChanges): boolean => {
    if (changes.pushedBack) {
      candidates.pushedBack(shard.pushBack.untilMs);
      dispatcher.unavailable(shard, 'pushback');
    }
    if (changes.health === undefined) return false;
    availability.recount();
    if (changes.health.change === 'eject') dispatcher.unavailable(shard, 'ejected');
    return true;
  };
  dispatcher = new Dispatcher<string>({
    events,
    clock,
    random,
    options: o,
    membership: membership as unknown as Membership<string, never>,
    candidates,
    router,
    feedback: new Feedback<string>(
      o.retry === false ? defaultRetryable : o.retry.retryable,
      outliers,
    ),
    retry: o.retry,
    budget:
      o.retry !== false && o.retry.budget !== false
        ? new RetryBudget(o.retry.budget, clock)
        : undefined,
    figures,
    policy: undefined,
    probeEarly: (shard) => {
      probes.push(shard.id);
      outliers?.probeEarly(shard);
    },
    changed: (shard, changes) => {
      calls.push({
        shard: shard.id,
        changes: { ...changes },
        inFlight: dispatcher.inFlight,
        retrying: dispatcher.retrying,
        completed: figures.completed,
        failed: figures.failed,
        retries: figures.retries,
      });
      return (setup.changed ?? balancerLike)(shard, changes);
    },
  });
  membership.start(setup.ids.map((id): ShardSpec<string> => ({ id, target: id })));
  return {
    clock,
    events,
    figures,
    membership,
    availability,
    candidates,
    router,
    dispatcher,
    calls,
    probes,
    shard: (id: string) => membership.shards.find((s) => s.id === id)!,
  };
}
