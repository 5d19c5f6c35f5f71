/**
 * What the real-fault tests feed `http.ingest`: ~100-byte rows keyed by tenant (the columns of the
 * ClickHouse fixture's tables), made as the source is read, with a hook that runs — awaited, so
 * the source waits for it — when a given row is about to be taken: a fault starts at a point of
 * the ingestion, whatever the machine's speed today.
 */
import type { HttpBalancer } from '../../../src/http/index.js';

export interface Row {
  id: number;
  tenant: string;
  v: string;
}

/** `count` tenant names, `t-000` … */
export function tenantNames(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `t-${String(i).padStart(3, '0')}`);
}

const PAD = 'abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz';

/** Row `id`: tenants in turn. */
export function rowOf(id: number, tenants: readonly string[]): Row {
  return { id, tenant: tenants[id % tenants.length]!, v: PAD };
}

/** How many rows the source has given (the rows taken). */
export interface Taken {
  n: number;
}

/**
 * Rows 0 … `count` − 1, tenants in turn; before row `at` is given, `hook()` is awaited (once).
 */
export async function* rows(
  count: number,
  tenants: readonly string[],
  taken: Taken,
  fault?: { at: number; hook: () => Promise<void> },
): AsyncGenerator<Row> {
  for (let id = 0; id < count; id++) {
    if (fault !== undefined && id === fault.at) await fault.hook();
    taken.n++;
    yield rowOf(id, tenants);
  }
}

/** The index in `origins` of each tenant's home shard, under `http`'s keyed picker. */
export function homesOf(
  http: HttpBalancer,
  origins: readonly string[],
  tenants: readonly string[],
): Map<string, number> {
  const homes = new Map<string, number>();
  for (const tenant of tenants) {
    const index = origins.indexOf(String(http.homeOf(tenant)));
    if (index < 0) throw new Error(`tenant ${tenant} has no home among the origins`);
    homes.set(tenant, index);
  }
  return homes;
}

/** Rows per home shard among rows 0 … `count` − 1. */
export function rowsPerHome(
  count: number,
  tenants: readonly string[],
  homes: Map<string, number>,
  shards: number,
): number[] {
  const per = new Array<number>(shards).fill(0);
  for (let id = 0; id < count; id++) per[homes.get(tenants[id % tenants.length]!)!]!++;
  return per;
}

/** The ids of rows 0 … `count` − 1 whose home is `shard`. */
export function idsOfHome(
  count: number,
  tenants: readonly string[],
  homes: Map<string, number>,
  shard: number,
): number[] {
  const ids: number[] = [];
  for (let id = 0; id < count; id++) {
    if (homes.get(tenants[id % tenants.length]!) === shard) ids.push(id);
  }
  return ids;
}
