/**
 * A discrete-event simulator on virtual time that drives the real `Balancer` (Finagle keeps a
 * small one in its test suite for the same reason): simulated shards with latency distributions,
 * capacity and FIFO queues, failures and schedules, and a seeded open- or closed-loop load. This
 * file is the event loop; the shard model, the load, the series, the summary and the option checks
 * each have their own file.
 */

import type { RunContext } from '../admission/run.js';
import { ConfigError, PushBackError, renamedConfigError, TimeoutError } from '../base/errors.js';
import { createRandom } from '../base/random.js';
import type { ShardState } from '../base/types.js';
import { Balancer } from '../core/balancer.js';
import { ManualClock } from './manual-clock.js';
import type { Series } from './series.js';
import { SeriesSampler } from './series.js';
import {
  balancerShards,
  callWarmup,
  createSimShards,
  type SimShard,
  scheduleChanges,
} from './sim-shard.js';
import { checkOptions, type SimulateOptions } from './simulate-options.js';
import { streamSeed } from './streams.js';
import {
  type LatencySummary,
  Measurement,
  type ShardResult,
  type WarmupSummary,
} from './summary.js';
import { keyGenerator, poissonArrivals } from './workload.js';

/** What {@link simulate} resolves. Every figure but `series` and `durationMs` leaves out the warm-up. */
export interface SimulationResult {
  latency: LatencySummary;
  perShard: ShardResult[];
  /** max / mean of `perShard[].requests` (1 is perfect balance). */
  imbalance: number;
  /** Runs that rejected. */
  failures: number;
  /** Retry attempts started (`stats().retries`). */
  retries: number;
  /** How many runs the warm-up left out, and when it ended (zeros without one). */
  warmup: WarmupSummary;
  /**
   * In-flight count per shard (the balancer's view) sampled every `sampleEveryMs`, warm-up
   * included (points at `t < warmup.ms` are in it).
   */
  series: Series;
  /** Virtual time from the start to the last run's settlement (warm-up included), ms. */
  durationMs: number;
}

/**
 * Runs `requests` runs through a real `Balancer` against simulated shards on a `ManualClock`,
 * and resolves latency percentiles and histogram, per-shard counts, imbalance and an in-flight
 * time series. Every run is idempotent, so failed attempts are retried per
 * `balancerOptions.retry`. The same options and seed give a deep-equal result; each random stream
 * (balancer, arrivals, keys, each shard's latency and failures) has its own seed, so changing one
 * leaves the others in place. With `warmupMs` or `warmupRequests`, the runs admitted during the
 * warm-up run first and are left out of the figures (`warmup` says how many).
 *
 * @example
 * const result = await simulate({
 *   picker: p2c(),
 *   shards: [{ id: 'a', latency: exponential(10) }, { id: 'slow', latency: exponential(100), capacity: 8 }],
 *   arrivals: { rate: 500 },
 *   requests: 10_000,
 *   warmupMs: 1_000,
 *   seed: 1,
 * });
 * console.log(result.latency.p99, result.imbalance, result.warmup.requests);
 */
export async function simulate(options: SimulateOptions): Promise<SimulationResult> {
  const o = checkOptions(options);
  const clock = new ManualClock();
  const streams = (label: string) => createRandom(streamSeed(o.seed, label));
  const sims = createSimShards(o.shards, clock, streams);
  const balancer = balancerFor(o, sims, clock, streams('balancer'));
  scheduleChanges(o.shards, sims, clock);

  const requests = o.requests;
  const measurement = new Measurement(requests, sims.length);
  const nextKey = keyGenerator(o.keys, streams('keys'));
  const plain = { idempotent: true };
  const closedLoop = o.arrivals === undefined;
  let issued = 0;
  let settled = 0;
  let measuredIssued = 0;
  let measuring = o.warmupMs === 0 && o.warmupRequests === 0;
  const endWarmup = (): void => {
    measuring = true;
    measurement.endWarmup(clock.now(), issued);
  };
  // A measured run's attempts are counted by the run (a warm-up run may retry after the warm-up).
  const callMeasured = (shard: ShardState<SimShard>, ctx: RunContext): Promise<undefined> => {
    const index = shard.index;
    measurement.attempt(index, ctx.attempt);
    let failed = false;
    const fail = (): void => {
      if (failed) return;
      failed = true;
      measurement.attemptFailed(index);
    };
    // A timeout fails the attempt when it fires (what the shard answers later is not heard).
    const unlisten = ctx.onAbort((reason) => {
      if (reason instanceof TimeoutError) fail();
    });
    return shard.target.call(shard, ctx, true).then(
      (value) => {
        unlisten();
        return value;
      },
      (error: unknown) => {
        unlisten();
        if (!(error instanceof PushBackError)) fail();
        throw error;
      },
    );
  };
  // In a closed loop, runs that settle in 0 ms of virtual time never let a `warmupMs` come.
  const stuckAfter = Math.max(100_000, 10 * o.concurrency);
  let instantMs = Number.NaN;
  let atInstant = 0;
  let stuck: ConfigError | undefined;
  // Set first, so it fires before any other event due at the same time.
  if (!measuring && o.warmupMs > 0) clock.setTimer(endWarmup, o.warmupMs);

  const issue = (): void => {
    if (!measuring && o.warmupRequests > 0 && issued === o.warmupRequests) endWarmup();
    const measured = measuring;
    issued++;
    if (measured) measuredIssued++;
    const admittedMs = clock.now();
    const done = (ok: boolean): void => {
      settled++;
      if (measured) measurement.record(clock.now() - admittedMs, ok);
      if (!closedLoop || measuredIssued >= requests || stuck !== undefined) return;
      if (!measuring) {
        const now = clock.now();
        if (now !== instantMs) {
          instantMs = now;
          atInstant = 0;
        }
        if (++atInstant > stuckAfter) {
          stuck = new ConfigError(
            'warmupMs',
            `is never reached: in a closed loop the runs settle in 0 ms of virtual time (${atInstant} of them at ${now} ms), so time does not pass; use warmupRequests`,
            o.warmupMs,
          );
          return;
        }
      }
      issue();
    };
    const key = nextKey?.();
    const fn = measured ? callMeasured : callWarmup;
    balancer.run(fn, key === undefined ? plain : { idempotent: true, key }).then(
      () => done(true),
      () => done(false),
    );
  };

  if (o.arrivals === undefined) {
    const callers = Math.min(o.concurrency, requests + o.warmupRequests);
    for (let i = 0; i < callers; i++) issue();
  } else {
    poissonArrivals(clock, o.arrivals.rate, streams('arrivals'), () => {
      issue();
      return measuredIssued < requests;
    });
  }

  const sampler = new SeriesSampler(balancer.shards, o.sampleEveryMs);
  // The event loop: let every promise reaction at this instant run (one macrotask turn drains the
  // whole microtask queue, however deep the chains), then fire every timer due at the next instant.
  for (;;) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    for (const sim of sims) if (sim.fatal !== undefined) throw sim.fatal;
    if (stuck !== undefined) throw stuck;
    if (measuredIssued >= requests && settled >= issued) break;
    const next = clock.nextTimerAt();
    if (next === undefined) {
      throw new Error(
        `simulate: stalled at ${clock.now()} ms with ${issued - settled} run(s) unsettled and no timer pending`,
      );
    }
    sampler.sampleBefore(next, false);
    clock.advanceTo(next);
  }
  const durationMs = clock.now();
  sampler.sampleBefore(durationMs, true);
  return {
    ...measurement.summarize(sims, o.keepSorted),
    series: sampler.result(),
    durationMs,
  };
}

/**
 * The real Balancer over the simulated shards; a `ConfigError` of `balancerOptions` names the
 * path the caller wrote (`balancerOptions.retry`, not `retry`).
 */
function balancerFor(
  o: ReturnType<typeof checkOptions>,
  sims: SimShard[],
  clock: ManualClock,
  random: () => number,
): Balancer<SimShard> {
  try {
    return new Balancer<SimShard>({
      ...o.balancerOptions,
      picker: o.picker,
      shards: balancerShards(o.shards, sims),
      clock,
      random,
    });
  } catch (error) {
    // Only the options the caller gave there: the shards, picker, clock are the simulator's.
    const top = error instanceof ConfigError ? error.field.split(/[.[]/)[0]! : '';
    if (!(error instanceof ConfigError) || !Object.hasOwn(o.balancerOptions, top)) throw error;
    throw renamedConfigError(error, `balancerOptions.${error.field}`);
  }
}
