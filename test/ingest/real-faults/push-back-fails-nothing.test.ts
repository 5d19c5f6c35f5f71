/**
 * Push-back is load, not failure: one of 4 real HTTP shards (a process each) answers every batch
 * 503 with `Retry-After: 1` for 5 s — each of its batches is refused about five times, more than
 * the 3 attempts a failure may spend — and not one record fails. The balancer's defaults
 * throughout, as a user leaves them.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { consistentHash, createHttpBalancer } from '../../../src/http/index.js';
import { type KillableShards, startKillableShards } from '../../fixtures/killable-shards.js';
import { homesOf, rows, rowsPerHome, type Taken, tenantNames } from './rows.js';

const SHARDS = 4;
const RECORDS = 20_000;
const TENANTS = tenantNames(64);

let fleet: KillableShards;
beforeAll(async () => {
  fleet = await startKillableShards({ count: SHARDS });
});
afterAll(async () => {
  await fleet?.close();
});

it('a shard answering 503 + Retry-After: 1 for 5 s fails no record', async () => {
  const http = createHttpBalancer({ origins: [...fleet.origins], picker: consistentHash() });
  const homes = homesOf(http, fleet.origins, TENANTS);
  const perHome = rowsPerHome(RECORDS, TENANTS, homes, SHARDS);
  const busy = 3;
  await fleet.pushBack(busy, { status: 503, retryAfterS: 1, forMs: 5_000 });
  const taken: Taken = { n: 0 };
  const summary = await http.ingest(rows(RECORDS, TENANTS, taken), {
    path: '/ingest',
    key: (row) => row.tenant,
  });
  const stats = http.stats();
  await http.close();

  expect(summary).toMatchObject({ written: RECORDS, failed: 0, uncertain: 0, resent: 0 });
  const report = await fleet.report();
  // The shard did push back, and each of its records is stored on it, once.
  expect(report.shards[busy]!.statuses['503']).toBeGreaterThan(0);
  expect(report.shards.map((s) => s.distinct)).toEqual(perHome);
  expect(report.duplicates).toBe(0);
  // Push-back charges no shard's health.
  expect(stats.shards[busy]!.ejections).toBe(0);
}, 60_000);
