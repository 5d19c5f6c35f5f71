/**
 * Byte-aware load: with `p2c({ load: 'bytes' })` and runs that declare `bytes`, a shard busy with
 * one huge upload is passed over for new runs; counting calls (`p2c()`) would not see it.
 * Deterministic: a manual clock, a seeded random source, and tasks that stay pending.
 */
import { describe, expect, it } from 'vitest';
import { type Picker, p2c } from '../../src/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { countBy, flush, makeBalancer, shardsOf } from '../helpers.js';

const HUGE = 2_000_000_000; // a 2 GB upload in flight
const SMALL = 1_000;

/** Starts one huge upload, then `n` small runs; returns where the small ones went. */
async function newRunsBeside(picker: Picker, n: number) {
  const { balancer } = makeBalancer({
    shards: shardsOf(['a', 'b', 'c', 'd']),
    picker,
    maxInFlightPerShard: 1_000,
    random: seededRandom(2024),
  });
  const never = () => new Promise<void>(() => {});
  // The huge upload goes where the (seeded) picker sends it; the test follows it there.
  const first: string[] = [];
  balancer.on('pick', ({ shard }) => first.push(shard.id));
  void balancer.run(never, { bytes: HUGE }).catch(() => {});
  await flush();
  const huge = first[0]!;
  first.length = 0;
  for (let i = 0; i < n; i++) void balancer.run(never, { bytes: SMALL }).catch(() => {});
  await flush();
  const picks = countBy(first);
  const snapshot = balancer.shards.map((s) => ({
    id: s.id,
    inFlight: s.inFlight,
    bytes: s.bytesInFlight,
  }));
  await balancer.close({ drain: false });
  return { huge, picks, snapshot };
}

describe('byte-aware load', () => {
  it('p2c by bytes gives no new run to the shard holding a huge upload', async () => {
    const { huge, picks, snapshot } = await newRunsBeside(p2c({ load: 'bytes' }), 300);
    expect(picks[huge]).toBeUndefined(); // every pair that includes it prefers the other shard
    const others = Object.values(picks);
    expect(others.reduce((a, b) => a + b, 0)).toBe(300);
    // The rest is spread by bytes: P2C keeps the three other shards within a few runs.
    expect(others).toHaveLength(3);
    expect(Math.max(...others) - Math.min(...others)).toBeLessThanOrEqual(3);
    const big = snapshot.find((s) => s.id === huge)!;
    expect(big).toMatchObject({ inFlight: 1, bytes: HUGE });
  });

  it('p2c by call count sends that shard its share, as if the upload were small', async () => {
    const { huge, picks } = await newRunsBeside(p2c(), 300);
    // Counting calls, the busy shard is one call behind the others: it gets nearly a quarter.
    expect(picks[huge]).toBeGreaterThanOrEqual(70);
    expect(picks[huge]).toBeLessThanOrEqual(75);
  });

  it('bytesInFlight follows runs as they start and settle', async () => {
    const { balancer } = makeBalancer({
      shards: shardsOf(['a']),
      picker: p2c({ load: 'bytes' }),
    });
    let release!: () => void;
    const running = balancer.run(() => new Promise<void>((r) => (release = r)), { bytes: 5_000 });
    expect(balancer.shards[0]!.bytesInFlight).toBe(5_000);
    release();
    await running;
    expect(balancer.shards[0]!.bytesInFlight).toBe(0);
  });
});
