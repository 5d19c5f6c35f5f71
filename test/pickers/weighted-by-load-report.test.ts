import { afterEach, describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { type Balancer, ConfigError, weightedByLoadReport } from '../../src/index.js';
import type { LoadReportPicker } from '../../src/pickers/weighted-by-load-report.js';
import { ManualClock, pickerConformance, seededRandom } from '../../src/testing/index.js';
import { flush, makeBalancer } from '../helpers.js';
import { startServers, type TestServer } from '../http/servers.js';

const IDS = ['a', 'b', 'c'];

function setup(picker: LoadReportPicker = weightedByLoadReport()) {
  const { clock, balancer } = makeBalancer({
    shards: IDS.map((id) => ({ id, target: id })),
    picker,
    random: seededRandom(7),
    maxInFlightPerShard: 100_000,
  });
  return { clock, balancer, picker };
}

/** Runs `n` calls that all start at once (same virtual instant) and returns requests per shard. */
async function picks(balancer: Balancer<string>, n: number): Promise<Record<string, number>> {
  const before = Object.fromEntries(balancer.stats().shards.map((s) => [s.id, s.requests]));
  const runs: Promise<unknown>[] = [];
  for (let i = 0; i < n; i++) runs.push(balancer.run(async () => undefined));
  await Promise.all(runs);
  return Object.fromEntries(
    balancer.stats().shards.map((s) => [s.id, s.requests - (before[s.id] ?? 0)]),
  );
}

const weights = (picker: LoadReportPicker) => IDS.map((id) => picker.weightOf(id));

describe('weightedByLoadReport', () => {
  it('validates its options with ConfigErrors naming the field', () => {
    expect(() => weightedByLoadReport({ blackoutMs: -1 })).toThrow(ConfigError);
    expect(() => weightedByLoadReport({ blackoutMs: -1 })).toThrow(/blackoutMs.*-1/);
    expect(() => weightedByLoadReport({ expiryMs: 0 })).toThrow(/expiryMs/);
    expect(() => weightedByLoadReport({ errorPenalty: Number.NaN })).toThrow(/errorPenalty/);
    expect(() => weightedByLoadReport({ blackout: 1 } as never)).toThrow(/blackout.*known/);
  });

  it('keeps the invariants every picker keeps', () => {
    expect(pickerConformance(() => weightedByLoadReport()).checks.length).toBeGreaterThan(5);
  });

  it('gives every shard weight 1 until one reports: plain smooth round robin', async () => {
    const { balancer, picker } = setup();
    expect(await picks(balancer, 300)).toEqual({ a: 100, b: 100, c: 100 });
    expect(weights(picker)).toEqual([1, 1, 1]);
  });

  it('weighs by rps / (utilization + errorPenalty × eps / rps) once the blackout is over', async () => {
    const { clock, balancer, picker } = setup();
    balancer.reportLoad('a', { cpuUtilization: 0.5, rpsFractional: 300 }); // 600
    balancer.reportLoad('b', { cpuUtilization: 0.25, rpsFractional: 100, eps: 100 }); // 100 / 1.25 = 80
    clock.advance(9_000);
    await picks(balancer, 3);
    expect(weights(picker)).toEqual([1, 1, 1]); // in blackout: every shard at the mean (1)
    clock.advance(1_000); // 10 s after the first reports, 1 s after the last recompute
    expect(await picks(balancer, 1)).toEqual({ a: 1, b: 0, c: 0 });
    // c never reported: it gets the mean of the valid weights, (600 + 80) / 2 = 340.
    expect(weights(picker)).toEqual([600, 80, 340]);
  });

  it('spreads picks in proportion to the weights', async () => {
    const { clock, balancer } = setup();
    balancer.reportLoad('a', { cpuUtilization: 0.5, rpsFractional: 300 }); // 600
    balancer.reportLoad('b', { cpuUtilization: 0.5, rpsFractional: 100 }); // 200
    clock.advance(10_000);
    // c gets the mean, 400: shares 6 : 2 : 4 over a whole cycle of 12 000 picks.
    expect(await picks(balancer, 12_000)).toEqual({ a: 6_000, b: 2_000, c: 4_000 });
  });

  it('penalizes errors by errorPenalty', async () => {
    const report = { cpuUtilization: 0.5, rpsFractional: 100, eps: 50 };
    const strict = setup(weightedByLoadReport({ blackoutMs: 0, errorPenalty: 2 }));
    const lenient = setup(weightedByLoadReport({ blackoutMs: 0, errorPenalty: 0 }));
    for (const { balancer } of [strict, lenient]) {
      balancer.reportLoad('a', report);
      await picks(balancer, 1);
    }
    expect(strict.picker.weightOf('a')).toBeCloseTo(100 / (0.5 + (2 * 50) / 100), 9);
    expect(lenient.picker.weightOf('a')).toBe(200);
  });

  it('recomputes at most once a second', async () => {
    const { clock, balancer, picker } = setup(weightedByLoadReport({ blackoutMs: 0 }));
    balancer.reportLoad('a', { cpuUtilization: 1, rpsFractional: 50 });
    await picks(balancer, 1);
    expect(picker.weightOf('a')).toBe(50);
    balancer.reportLoad('a', { cpuUtilization: 1, rpsFractional: 500 });
    clock.advance(999);
    await picks(balancer, 5);
    expect(picker.weightOf('a')).toBe(50);
    clock.advance(1);
    await picks(balancer, 1);
    expect(picker.weightOf('a')).toBe(500);
  });

  it('expires a weight after the last report and restarts the blackout', async () => {
    const { clock, balancer, picker } = setup(weightedByLoadReport({ expiryMs: 60_000 }));
    balancer.reportLoad('a', { cpuUtilization: 0.5, rpsFractional: 100 });
    clock.advance(10_000);
    balancer.reportLoad('a', { cpuUtilization: 0.5, rpsFractional: 100 });
    await picks(balancer, 1);
    expect(picker.weightOf('a')).toBe(200);
    clock.advance(59_000); // 59 s after the last report: still counts
    await picks(balancer, 1);
    expect(picker.weightOf('a')).toBe(200);
    clock.advance(1_000); // 60 s: expired
    await picks(balancer, 1);
    expect(weights(picker)).toEqual([1, 1, 1]);
    // Reports again: a new blackout, as after a first report.
    balancer.reportLoad('a', { cpuUtilization: 0.5, rpsFractional: 100 });
    clock.advance(5_000);
    balancer.reportLoad('a', { cpuUtilization: 0.5, rpsFractional: 100 });
    await picks(balancer, 1);
    expect(picker.weightOf('a')).toBe(1);
    clock.advance(5_000);
    await picks(balancer, 1);
    expect(picker.weightOf('a')).toBe(200);
  });

  it('treats a report of 0 utilization or 0 rps as no report', async () => {
    const { balancer, picker } = setup(weightedByLoadReport({ blackoutMs: 0 }));
    balancer.reportLoad('a', { cpuUtilization: 0, rpsFractional: 100 });
    balancer.reportLoad('b', { cpuUtilization: 0.5, rpsFractional: 0 });
    balancer.reportLoad('c', { cpuUtilization: 0.5, rpsFractional: 10 });
    await picks(balancer, 1);
    expect(weights(picker)).toEqual([20, 20, 20]);
  });

  it('holds a shard that claims outsized capacity to 10× the median weight', async () => {
    // c's utilization is off by 10 000 (a unit slip, or a shard that lies): 1000 / 0.0001 = 1e7
    // against 2000 for the others. Uncapped, it would take 1e7 / (1e7 + 4000) of the picks.
    const { balancer, picker } = setup(weightedByLoadReport({ blackoutMs: 0 }));
    balancer.reportLoad('a', { cpuUtilization: 0.5, rpsFractional: 1000 });
    balancer.reportLoad('b', { cpuUtilization: 0.5, rpsFractional: 1000 });
    balancer.reportLoad('c', { cpuUtilization: 0.0001, rpsFractional: 1000 });
    expect(await picks(balancer, 1_200)).toEqual({ a: 100, b: 100, c: 1_000 });
    expect(weights(picker)).toEqual([2_000, 2_000, 20_000]);
  });

  it('takes the lower median, so one outlier of two cannot lift its own cap', async () => {
    const { balancer, picker } = setup(weightedByLoadReport({ blackoutMs: 0 }));
    balancer.reportLoad('a', { cpuUtilization: 0.5, rpsFractional: 100 }); // 200
    balancer.reportLoad('b', { cpuUtilization: 1e-6, rpsFractional: 100 }); // 1e8, held to 2000
    await picks(balancer, 1);
    // c never reported: the mean of the held weights, (200 + 2000) / 2.
    expect(weights(picker)).toEqual([200, 2_000, 1_100]);
  });

  it('refuses bad figures and unknown shards, keeping the last good report', async () => {
    const { balancer, picker } = setup(weightedByLoadReport({ blackoutMs: 0 }));
    balancer.reportLoad('a', { cpuUtilization: 0.5, rpsFractional: 100 });
    const bad = [
      { cpuUtilization: -1, rpsFractional: 100 },
      { cpuUtilization: 0.5, rpsFractional: Number.NaN },
      { cpuUtilization: 0.5, rpsFractional: Number.POSITIVE_INFINITY },
      { cpuUtilization: 0.5, rpsFractional: 10, eps: -2 },
      { cpuUtilization: '0.5', rpsFractional: 10 },
      { cpuUtilization: 0.5, rpsFractional: 10, qps: 3 },
    ];
    for (const report of bad) {
      expect(() => balancer.reportLoad('a', report as never)).toThrow(ConfigError);
    }
    expect(() => balancer.reportLoad('zz', { cpuUtilization: 1, rpsFractional: 1 })).toThrow(
      /shard.*"zz"/,
    );
    await picks(balancer, 1);
    expect(picker.weightOf('a')).toBe(200);
    expect(balancer.shards[0]!.loadReport).toMatchObject({ cpuUtilization: 0.5, eps: 0 });
  });

  it('follows membership: a new shard gets the mean weight, a removed one is forgotten', async () => {
    const { balancer, picker } = setup(weightedByLoadReport({ blackoutMs: 0 }));
    balancer.reportLoad('a', { cpuUtilization: 1, rpsFractional: 30 });
    balancer.reportLoad('b', { cpuUtilization: 1, rpsFractional: 10 });
    await picks(balancer, 1);
    await balancer.setShards([
      { id: 'a', target: 'a' },
      { id: 'b', target: 'b' },
      { id: 'd', target: 'd' },
    ]);
    expect(await picks(balancer, 60)).toEqual({ a: 30, b: 10, d: 20 });
    expect(picker.weightOf('c')).toBeUndefined();
    expect(picker.weightOf('d')).toBe(20);
  });
});

describe('weightedByLoadReport over HTTP', () => {
  let servers: TestServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.map((s) => s.close()));
    servers = [];
  });

  it('weighs real shards by their endpoint-load-metrics headers', async () => {
    // Shard i reports rps 100·(i+1) at utilization 0.5: weights 200, 400, 600.
    servers = await startServers(3, (_req, res, _body, server) => {
      const i = servers.indexOf(server);
      res.setHeader(
        'endpoint-load-metrics',
        `TEXT cpu_utilization=0.5,  rps_fractional=${100 * (i + 1)}, eps=0, mem_utilization=0.3`,
      );
      res.end('ok');
    });
    const clock = new ManualClock();
    const picker = weightedByLoadReport();
    const http = createHttpBalancer({
      origins: servers.map((s) => s.origin),
      picker,
      clock,
      random: seededRandom(3),
    });
    try {
      // Equal weights in the blackout: one request per shard brings in every report.
      for (let i = 0; i < 3; i++) await http.request({ path: '/' });
      expect(servers.map((s) => s.requests)).toEqual([1, 1, 1]);
      expect(servers.map((s) => picker.weightOf(s.origin))).toEqual([1, 1, 1]);
      clock.advance(10_000);
      for (let i = 0; i < 120; i++) await http.request({ path: '/' });
      expect(servers.map((s) => picker.weightOf(s.origin))).toEqual([200, 400, 600]);
      // 120 sequential picks at one virtual instant: one whole cycle of 1 : 2 : 3.
      expect(servers.map((s) => s.requests - 1)).toEqual([20, 40, 60]);
    } finally {
      await http.close();
      await flush();
    }
  });
});
