/**
 * The simulator's time series: each shard's in-flight count (the balancer's view) on an even grid
 * of virtual time. The state is constant between events, so the point at time s is read just
 * before the clock moves past s. At most {@link MAX_POINTS} points are kept: past that every other
 * point is dropped and the interval doubles, so the grid stays even whatever the run's length.
 */
import type { ShardState } from '../base/types.js';

/** Points kept per series at most. */
export const MAX_POINTS = 10_000;

/** In-flight count per shard id, sampled at times `t` (virtual ms). */
export interface Series {
  t: number[];
  inFlight: Record<string, number[]>;
}

/** Samples `shards` every `intervalMs` of virtual time, as the clock is about to pass each point. */
export class SeriesSampler {
  private readonly t: number[] = [];
  private readonly columns: number[][];
  private next = 0;

  constructor(
    private readonly shards: readonly ShardState[],
    private intervalMs: number,
  ) {
    this.columns = shards.map(() => []);
  }

  /** Records every point before `limitMs` (and at it, when `inclusive`) not yet recorded. */
  sampleBefore(limitMs: number, inclusive: boolean): void {
    const { t, columns } = this;
    while (this.next < limitMs || (inclusive && this.next === limitMs)) {
      t.push(this.next);
      for (let i = 0; i < columns.length; i++) columns[i]!.push(this.shards[i]!.inFlight);
      if (t.length > MAX_POINTS) {
        compact(t);
        for (const column of columns) compact(column);
        this.intervalMs *= 2;
        this.next = t[t.length - 1]! + this.intervalMs;
      } else {
        this.next += this.intervalMs;
      }
    }
  }

  /** The series, keyed by shard id in membership order. */
  result(): Series {
    const inFlight: Record<string, number[]> = {};
    this.shards.forEach((shard, i) => {
      inFlight[shard.id] = this.columns[i]!;
    });
    return { t: this.t, inFlight };
  }
}

/** Keeps the points at even indices. */
function compact(values: number[]): void {
  let j = 0;
  for (let i = 0; i < values.length; i += 2) values[j++] = values[i]!;
  values.length = j;
}
