/**
 * Keyed ingestion over 4 real HTTP shards (a process each) while one of them is killed (SIGKILL)
 * and restarted on its port: no record is lost — every record taken is written, and stored on its
 * home — and while the killed shard is down the other three write every one of their records.
 *
 * No wall-clock assertion (STYLE rule 16): the home is ejected for 600 s (`baseEjectionMs`), so
 * the ingestion can end within this test's deadline only if the early probes bring it back; the
 * time a restart costs is in `bench/ingest-faults.bench.ts`.
 *
 * The killed home's ~10 000 records stay within its share of the held bound (100 000 over 4
 * homes). Past that share the source — tenants in turn — waits at the home's next record, and the
 * other homes, having written what they hold, wait with it: the bench's 1M records show it.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { consistentHash, createHttpBalancer } from '../../../src/http/index.js';
import { type KillableShards, startKillableShards } from '../../fixtures/killable-shards.js';
import { until } from '../../helpers.js';
import { homesOf, rows, rowsPerHome, type Taken, tenantNames } from './rows.js';

const SHARDS = 4;
const RECORDS = 40_000;
const TENANTS = tenantNames(64);
/** The outage lasts at least this long, and until the healthy homes are done (bounded). */
const OUTAGE_MS = 2_000;
const OUTAGE_BOUND_MS = 40_000;

let fleet: KillableShards;
beforeAll(async () => {
  fleet = await startKillableShards({ count: SHARDS });
});
afterAll(async () => {
  await fleet?.close();
});

it('a home killed and restarted loses no record, and the other homes write all of theirs while it is down', async () => {
  const http = createHttpBalancer({
    origins: [...fleet.origins],
    picker: consistentHash(),
    // Without early probes, an ejected home would wait 10 minutes: past this test's deadline.
    health: { baseEjectionMs: 600_000 },
  });
  const homes = homesOf(http, fleet.origins, TENANTS);
  const perHome = rowsPerHome(RECORDS, TENANTS, homes, SHARDS);
  const victim = 1;
  const healthy = [0, 2, 3];
  expect(perHome[victim]).toBeGreaterThan(0);
  const healthyTotal = healthy.reduce((n, i) => n + perHome[i]!, 0);

  const taken: Taken = { n: 0 };
  let outage: Promise<void> = Promise.resolve();
  let healthyDoneWhileDown = false;
  let restartedAt = 0;
  const summary = await http.ingest(
    rows(RECORDS, TENANTS, taken, {
      at: RECORDS / 4,
      hook: async () => {
        await fleet.kill(victim);
        const killedAt = performance.now();
        outage = (async () => {
          const healthyStored = async () => {
            const report = await fleet.report();
            return healthy.reduce((n, i) => n + report.shards[i]!.distinct, 0);
          };
          healthyDoneWhileDown = await until(
            async () =>
              performance.now() - killedAt >= OUTAGE_MS && (await healthyStored()) === healthyTotal,
            OUTAGE_BOUND_MS,
            100,
          );
          expect(fleet.isUp(victim)).toBe(false);
          await fleet.restart(victim);
          restartedAt = fleet.now();
        })();
      },
    }),
    { path: '/ingest', key: (row) => row.tenant },
  );
  await outage;
  const stats = http.stats();
  await http.close();

  // Nothing lost: every record taken written, and stored on its home.
  expect(taken.n).toBe(RECORDS);
  expect(summary).toMatchObject({ written: RECORDS, failed: 0, uncertain: 0 });
  const report = await fleet.report();
  expect(report.distinct).toBe(RECORDS);
  expect(report.shards.map((s) => s.distinct)).toEqual(perHome);
  // A batch cut by the kill may have been stored and sent again: never more than `resent` say.
  expect(report.duplicates).toBeLessThanOrEqual(summary.resent);
  // While the killed shard was down, the three others wrote every one of their records.
  expect(healthyDoneWhileDown).toBe(true);
  // The killed home was ejected (for 600 s) and taken back by an early probe: it stored records
  // again after its restart.
  expect(stats.shards[victim]!.ejections).toBeGreaterThanOrEqual(1);
  const afterRestart = fleet
    .arrivals(victim)
    .filter((a) => a.at >= restartedAt)
    .reduce((n, a) => n + a.count, 0);
  expect(afterRestart).toBeGreaterThan(0);
}, 90_000);
