/**
 * `summary.transit`: the body bytes an ingestion's batch sends report through their context,
 * re-sends included, as the balancer's ledger counts them — in progress reports as it grows, and
 * final once the ingestion settled (a report that comes later counts in `stats().bytes` only).
 */
import { describe, expect, it } from 'vitest';
import type { RunContext } from '../../src/index.js';
import type { IngestProgress } from '../../src/ingest/types.js';
import { fleet, ManualClock, records, run } from './helpers.js';

describe('summary.transit', () => {
  it('counts what each batch send reports, re-sends included; later reports leave it alone', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock, {
      shards: 2,
      retry: { attempts: 3, backoff: { baseMs: 1, maxMs: 1 }, budget: false },
      health: false,
    });
    let sends = 0;
    let kept: RunContext | undefined;
    const progress: IngestProgress[] = [];
    const summary = await run(
      clock,
      balancer.ingest(records(40), {
        batch: { maxRecords: 10 },
        progressMs: 1,
        onProgress: (p) => progress.push(p),
        send: async (_shard, batch, ctx) => {
          const n = ++sends;
          await new Promise<void>((resolve) => clock.setTimer(resolve, 5));
          ctx.reportSent(batch.length * 10, batch.length * 3, 'gzip');
          kept = ctx;
          // The first send of all fails after its body went: its retry reports again.
          if (n === 1) throw new Error('503');
          ctx.reportReceived(2);
        },
      }),
    );
    expect(summary.written).toBe(40);
    expect(sends).toBe(5);
    expect(summary.transit).toEqual({ raw: 500, wire: 150, received: 8 });
    expect(balancer.stats().bytes).toEqual(summary.transit);
    // Progress reports carry it as it grew, the last one whole.
    expect(progress.at(-1)!.transit).toEqual(summary.transit);
    expect(progress.some((p) => p.transit.wire < 150)).toBe(true);
    // A send that reports after the ingestion settled: the balancer counts it, the summary is final.
    kept!.reportSent(1_000, 1_000);
    expect(summary.transit).toEqual({ raw: 500, wire: 150, received: 8 });
    expect(balancer.stats().bytes).toEqual({ raw: 1_500, wire: 1_150, received: 8 });
    // A bad figure is refused (as the balancer's ledger refuses it) and counts nowhere.
    expect(() => kept!.reportSent(-1, 5)).toThrow(/reportSent/);
    expect(balancer.stats().bytes.raw).toBe(1_500);
    await balancer.close();
  });
});
