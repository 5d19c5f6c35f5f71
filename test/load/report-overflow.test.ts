/**
 * weightedByLoadReport: one shard's finite but huge ORCA figures (accepted by `reportLoad` and by
 * the HTTP transport's parser) overflow the smooth WRR's total weight to Infinity; its scores
 * become -Infinity/NaN and the picker returns undefined for healthy shards: runs fail with
 * NoShardAvailableError.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { weightedByLoadReport } from '../../src/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
import { makeBalancer, shardsOf } from '../helpers.js';
import { startServer, type TestServer } from '../http/servers.js';

let servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

describe('weightedByLoadReport with a huge (finite) report', () => {
  it('reportLoad: one shard reporting rps 1.5e308 must not make picks fail on healthy shards', async () => {
    const picker = weightedByLoadReport({ blackoutMs: 0 });
    const { balancer } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c']),
      picker,
    });
    // Accepted: every figure is a finite number ≥ 0.
    balancer.reportLoad('a', { cpuUtilization: 1, rpsFractional: 1.5e308 });
    const errors: string[] = [];
    let written = 0;
    for (let i = 0; i < 30; i++) {
      await balancer
        .run(async () => {
          written++;
        })
        .catch((e: unknown) => errors.push((e as Error).name));
    }
    await balancer.close();
    // docs/writing-a-picker.md: "Return `undefined` only when none fits".
    expect(errors).toEqual([]);
    expect(written).toBe(30);
  });

  it('HTTP: a shard answering `endpoint-load-metrics: TEXT cpu_utilization=1, rps_fractional=1.5e308` stops every pick', async () => {
    for (let i = 0; i < 3; i++) {
      const liar = i === 0;
      servers.push(
        await startServer((_req, res) => {
          // Only the first shard reports (the others do not send ORCA headers yet).
          if (liar)
            res.setHeader(
              'endpoint-load-metrics',
              'TEXT cpu_utilization=1, rps_fractional=1.5e308',
            );
          res.end('ok');
        }),
      );
    }
    const clock = new ManualClock();
    const http = createHttpBalancer({
      origins: servers.map((s) => s.origin),
      picker: weightedByLoadReport(),
      clock,
      random: seededRandom(3),
    });
    const errors: string[] = [];
    try {
      for (let i = 0; i < 3; i++) await http.request({ path: '/' });
      clock.advance(10_000); // past the blackout
      for (let i = 0; i < 30; i++) {
        await http.request({ path: '/' }).catch((e: unknown) => errors.push((e as Error).name));
      }
    } finally {
      await http.close();
    }
    // docs/reference.md: "No weight counts for more than 10× the lower median one, so a shard whose figures
    // are off by a unit (or that lies) cannot draw nearly every pick." Here it stops all of them.
    expect(errors).toEqual([]);
  });
});
