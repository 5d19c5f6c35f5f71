/**
 * A home that never comes back, over 4 real HTTP shards (a process each; the dead one killed with
 * SIGKILL mid-run): the other homes' records are all written; the dead home's records are not —
 * each is reported once, failed with a `ShardUnavailableError` naming it (or, for a batch the kill
 * cut after its body went out, uncertain, naming it too) — and the ingestion ends, one delivery
 * deadline after the home went away rather than one per batch (here the deadline is 2.5 s, so
 * the test stays short; the bench measures the time).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { consistentHash, createHttpBalancer } from '../../../src/http/index.js';
import { ShardUnavailableError, UncertainWriteError } from '../../../src/index.js';
import { type KillableShards, startKillableShards } from '../../fixtures/killable-shards.js';
import {
  homesOf,
  idsOfHome,
  type Row,
  rows,
  rowsPerHome,
  type Taken,
  tenantNames,
} from './rows.js';

const SHARDS = 4;
const RECORDS = 40_000;
const TENANTS = tenantNames(64);

let fleet: KillableShards;
beforeAll(async () => {
  fleet = await startKillableShards({ count: SHARDS });
});
afterAll(async () => {
  await fleet?.close();
});

it("a home that never returns fails its own records, each once and naming it, and no other home's", async () => {
  const http = createHttpBalancer({ origins: [...fleet.origins], picker: consistentHash() });
  const homes = homesOf(http, fleet.origins, TENANTS);
  const perHome = rowsPerHome(RECORDS, TENANTS, homes, SHARDS);
  const dead = 2;
  const deadOrigin = fleet.origins[dead]!;
  const taken: Taken = { n: 0 };
  const reported = new Map<number, unknown>();
  let reportedTwice = 0;
  const summary = await http.ingest(
    rows(RECORDS, TENANTS, taken, { at: RECORDS / 4, hook: () => fleet.kill(dead) }),
    {
      path: '/ingest',
      key: (row) => row.tenant,
      deliveryTimeoutMs: 2_500,
      onFailed: (row: Row, error) => {
        if (reported.has(row.id)) reportedTwice++;
        reported.set(row.id, error);
      },
    },
  );
  await http.close();

  expect(taken.n).toBe(RECORDS);
  expect(summary.written + summary.failed + summary.uncertain).toBe(RECORDS);
  // Every other home wrote every one of its records.
  for (let i = 0; i < SHARDS; i++) {
    if (i !== dead) expect(summary.perShard[fleet.origins[i]!]).toBe(perHome[i]);
  }
  // The dead home's records: those written before the kill, and the rest reported, each once.
  const deadIds = new Set(idsOfHome(RECORDS, TENANTS, homes, dead));
  const deadWritten = summary.perShard[deadOrigin] ?? 0;
  expect(summary.failed + summary.uncertain).toBe(deadIds.size - deadWritten);
  expect(summary.failed).toBeGreaterThan(0);
  expect(reportedTwice).toBe(0);
  expect(reported.size).toBe(summary.failed + summary.uncertain);
  const failedIds: number[] = [];
  for (const [id, error] of reported) {
    expect(deadIds.has(id)).toBe(true);
    if (error instanceof UncertainWriteError) {
      expect(error.shardId).toBe(deadOrigin);
    } else {
      expect(error).toBeInstanceOf(ShardUnavailableError);
      expect((error as ShardUnavailableError).shardId).toBe(deadOrigin);
      expect((error as Error).message).toContain(deadOrigin);
      failedIds.push(id);
    }
  }
  expect(failedIds).toHaveLength(summary.failed);
  // Failed means known not stored: none of them is on any shard.
  expect(await fleet.storedOf(failedIds)).toBe(0);
  // What the summary counts as written is stored.
  const report = await fleet.report();
  expect(report.distinct).toBeGreaterThanOrEqual(summary.written);
}, 60_000);
