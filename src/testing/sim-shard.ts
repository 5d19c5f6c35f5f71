/**
 * The simulator's shard model: a server that serves `capacity` requests at once from a FIFO queue,
 * each taking a service time drawn from its latency distribution, failing at its failure rate, and
 * changing as its schedule says (slower, faster, down, up).
 */

import type { RandomSource, ShardSpec, ShardState } from '../base/types.js';
import type { RunContext } from '../core/balancer.js';
import { constant, type Distribution } from './distributions.js';
import type { ManualClock } from './manual-clock.js';

/** A change to a simulated shard at virtual time `atMs`; absent fields stay as they were. */
export interface ShardChange {
  /** Virtual time of the change, ms from the start of the run. */
  atMs: number;
  /** New service-time distribution (a number is `constant(ms)`); applies to services that start later. */
  latency?: Distribution | number;
  /** New probability in [0, 1] that a service ends in an error. */
  failureRate?: number;
  /** New number of requests served at once (`Infinity` for unbounded). */
  capacity?: number;
  /**
   * `true`: the shard is down. New calls fail at once with `code: 'ECONNREFUSED'`, and the calls
   * it holds (in service or waiting) fail at once with `code: 'ECONNRESET'`. `false`: it is up.
   */
  down?: boolean;
}

/** A simulated shard. */
export interface SimShardSpec {
  id: string;
  /** Weight given to the balancer (default 1). */
  weight?: number;
  zone?: string;
  labels?: Record<string, string>;
  /** Service time per request, sampled when service starts (a number is `constant(ms)`). */
  latency: Distribution | number;
  /** Probability in [0, 1] that a service ends in an error after its service time (default 0). */
  failureRate?: number;
  /**
   * Requests served at once (default unbounded). The rest wait in the shard's FIFO queue, and the
   * wait counts in the latency the balancer measures.
   */
  capacity?: number;
  /** Changes applied at virtual times. */
  schedule?: ShardChange[];
}

/** One call to a simulated shard. */
interface Job {
  calledMs: number;
  resolve: (value: undefined) => void;
  reject: (error: Error) => void;
  signal: AbortSignal;
  /** 0 waiting, 1 in service, 2 answered (or dropped). */
  phase: 0 | 1 | 2;
  fail: boolean;
  /** Called after the warm-up: its latency counts in the shard's figures. */
  measured: boolean;
  cancel: (() => void) | undefined;
}

/** A simulated server: `capacity` services at once, a FIFO queue for the rest. */
export class SimShard {
  latency: Distribution;
  failureRate: number;
  capacity: number;
  down = false;
  busy = 0;
  maxInFlight = 0;
  /** Latencies of measured calls, call to answer (queue wait included), virtual ms. */
  readonly latencies: number[] = [];
  readonly inService = new Set<Job>();
  queue: Job[] = [];
  head = 0;
  /** Set when a latency distribution returned something that is not a duration. */
  fatal: Error | undefined = undefined;

  constructor(
    readonly id: string,
    spec: SimShardSpec,
    readonly clock: ManualClock,
    readonly latencyRandom: RandomSource,
    readonly failureRandom: RandomSource,
  ) {
    this.latency = toDistribution(spec.latency);
    this.failureRate = spec.failureRate ?? 0;
    this.capacity = spec.capacity ?? Number.POSITIVE_INFINITY;
  }

  /** A call from a run; `measured`: the run is measured (not a warm-up run, however late). */
  call(state: ShardState, ctx: RunContext, measured: boolean): Promise<undefined> {
    // The balancer counts the call before making it, so this is the in-flight count with it.
    if (measured && state.inFlight > this.maxInFlight) this.maxInFlight = state.inFlight;
    if (this.down) {
      if (measured) this.latencies.push(0);
      return Promise.reject(
        netError(`shard "${this.id}" refused the connection (down)`, 'ECONNREFUSED'),
      );
    }
    return new Promise<undefined>((resolve, reject) => {
      const job: Job = {
        calledMs: this.clock.now(),
        resolve,
        reject,
        signal: ctx.signal,
        phase: 0,
        fail: false,
        measured,
        cancel: undefined,
      };
      if (this.busy < this.capacity) {
        this.start(job);
        return;
      }
      this.queue.push(job);
      // A request still waiting for service is dropped when the client gives up on it (timeout,
      // close); one in service runs to its end, as a server that does not notice.
      ctx.signal.addEventListener('abort', () => this.drop(job), { once: true });
    });
  }

  private start(job: Job): void {
    job.phase = 1;
    this.busy++;
    this.inService.add(job);
    let ms = this.latency.sample(this.latencyRandom);
    if (!(ms >= 0 && ms < Number.POSITIVE_INFINITY)) {
      this.fatal ??= new Error(
        `simulate: latency distribution ${this.latency.name} of shard "${this.id}" returned ${ms}, not a finite number of ms ≥ 0`,
      );
      ms = 0;
    }
    // Drawn on every service so the failure stream's position does not depend on the rate.
    job.fail = this.failureRandom() < this.failureRate;
    job.cancel = this.clock.setTimer(() => this.finish(job), ms);
  }

  private finish(job: Job): void {
    this.busy--;
    this.inService.delete(job);
    this.answer(job, job.fail ? new Error(`simulated failure on shard "${this.id}"`) : undefined);
    this.startWaiting();
  }

  private answer(job: Job, error: Error | undefined): void {
    job.phase = 2;
    if (job.measured) this.latencies.push(this.clock.now() - job.calledMs);
    if (error === undefined) job.resolve(undefined);
    else job.reject(error);
  }

  private drop(job: Job): void {
    if (job.phase !== 0) return;
    job.phase = 2;
    job.reject(job.signal.reason as Error);
  }

  private startWaiting(): void {
    while (this.busy < this.capacity && this.head < this.queue.length) {
      const job = this.queue[this.head]!;
      this.queue[this.head++] = undefined as unknown as Job;
      if (job.phase === 0) this.start(job);
    }
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  apply(change: ShardChange): void {
    if (change.latency !== undefined) this.latency = toDistribution(change.latency);
    if (change.failureRate !== undefined) this.failureRate = change.failureRate;
    if (change.capacity !== undefined) this.capacity = change.capacity;
    if (change.down === true && !this.down) {
      this.down = true;
      for (const job of this.inService) {
        job.cancel?.();
        this.answer(job, netError(`shard "${this.id}" went down`, 'ECONNRESET'));
      }
      this.inService.clear();
      this.busy = 0;
      for (let i = this.head; i < this.queue.length; i++) {
        const job = this.queue[i]!;
        if (job.phase === 0)
          this.answer(job, netError(`shard "${this.id}" went down`, 'ECONNRESET'));
      }
      this.queue = [];
      this.head = 0;
    } else if (change.down === false) {
      this.down = false;
    }
    this.startWaiting();
  }
}

function netError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

export function toDistribution(value: Distribution | number): Distribution {
  return typeof value === 'number' ? constant(value) : value;
}

/** The simulated shards of `specs`, each with its own seeded latency and failure streams. */
export function createSimShards(
  specs: readonly SimShardSpec[],
  clock: ManualClock,
  streams: (label: string) => RandomSource,
): SimShard[] {
  return specs.map(
    (spec) =>
      new SimShard(
        spec.id,
        spec,
        clock,
        streams(`latency:${spec.id}`),
        streams(`failure:${spec.id}`),
      ),
  );
}

/** Sets every shard's schedule on `clock`; a change at 0 is the shard's state from the start. */
export function scheduleChanges(
  specs: readonly SimShardSpec[],
  sims: readonly SimShard[],
  clock: ManualClock,
): void {
  specs.forEach((spec, i) => {
    const sim = sims[i]!;
    for (const change of spec.schedule ?? []) {
      if (change.atMs === 0) sim.apply(change);
      else clock.setTimer(() => sim.apply(change), change.atMs);
    }
  });
}

/** The balancer's view of the simulated shards: each spec with its `SimShard` as the target. */
export function balancerShards(
  specs: readonly SimShardSpec[],
  sims: readonly SimShard[],
): ShardSpec<SimShard>[] {
  return specs.map((spec, i) => {
    const shard: ShardSpec<SimShard> = { id: spec.id, target: sims[i]! };
    if (spec.weight !== undefined) shard.weight = spec.weight;
    if (spec.zone !== undefined) shard.zone = spec.zone;
    if (spec.labels !== undefined) shard.labels = spec.labels;
    return shard;
  });
}

/** The call of a run of the warm-up: nothing it does reaches the measured figures. */
export function callWarmup(shard: ShardState<SimShard>, ctx: RunContext): Promise<undefined> {
  return shard.target.call(shard, ctx, false);
}
