/**
 * A slow home next to a fast one, on real HTTP shards (a process each): the slow shard answers
 * each batch 20 s after it arrives — longer than this test waits — and the fast home's records
 * are all written meanwhile, while every record of the slow home still waits. A slow home holds
 * its own batches, never the slots or queue places the fast home's batches need (before, its
 * batches filled every place the balancer had, and the fast home waited for its answers).
 * Counts and order, not rates: the bench compares the fast home's records/s with plain runs.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { consistentHash, createHttpBalancer } from '../../../src/http/index.js';
import { IngestError, type IngestProgress, type IngestSummary } from '../../../src/index.js';
import { type KillableShards, startKillableShards } from '../../fixtures/killable-shards.js';
import { until } from '../../helpers.js';
import { homesOf, type Row, rows, type Taken, tenantNames } from './rows.js';

const SHARDS = 4;
const SLOW = 0;
const FAST = 2;
/** Two tenants in turn, one record per batch (each batch one run), as in the issue. */
const RECORDS = 400;
const SLOW_DELAY_MS = 20_000;
/** Shorter than the slow shard's delay: by then it has answered nothing. */
const WAIT_MS = 15_000;

let fleet: KillableShards;
beforeAll(async () => {
  fleet = await startKillableShards({ count: SHARDS });
});
afterAll(async () => {
  await fleet?.close();
});

it("the fast home's records are all written while the slow home's still wait", async () => {
  const http = createHttpBalancer({ origins: [...fleet.origins], picker: consistentHash() });
  const homes = homesOf(http, fleet.origins, tenantNames(256));
  const pair = [
    [...homes].find(([, i]) => i === SLOW)![0],
    [...homes].find(([, i]) => i === FAST)![0],
  ];
  await fleet.slow(SLOW, SLOW_DELAY_MS);
  const taken: Taken = { n: 0 };
  const progress: IngestProgress[] = [];
  const ingestion = http
    .ingest(rows(RECORDS, pair, taken), {
      path: '/ingest',
      key: (row: Row) => row.tenant,
      batch: { maxRecords: 1 },
      progressMs: 100,
      onProgress: (p) => progress.push(p),
    })
    .catch((error: unknown) => {
      if (error instanceof IngestError) return error.summary as IngestSummary<Row>;
      throw error;
    });

  const half = RECORDS / 2;
  const stored = async (i: number) => (await fleet.report()).shards[i]!.distinct;
  const fastDone = await until(async () => (await stored(FAST)) === half, WAIT_MS, 50);
  const slowStored = await stored(SLOW);
  const held = progress.at(-1)?.shards?.[fleet.origins[SLOW]!]?.held;
  // The slow home would take many seconds more: end here (its records are counted, not written).
  await http.close({ drain: false });
  const summary = await ingestion;

  expect(fastDone).toBe(true);
  expect(slowStored).toBe(0);
  expect(held).toBeGreaterThan(0);
  expect(taken.n).toBe(RECORDS);
  expect(summary.perShard[fleet.origins[FAST]!]).toBe(half);
  expect(summary.perShard[fleet.origins[SLOW]!] ?? 0).toBe(0);
  expect(summary.written + summary.failed + summary.uncertain).toBe(RECORDS);
}, 60_000);
