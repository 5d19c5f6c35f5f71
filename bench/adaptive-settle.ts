/**
 * Where an adaptive limit settles against one shard that serves N calls at once, with 64 callers
 * that keep a call outstanding each: on the simulator (virtual time, seeded: the same figures on
 * every machine) and against a real `node:http` shard on loopback (wall time). Used by
 * bench/adaptive.bench.ts; prints nothing itself.
 *
 * The figure is the one issue #17 quotes: the limit sampled at regular times (every 100 ms, 50
 * samples on the real shard; at every ended call on the simulator), the median of the last half.
 * "Swing" is the lowest and highest sample of that half.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { createHttpBalancer } from '../src/http/index.js';
import type { ConcurrencyLimit, LimitFactory } from '../src/index.js';
import { roundRobin } from '../src/pickers/index.js';
import { simulate } from '../src/testing/index.js';
import { median, nowNs } from './lib.js';

export const CALLERS = 64;
export const SERVICE_MS = 10;

export interface Settled {
  /** Median of the last half of the samples. */
  median: number;
  min: number;
  max: number;
  /** Calls completed per second (virtual or wall). */
  rate: number;
  /** p99 of the callers' latency, ms (virtual or wall). */
  p99: number;
}

function settled(samples: readonly number[], rate: number, p99: number): Settled {
  const half = samples.slice(samples.length >> 1);
  return { median: median(half), min: Math.min(...half), max: Math.max(...half), rate, p99 };
}

/** The factory, with every limit it makes reporting its value after each sample into `into`. */
function recording(factory: LimitFactory, into: number[]): LimitFactory {
  return () => {
    const inner = factory();
    const recorder: ConcurrencyLimit = {
      get limit() {
        return inner.limit;
      },
      onSample(sample) {
        inner.onSample(sample);
        into.push(Math.max(1, Math.floor(inner.limit)));
      },
    };
    return recorder;
  };
}

/** On the simulator: 1 500 × N calls (≈ 15 virtual s), constant service time. */
export async function settleSimulated(factory: LimitFactory, capacity: number): Promise<Settled> {
  const samples: number[] = [];
  const result = await simulate({
    picker: roundRobin(),
    balancerOptions: { maxInFlightPerShard: recording(factory, samples), retry: false },
    shards: [{ id: 's', latency: SERVICE_MS, capacity }],
    concurrency: CALLERS,
    requests: 1_500 * capacity,
    seed: 17,
  });
  const rate = (1_500 * capacity * 1000) / result.durationMs;
  return settled(samples, rate, result.latency.p99);
}

/** Real shards in a child process (bench/http-fixtures/capacity-shards.mjs), one per capacity. */
export async function startCapacityShards(
  capacities: readonly number[],
): Promise<{ child: ChildProcess; origins: string[] }> {
  const child = fork(
    new URL('./http-fixtures/capacity-shards.mjs', import.meta.url),
    [String(SERVICE_MS), ...capacities.map(String)],
    { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] },
  );
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('message', (m: { ports: number[] }) => {
      resolve({ child, origins: m.ports.map((port) => `http://127.0.0.1:${port}`) });
    });
  });
}

const SAMPLES = 50;
const SAMPLE_EVERY_MS = 100;

/** Against a real shard: 64 callers for 50 × 100 ms, the limit read from `stats()` each time. */
export async function settleReal(factory: LimitFactory, origin: string): Promise<Settled> {
  const http = createHttpBalancer({
    origins: [origin],
    // As many connections as callers: the pool never caps below the limit.
    connectionsPerShard: CALLERS,
    warm: 8,
    maxInFlightPerShard: factory,
  });
  await http.warm();
  let stop = false;
  let done = 0;
  const latencies: number[] = [];
  const caller = async () => {
    while (!stop) {
      const t0 = nowNs();
      await http.request({ method: 'POST', path: '/ingest', body: 'x', idempotent: true });
      latencies.push((nowNs() - t0) / 1e6);
      done++;
    }
  };
  const t0 = nowNs();
  const callers = Array.from({ length: CALLERS }, caller);
  const samples: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    await new Promise((resolve) => setTimeout(resolve, SAMPLE_EVERY_MS));
    samples.push(http.stats().shards[0]!.limit);
  }
  stop = true;
  await Promise.all(callers);
  const seconds = (nowNs() - t0) / 1e9;
  await http.close();
  latencies.sort((a, b) => a - b);
  const p99 = latencies[Math.max(0, Math.ceil(0.99 * latencies.length) - 1)] ?? Number.NaN;
  return settled(samples, done / seconds, p99);
}
