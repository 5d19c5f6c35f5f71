/**
 * A real database: keyed rows into 4 ClickHouse 18.16 servers (`INSERT … FORMAT JSONEachRow` over
 * HTTP, what `http.ingest` sends), one server stopped (SIGTERM) and another killed (SIGKILL)
 * mid-run, each started again on its ports. Every row the summary counts as written is there,
 * each tenant on its one home server; the summary's written equals the distinct ids the servers
 * hold; the duplicates they hold (count − uniqExact) are at most `summary.resent`.
 *
 * 500 000 rows: the issue's figure is 1M, ~45 s fault-free on this shared 2-core machine; 500 000
 * with both faults took 36 s here at a load of 11, the four servers' start 12 s more. `idempotencyKey: false`: ClickHouse 18.16
 * answers 404 "Unknown setting insert_deduplication_token" to the query parameter (dedup by token
 * came later, and needs Replicated tables anyway). SIGTERM alone is no outage — 18.16 keeps
 * serving open keep-alive connections while it shuts down — hence the SIGKILL beside it.
 * Skipped, with a message, where `clickhouse-server` is not installed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consistentHash, createHttpBalancer } from '../../../src/http/index.js';
import {
  CLICKHOUSE_SKIP_MESSAGE,
  type ClickHouseFleet,
  clickhouseAvailable,
  insertPath,
  startClickHouse,
} from '../../fixtures/clickhouse.js';
import { rows, type Taken, tenantNames } from './rows.js';

const AVAILABLE = clickhouseAvailable();
if (!AVAILABLE) console.log(`${CLICKHOUSE_SKIP_MESSAGE}: the ClickHouse real-fault test`);

const SERVERS = 4;
const RECORDS = 500_000;
const TENANTS = tenantNames(256);
const TABLE = 'real_faults';
const STOPPED = 0;
const KILLED = 2;
/** The killed server stays down at least this long. */
const DOWN_MS = 2_000;

describe.skipIf(!AVAILABLE)('keyed rows into 4 ClickHouse servers', () => {
  let ch: ClickHouseFleet;
  beforeAll(async () => {
    ch = await startClickHouse(SERVERS);
    await ch.createTable(TABLE);
  }, 120_000);
  afterAll(async () => {
    await ch?.close();
  });

  it('one server stopped and one killed mid-run: every row there, each tenant on its home', async () => {
    const http = createHttpBalancer({ origins: [...ch.origins], picker: consistentHash() });
    const taken: Taken = { n: 0 };
    let faults: Promise<unknown> = Promise.resolve();
    const source = rows(RECORDS, TENANTS, taken, {
      at: Math.round(RECORDS / 3),
      hook: async () => {
        // Not awaited by the source: a SIGTERM takes many seconds to end the server.
        faults = Promise.all([
          ch.stop(STOPPED).then(() => ch.restart(STOPPED)),
          ch.kill(KILLED).then(async () => {
            await new Promise((resolve) => setTimeout(resolve, DOWN_MS));
            await ch.restart(KILLED);
          }),
        ]);
      },
    });
    const summary = await http.ingest(source, {
      path: insertPath(TABLE),
      key: (row) => row.tenant,
      idempotencyKey: false,
    });
    await faults;
    await http.close();

    expect(taken.n).toBe(RECORDS);
    expect(summary.written + summary.failed + summary.uncertain).toBe(RECORDS);
    expect(summary).toMatchObject({ written: RECORDS, failed: 0, uncertain: 0 });
    const counts = await ch.counts(TABLE);
    // Each tenant on one server (below), so the servers' distinct ids add up to the rows there.
    expect(counts.distinct).toBe(summary.written);
    expect(counts.rows).toBeGreaterThanOrEqual(summary.written);
    expect(counts.duplicates).toBeLessThanOrEqual(summary.resent);
    const placement = await ch.placement(TABLE);
    expect(placement.size).toBe(TENANTS.length);
    for (const [tenant, servers] of placement) {
      expect(servers).toEqual([ch.origins.indexOf(String(http.homeOf(tenant)))]);
    }
  }, 180_000);
});
