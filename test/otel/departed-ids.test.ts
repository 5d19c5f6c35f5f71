/**
 * `instrument()` keeps attribute sets per shard so that an event allocates none, but only for the
 * members and the shards seen at the last collection: a departed id is observed once more (its
 * gauges at 0), then forgotten, and an id that came and went between two collections is forgotten
 * when it leaves. A DNS answering fresh addresses with TTL 0 could otherwise grow it without
 * limit: measured before the fix at +23.7 MiB per 60 000 departed ids (~415 B each).
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { AggregationTemporality, MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it } from 'vitest';
import type { Balancer } from '../../src/index.js';
import { instrument } from '../../src/otel/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { makeBalancer } from '../helpers.js';
import { collect, type Point, sum, TestReader } from './metrics.js';

const shardsOf = (points: Point[] | undefined) =>
  (points ?? []).map((p) => p.attributes['shardwise.shard'] as string).sort();

describe('instrument() forgets departed shards', () => {
  let provider: MeterProvider | undefined;
  afterEach(async () => {
    await provider?.shutdown();
    provider = undefined;
  });

  /**
   * Cumulative readers by default; delta for the heap test: a cumulative SDK reader itself keeps
   * every attribute set it ever exported (up to 2 000 new ones a collection and metric), which is
   * the SDK's retention, not the instrument's. A delta reader keeps the last collection's only.
   */
  function setup(temporality?: AggregationTemporality) {
    const reader =
      temporality === undefined
        ? new TestReader()
        : new TestReader({ aggregationTemporalitySelector: () => temporality });
    provider = new MeterProvider({ readers: [reader] });
    const { balancer } = makeBalancer({
      shards: [{ id: 'keep', target: 'keep' }],
      random: seededRandom(9),
    });
    const detach = instrument(balancer, { meterProvider: provider });
    return { reader, balancer, detach };
  }

  /** Makes `id` the only shard and runs one call on it (a success event for it). */
  async function visit(balancer: Balancer<string>, id: string): Promise<void> {
    await balancer.setShards([{ id, target: id }]);
    await balancer.run(async () => 1);
  }

  it('60 000 departed ids, some collected and most never, grow the heap by less than 1 MiB', async () => {
    // A collector of our own (vitest's fork has no --expose-gc): the heap is read after full GCs.
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const heap = (): number => {
      gc();
      gc();
      return process.memoryUsage().heapUsed;
    };
    const { reader, balancer, detach } = setup(AggregationTemporality.DELTA);
    // A collection every 2 500 ids: a quarter of them seen by one, the rest coming and going
    // between two.
    let counted = 0;
    const take = async () => {
      counted += sum((await collect(reader)).get('shardwise.attempts'));
    };
    const churn = async (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        await visit(balancer, `10.0.${i >> 8}.${i & 255}:8080`);
        if (i % 2_500 === 0) await take();
      }
    };
    // Warm-up, so that both readings find the SDK in the same state — 2 000 attribute sets a
    // metric since the last collection (its cardinality limit: past it, one overflow set) and as
    // many in its last report — and the code compiled. Neither is the instrument's.
    await churn(0, 5_000);
    const before = heap();
    await churn(5_000, 65_000);
    const after = heap();
    expect(after - before).toBeLessThan(2 ** 20);
    // Still counting: every call of the 65 000 is in shardwise.attempts (deltas summed).
    await take();
    expect(counted).toBe(65_000);
    detach();
  }, 300_000); // 65 000 calls: seconds here, minutes on a machine at load 16

  it('a departed id is observed once more at 0, then never; one that came and went between collections is never observed', async () => {
    const { reader, balancer, detach } = setup();
    await visit(balancer, 'a');
    const m1 = await collect(reader);
    expect(shardsOf(m1.get('shardwise.in_flight'))).toEqual(['a']);
    await visit(balancer, 'b'); // a leaves; b joins, works, and leaves before any collection
    await visit(balancer, 'c');
    const m2 = await collect(reader);
    const a2 = (m2.get('shardwise.limit') ?? []).find(
      (p) => p.attributes['shardwise.shard'] === 'a',
    );
    expect(a2?.value).toBe(0); // observed once more, at 0
    expect(shardsOf(m2.get('shardwise.in_flight'))).toEqual(['a', 'c']);
    // b's call was counted, though no gauge ever showed it.
    expect(shardsOf(m2.get('shardwise.attempts'))).toEqual(['a', 'b', 'c']);
    await visit(balancer, 'a'); // back: a member again, observed as one
    const m3 = await collect(reader);
    const limits = (m3.get('shardwise.limit') ?? []).map((p) => [
      p.attributes['shardwise.shard'],
      p.value,
    ]);
    // A cumulative reader repeats the last value of a set it saw (a: 32 now, c: 0 from now on).
    expect(limits.sort()).toEqual([
      ['a', 32],
      ['c', 0],
    ]);
    detach();
  });
});
