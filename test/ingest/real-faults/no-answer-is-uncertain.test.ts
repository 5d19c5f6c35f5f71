/**
 * A shard that stores a batch and never answers (real HTTP shards, a process each; the attempt's
 * `timeoutMs` ends the wait): the records were sent and no answer came, so the summary says
 * `uncertain` — not `failed`, which would be a lie, since the shard holds every one of them. With
 * the default (idempotent: batches sent again), they are written, and the duplicates the shards
 * hold are exactly what `summary.resent` counts.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { consistentHash, createHttpBalancer } from '../../../src/http/index.js';
import { UncertainWriteError } from '../../../src/index.js';
import { type KillableShards, startKillableShards } from '../../fixtures/killable-shards.js';
import { type Row, rows, type Taken, tenantNames } from './rows.js';

const SHARDS = 4;
const RECORDS = 20_000;
const TENANTS = tenantNames(64);
const MUTE = 1;
/** Fewer than the 5 consecutive failures that would eject the shard. */
const HUNG_REQUESTS = 4;
const TIMEOUT_MS = 2_000;

describe('a shard that stores a batch and never answers', () => {
  let fleet: KillableShards;
  beforeAll(async () => {
    fleet = await startKillableShards({ count: SHARDS });
  });
  afterAll(async () => {
    await fleet?.close();
  });
  beforeEach(async () => {
    await fleet.heal(MUTE);
    await fleet.reset();
    await fleet.hang(MUTE, { afterBody: true, store: true, requests: HUNG_REQUESTS });
  });

  it('idempotent: false — its records are uncertain, not failed, each reported once; they are stored', async () => {
    const http = createHttpBalancer({
      origins: [...fleet.origins],
      picker: consistentHash(),
      timeoutMs: TIMEOUT_MS,
    });
    const taken: Taken = { n: 0 };
    const uncertain = new Map<number, unknown>();
    let reportedTwice = 0;
    const failed: number[] = [];
    const summary = await http.ingest(rows(RECORDS, TENANTS, taken), {
      path: '/ingest',
      key: (row) => row.tenant,
      idempotent: false,
      onUncertain: (row: Row, error) => {
        if (uncertain.has(row.id)) reportedTwice++;
        uncertain.set(row.id, error);
      },
      onFailed: (row: Row) => failed.push(row.id),
    });
    await http.close();

    const report = await fleet.report();
    expect(report.shards[MUTE]!.statuses.hung).toBe(HUNG_REQUESTS);
    expect(summary.failed).toBe(0);
    expect(failed).toEqual([]);
    expect(summary.uncertain).toBeGreaterThanOrEqual(HUNG_REQUESTS);
    expect(reportedTwice).toBe(0);
    expect(uncertain.size).toBe(summary.uncertain);
    expect(summary.written + summary.uncertain).toBe(RECORDS);
    for (const error of uncertain.values()) {
      expect(error).toBeInstanceOf(UncertainWriteError);
      expect((error as UncertainWriteError).uncertain).toBe(true);
      expect((error as UncertainWriteError).shardId).toBe(fleet.origins[MUTE]);
    }
    // Every uncertain record is in fact stored (this shard stores before it hangs), and nothing
    // was sent twice: not idempotent means no re-send after a send that may have been stored.
    expect(await fleet.storedOf(uncertain.keys())).toBe(summary.uncertain);
    expect(summary.resent).toBe(0);
    expect(report.duplicates).toBe(0);
    expect(report.distinct).toBe(RECORDS);
  }, 60_000);

  it('idempotent (the default) — every record written; the duplicates stored equal summary.resent', async () => {
    const http = createHttpBalancer({
      origins: [...fleet.origins],
      picker: consistentHash(),
      timeoutMs: TIMEOUT_MS,
    });
    const taken: Taken = { n: 0 };
    const summary = await http.ingest(rows(RECORDS, TENANTS, taken), {
      path: '/ingest',
      key: (row) => row.tenant,
    });
    await http.close();

    const report = await fleet.report();
    expect(report.shards[MUTE]!.statuses.hung).toBe(HUNG_REQUESTS);
    expect(summary).toMatchObject({ written: RECORDS, failed: 0, uncertain: 0 });
    expect(report.distinct).toBe(RECORDS);
    expect(summary.resent).toBeGreaterThanOrEqual(HUNG_REQUESTS);
    expect(report.duplicates).toBe(summary.resent);
    // Only the shard that hung holds a record twice.
    expect(report.shards.filter((s) => s.duplicates > 0).map((s) => s.index)).toEqual([MUTE]);
  }, 60_000);
});
