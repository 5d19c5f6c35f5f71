// Imports the built package from ESM by its own name (package self-reference) and runs one write.
import assert from 'node:assert/strict';
import { Balancer, ConfigError, isShardwiseError, peakEwma } from 'shardwise';
import { createHttpBalancer } from 'shardwise/http';
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
assert.throws(
  () => new Balancer({ shards: [] }),
  (e) => e instanceof ConfigError && isShardwiseError(e),
);
assert.equal(new ManualClock(5).now(), 5);
await balancer.close();
const http = createHttpBalancer({ origins: ['http://127.0.0.1:9'] });
assert.equal(http.shards.length, 1);
await http.close();
// Importing the HTTP transport must leave Node's own fetch dispatcher alone.
assert.equal(globalThis[Symbol.for('undici.globalDispatcher.1')], undefined);
console.log('smoke esm: ok');
