/**
 * A small fleet on loopback: 4 forked producer processes, each with its own HTTP balancer, and
 * 8 real HTTP shards in one server process (bench/fleet/). Counts only — every request settled,
 * every shard served some, the shards completed exactly what the producers saw succeed — never a
 * time, share or latency (those are measured in bench/fleet.bench.ts).
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  runFleet,
  type Shards,
  startProducers,
  startShards,
  stopAll,
} from '../../bench/fleet/fleet.js';

const PRODUCERS = 4;
const PER_PRODUCER = 150;

describe('a fleet of 4 producer processes × 8 HTTP shards', () => {
  let shards: Shards;
  let producers: ChildProcess[] = [];
  beforeAll(async () => {
    shards = await startShards(8, 4, 2);
    producers = await startProducers(PRODUCERS);
  }, 60_000);
  afterAll(async () => {
    await stopAll(producers);
    await shards?.close();
  });

  for (const picker of ['peakEwma', 'weightedByLoadReport'] as const) {
    it(`${picker}: every request settles, none is lost, no shard is starved`, async () => {
      const run = await runFleet(shards, producers, {
        picker,
        workers: 8,
        count: PER_PRODUCER,
        // A bound, not a measure: the producers stop at `count`; past this they stop anyway.
        durationMs: 40_000,
        deadlineMs: 50_000,
      });
      for (const p of run.producers) {
        expect(p.errors).toEqual([]);
        expect(p.sent).toBe(PER_PRODUCER);
        expect(p.ok + p.failed).toBe(p.sent);
        expect(p.failed).toBe(0);
      }
      const completed = run.shards.reduce((s, x) => s + x.completed, 0);
      expect(completed).toBe(PRODUCERS * PER_PRODUCER);
      for (const shard of run.shards) {
        expect(shard.completed).toBeGreaterThan(0);
        expect(shard.inFlight).toBe(0);
        expect(shard.arrivals.reduce((a, b) => a + b, 0)).toBe(shard.completed);
      }
    }, 70_000);
  }
});
