// Requires the built package from CommonJS by its own name and runs one write; checks that an
// error made by the ESM copy is recognised by the CJS copy (the brand survives two copies).
const assert = require('node:assert/strict');
const { Balancer, ConfigError, roundRobin } = require('shardwise');
const { seededRandom } = require('shardwise/testing');
const { createHttpBalancer, HttpError } = require('shardwise/http');
const { DeadLetterError, readDeadLetters } = require('shardwise/sources');

async function main() {
  const balancer = new Balancer({
    shards: [{ id: 'a', target: 'A' }],
    picker: roundRobin(),
    random: seededRandom(2),
  });
  assert.equal(await balancer.run(async (shard) => shard.target), 'A');
  const esm = await import('shardwise');
  let fromEsm;
  try {
    new esm.Balancer({ shards: 'nope' });
  } catch (error) {
    fromEsm = error;
  }
  assert.ok(fromEsm instanceof ConfigError, 'an ESM ConfigError is a CJS ConfigError');
  await balancer.close();
  const http = createHttpBalancer({ origins: ['http://127.0.0.1:9'] });
  assert.equal(typeof HttpError, 'function');
  await http.close();
  const sources = await import('shardwise/sources');
  const fromEsmSources = new sources.DeadLetterError('x.ndjson', 'could not be written');
  assert.ok(fromEsmSources instanceof DeadLetterError, 'an ESM DeadLetterError is a CJS one');
  assert.equal(typeof readDeadLetters, 'function');
  console.log('smoke cjs: ok');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
