// Imports the built package from ESM by its own name (package self-reference) and runs one write.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Balancer,
  ConfigError,
  DeadLetterError as CoreDeadLetterError,
  isShardwiseError,
  peakEwma,
} from 'shardwise';
import { createHttpBalancer } from 'shardwise/http';
import { DeadLetterError, readJsonl, SOURCE_POSITION } from 'shardwise/sources';
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
// The sources entry reads a file and reports its position; its errors are the core's.
const dir = mkdtempSync(join(tmpdir(), 'shardwise-smoke-'));
writeFileSync(join(dir, 'a.jsonl'), '{"id":1}\n{"id":2}\n');
const source = readJsonl(join(dir, 'a.jsonl'), { parse: true });
const ids = [];
for await (const record of source) ids.push(record.id);
assert.deepEqual(ids, [1, 2]);
assert.equal(source[SOURCE_POSITION]().offset, 18);
assert.equal(SOURCE_POSITION, Symbol.for('shardwise.sourcePosition'));
assert.equal(DeadLetterError, CoreDeadLetterError);
rmSync(dir, { recursive: true, force: true });
console.log('smoke esm: ok');
