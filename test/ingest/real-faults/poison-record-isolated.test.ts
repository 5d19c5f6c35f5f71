/**
 * One malformed record in 20 000 (batches of 5 000), over 4 real HTTP shards (a process each) that
 * refuse whole any batch holding it, as a database answers a parse error: the batch is split down
 * to that record, so 19 999 records are written and 1 fails, for at most 30 extra requests, and
 * no shard's health is charged — a 400 as the default reads it, and a 500 read by `classify` as
 * ClickHouse needs.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { consistentHash, createHttpBalancer, HttpError } from '../../../src/http/index.js';
import { type KillableShards, startKillableShards } from '../../fixtures/killable-shards.js';
import { rowOf, type Taken, tenantNames } from './rows.js';

const SHARDS = 4;
const RECORDS = 20_000;
const PER_BATCH = 5_000;
const BAD = 10_000;
const TENANTS = tenantNames(256);

/** Pre-encoded NDJSON lines (they pass through untouched); line `BAD` is not JSON. */
function* lines(taken: Taken): Generator<string> {
  for (let id = 0; id < RECORDS; id++) {
    taken.n++;
    const row = rowOf(id, TENANTS);
    yield id === BAD ? `{"id":${id},"tenant":"${row.tenant}","v":oops}` : JSON.stringify(row);
  }
}
const tenantOf = (line: string) => /"tenant":"([^"]+)"/.exec(line)![1]!;
const idOf = (line: string) => Number(/"id":(\d+)/.exec(line)![1]);

describe.each([
  { status: 400, classify: undefined },
  {
    status: 500,
    classify: ({ statusCode, body }: { statusCode: number; body: string }) =>
      statusCode === 500 && /Cannot parse/.test(body) ? ('rejected' as const) : undefined,
  },
])('a batch holding one malformed record, refused with $status', ({ status, classify }) => {
  let fleet: KillableShards;
  beforeAll(async () => {
    fleet = await startKillableShards({ count: SHARDS });
  });
  afterAll(async () => {
    await fleet?.close();
  });
  beforeEach(async () => {
    for (let i = 0; i < SHARDS; i++) await fleet.reject(i, 'oops', { status });
  });

  it('is split to that record: 19 999 written, 1 failed, ≤ 30 extra requests, no health charged', async () => {
    const http = createHttpBalancer({ origins: [...fleet.origins], picker: consistentHash() });
    // Batches close only when full or at the end of the source: their number is known.
    const perHome = new Map<string, number>();
    for (let id = 0; id < RECORDS; id++) {
      const home = String(http.homeOf(rowOf(id, TENANTS).tenant));
      perHome.set(home, (perHome.get(home) ?? 0) + 1);
    }
    const batches = [...perHome.values()].reduce((n, c) => n + Math.ceil(c / PER_BATCH), 0);
    const badHome = String(http.homeOf(rowOf(BAD, TENANTS).tenant));
    const failed: [number, unknown][] = [];
    const taken: Taken = { n: 0 };
    const summary = await http.ingest(lines(taken), {
      path: '/ingest',
      key: tenantOf,
      batch: { maxRecords: PER_BATCH, lingerMs: 600_000 },
      onFailed: (line, error) => failed.push([idOf(line), error]),
      ...(classify === undefined ? {} : { classify }),
    });
    const stats = http.stats();
    await http.close();

    expect(summary).toMatchObject({ written: RECORDS - 1, failed: 1, uncertain: 0 });
    expect(failed.map(([id]) => id)).toEqual([BAD]);
    expect(failed[0]![1]).toBeInstanceOf(HttpError);
    expect((failed[0]![1] as HttpError).statusCode).toBe(status);
    const report = await fleet.report();
    expect(report.distinct).toBe(RECORDS - 1);
    expect(await fleet.storedOf([BAD])).toBe(0);
    expect(report.requests).toBeLessThanOrEqual(batches + 30);
    // Every refusal came from the bad record's home: it was never sent anywhere else…
    const refusals = (origin: string) =>
      report.shards.find((s) => s.origin === origin)!.statuses[String(status)] ?? 0;
    expect(refusals(badHome)).toBeGreaterThan(1);
    // …and no shard's health paid for it: no other shard saw a failed attempt, none was ejected;
    // the home's failed attempts are its refusals, counted in stats() but not against its health.
    for (const shard of stats.shards) {
      expect(shard.ejections).toBe(0);
      if (shard.id === badHome) expect(shard.failures).toBe(refusals(badHome));
      else expect([shard.failures, refusals(shard.id)]).toEqual([0, 0]);
    }
  }, 60_000);
});
