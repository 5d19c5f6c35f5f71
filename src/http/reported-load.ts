import type { ShardState } from '../base/types.js';

/**
 * Server-reported load: a response header such as `x-shard-load: 12`, parsed here and handed to
 * the balancer (`reportLoad`), which folds it into the shard's `load` and `cost` while fresh.
 */

/** Parses a load header: a finite number ≥ 0, else undefined (ignored). */
export function parseLoadHeader(value: string | string[] | undefined): number | undefined {
  if (Array.isArray(value)) value = value[0];
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

/**
 * Feeds a shard's server-reported load, for a custom transport holding the `ShardState` its
 * `send` was given (the same as `balancer.reportLoad(shard, value)`).
 */
export function feedReportedLoad(shard: ShardState, value: number): void {
  (shard as ShardState & { reportLoad(value: number): void }).reportLoad(value);
}
