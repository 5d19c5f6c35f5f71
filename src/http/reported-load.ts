import type { ShardState } from '../types.js';

/**
 * Server-reported load (a response header such as `x-shard-load: 12`) handed to the core.
 *
 * The core's pickers read `load` and `cost` only. When the core's `Shard` offers a
 * `reportLoad(value)` method (the proposed hook), the figure goes there and is folded into
 * `load`/`cost`; until then it is kept here, visible in `stats()` as `reportedLoad`, without
 * affecting picks. A `WeakMap` so a removed shard's figure goes with it.
 */
const reported = new WeakMap<ShardState, number>();

interface LoadSink {
  reportLoad?: (value: number) => void;
  readonly reportedLoad?: number;
}

/** Parses a load header: a finite number ≥ 0, else undefined (ignored). */
export function parseLoadHeader(value: string | string[] | undefined): number | undefined {
  if (Array.isArray(value)) value = value[0];
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

/** Feeds a shard's server-reported load (the one place the transport writes a load figure). */
export function feedReportedLoad(shard: ShardState, value: number): void {
  const sink = shard as unknown as LoadSink;
  if (typeof sink.reportLoad === 'function') sink.reportLoad(value);
  else reported.set(shard, value);
}

/** The last load a shard reported, or undefined if it never did. */
export function reportedLoadOf(shard: ShardState): number | undefined {
  const sink = shard as unknown as LoadSink;
  if (typeof sink.reportLoad === 'function' && typeof sink.reportedLoad === 'number') {
    return sink.reportedLoad;
  }
  return reported.get(shard);
}
