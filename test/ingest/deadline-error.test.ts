/**
 * A record past its delivery deadline fails with a `ShardUnavailableError` naming the
 * `deliveryTimeoutMs` the user set — not the time its batch had left when the batch went to the
 * balancer (found by the real-fault bench: its never-back scenario, deliveryTimeoutMs 10 000, was
 * told "past its delivery deadline (deliveryTimeoutMs 9572.108631999989)").
 */
import { expect, it } from 'vitest';
import { consistentHash, type ShardState, ShardUnavailableError } from '../../src/index.js';
import { fleet, ManualClock, type Rec, run } from './helpers.js';

const refused = () => Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });

it('names the deliveryTimeoutMs that was set, whenever the batch went to the balancer', async () => {
  const clock = new ManualClock();
  const balancer = fleet(clock, {
    shards: 2,
    picker: consistentHash(),
    health: { baseEjectionMs: 600_000 },
  });
  const dead = 'a';
  const data: Rec[] = Array.from({ length: 64 }, (_, id) => ({ id, key: `t${id}` })).filter(
    (r) => balancer.homeOf(r.key!) === dead,
  );
  // The source stays open for 300 ms after its records: their batch goes when its linger ends,
  // 100 ms after they were taken.
  async function* source() {
    yield* data;
    await new Promise<void>((r) => clock.setTimer(r, 300));
  }
  const summary = await run(
    clock,
    balancer.ingest(source(), {
      key: (r) => r.key,
      deliveryTimeoutMs: 1_000,
      batch: { maxRecords: 1_000, lingerMs: 100 },
      send: async (_shard: ShardState<string>) => {
        throw refused();
      },
    }),
    60_000,
  );
  expect(summary.failed).toBe(data.length);
  for (const { error } of summary.failures) {
    expect(error).toBeInstanceOf(ShardUnavailableError);
    expect((error as ShardUnavailableError).shardId).toBe(dead);
    expect((error as Error).message).toContain(
      'past its delivery deadline (deliveryTimeoutMs 1000)',
    );
  }
});
