// Imports the built package from ESM by its own name (package self-reference) and runs one write.
import assert from 'node:assert/strict';
import { Balancer, ConfigError, isShardwiseError, peakEwma } from 'shardwise';
import { ManualClock, seededRandom } from 'shardwise/testing';

const balancer = new Balancer({
  shards: [
    { id: 'a', target: 'A' },
    { id: 'b', target: 'B' },
  ],
  picker: peakEwma(),
  random: seededRandom(1),
});
const got = await balancer.run(async (shard) => shard.target);
assert.ok(got === 'A' || got === 'B');
assert.throws(() => new Balancer({ shards: [] }), (e) => e instanceof ConfigError && isShardwiseError(e));
assert.equal(new ManualClock(5).now(), 5);
await balancer.close();
console.log('smoke esm: ok');
