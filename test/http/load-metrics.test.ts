import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseLoadMetrics } from '../../src/http/load-metrics.js';

describe('parseLoadMetrics (endpoint-load-metrics)', () => {
  it('reads the TEXT form whatever the spacing, order and case of the prefix', () => {
    const want = { cpuUtilization: 0.52, rpsFractional: 1210, eps: 3 };
    expect(parseLoadMetrics('TEXT cpu_utilization=0.52, rps_fractional=1210, eps=3')).toEqual(want);
    expect(parseLoadMetrics('  text eps = 3 ,rps_fractional=1210,cpu_utilization=0.52  ')).toEqual(
      want,
    );
    expect(parseLoadMetrics('cpu_utilization=0.52,rps_fractional=1210,eps=3')).toEqual(want);
    expect(parseLoadMetrics(['TEXT cpu_utilization=0.52, rps_fractional=1210, eps=3'])).toEqual(
      want,
    );
  });

  it('reads the JSON form', () => {
    expect(parseLoadMetrics('JSON {"cpu_utilization":0.3,"rps_fractional":20,"eps":1}')).toEqual({
      cpuUtilization: 0.3,
      rpsFractional: 20,
      eps: 1,
    });
    expect(parseLoadMetrics('JSON {"cpu_utilization":0.3')).toBeUndefined();
    expect(parseLoadMetrics('JSON 12')).toBeUndefined();
  });

  it('ignores unknown keys, defaults eps to 0 and ignores a malformed eps', () => {
    expect(
      parseLoadMetrics(
        'TEXT mem_utilization=0.9, named_metrics.queue=4, cpu_utilization=0.5, rps_fractional=10',
      ),
    ).toEqual({ cpuUtilization: 0.5, rpsFractional: 10, eps: 0 });
    expect(parseLoadMetrics('TEXT cpu_utilization=0.5, rps_fractional=10, eps=lots')).toEqual({
      cpuUtilization: 0.5,
      rpsFractional: 10,
      eps: 0,
    });
  });

  it('prefers application_utilization when above 0 (gRPC A58)', () => {
    expect(
      parseLoadMetrics('TEXT cpu_utilization=0.9, application_utilization=0.4, rps_fractional=10'),
    ).toMatchObject({ cpuUtilization: 0.4 });
    expect(
      parseLoadMetrics('TEXT cpu_utilization=0.9, application_utilization=0, rps_fractional=10'),
    ).toMatchObject({ cpuUtilization: 0.9 });
  });

  it('returns undefined without usable utilization and rps', () => {
    for (const bad of [
      undefined,
      '',
      'TEXT',
      'TEXT cpu_utilization=0.5',
      'TEXT rps_fractional=10',
      'TEXT cpu_utilization=-0.5, rps_fractional=10',
      'TEXT cpu_utilization=, rps_fractional=10',
      'TEXT cpu_utilization=0.5, rps_fractional=Infinity',
      'TEXT cpu_utilization=0.5, rps_fractional=1e999',
      'TEXT cpu_utilization=0x, rps_fractional=10',
      'BIN CgkJAAAAAAAA4D8=',
    ]) {
      expect(parseLoadMetrics(bad)).toBeUndefined();
    }
  });

  it('never throws and yields only finite figures ≥ 0, whatever the header', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.array(fc.string())), (header) => {
        const report = parseLoadMetrics(header);
        if (report === undefined) return;
        for (const value of [report.cpuUtilization, report.rpsFractional, report.eps ?? 0]) {
          expect(Number.isFinite(value) && value >= 0).toBe(true);
        }
      }),
      { seed: 16, numRuns: 2_000 },
    );
  });
});
