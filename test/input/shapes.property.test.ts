import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { Balancer, ConfigError, consistentHash, p2c, peakEwma } from '../../src/index.js';
import { createS3Balancer, createS3Client } from '../../src/s3/index.js';
import { clientOptions } from '../s3/server.js';
import { failureOf } from './shapes.js';

/**
 * Property: whatever value lands in an options slot — nested objects, Maps, Sets, Dates, sparse
 * and typed arrays, boxed values, null-prototype objects, bigints — a public entry either accepts
 * it or fails with a `ConfigError`. Never a `TypeError` from deep inside, never anything else.
 */
const anything = fc.anything({
  maxDepth: 3,
  withMap: true,
  withSet: true,
  withDate: true,
  withSparseArray: true,
  withNullPrototype: true,
  withBoxedValues: true,
  withTypedArray: true,
  withBigInt: true,
});

/** A failure that is not a ConfigError, described; undefined when the call kept the promise. */
async function brokenPromise(call: () => unknown): Promise<string | undefined> {
  const error = await failureOf(call);
  if (error === undefined || error instanceof ConfigError) return undefined;
  return `${(error as Error)?.name}: ${(error as Error)?.message}`;
}

const SEED = 14;
const RUNS = 300;

describe('any value in an options slot is accepted or a ConfigError', () => {
  it('new Balancer(x), new Balancer({ shards: x }) and new Balancer({ shards, <option>: x })', async () => {
    const options = [
      'retry',
      'health',
      'picker',
      'clock',
      'prefer',
      'maxInFlightPerShard',
      'maxQueued',
      'timeoutMs',
      'overflow',
    ];
    await fc.assert(
      fc.asyncProperty(anything, fc.constantFrom(...options), async (value, name) => {
        for (const make of [
          () => new Balancer(value as never),
          () => new Balancer({ shards: value as never }),
          () => new Balancer({ shards: [{ id: 'a', target: 0 }], [name]: value } as never),
        ]) {
          const broken = await brokenPromise(() => {
            const b = make();
            void b.close({ drain: false });
          });
          expect(broken).toBeUndefined();
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('run(fn, x), wrap(fn, x), addShard(x), setShards(x), removeShard(id, x), close(x)', async () => {
    await fc.assert(
      fc.asyncProperty(anything, async (value) => {
        const balancer = new Balancer({ shards: [{ id: 'a', target: 0 }] });
        const calls = [
          () => balancer.run(async () => 1, value as never),
          () => balancer.wrap(async () => 1, value as never),
          () => balancer.addShard(value as never),
          () => balancer.setShards(value as never),
          () => balancer.removeShard('none', value as never),
          () => balancer.close(value as never),
        ];
        for (const call of calls) expect(await brokenPromise(call)).toBeUndefined();
        await balancer.close({ drain: false });
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('picker factories', async () => {
    await fc.assert(
      fc.asyncProperty(anything, async (value) => {
        for (const make of [p2c, peakEwma, consistentHash]) {
          expect(await brokenPromise(() => make(value as never))).toBeUndefined();
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('createHttpBalancer(x), request(x), request({ headers: x }), createS3Balancer(x), putObject(x)', async () => {
    const http = createHttpBalancer({ origins: ['http://127.0.0.1:1'], retry: false });
    const client = createS3Client(clientOptions('http://127.0.0.1:1'));
    const s3 = createS3Balancer({ targets: [{ client, bucket: 'bucket-a' }], retry: false });
    await fc.assert(
      fc.asyncProperty(anything, async (value) => {
        const calls = [
          () => void createHttpBalancer(value as never).close({ drain: false }),
          () => void createS3Balancer(value as never).close({ drain: false }),
          // A request that passes its checks goes to a port nothing listens on: refused, which
          // is not a shape error, so only a synchronous check failure or a ConfigError counts.
          () => http.request(value as never).catch(notSent),
          () => http.request({ headers: value as never }).catch(notSent),
          () => s3.putObject(value as never).catch(notSent),
        ];
        for (const call of calls) expect(await brokenPromise(call)).toBeUndefined();
      }),
      { seed: SEED, numRuns: RUNS },
    );
    await http.close({ drain: false });
    await s3.close({ drain: false });
    client.destroy();
  });
});

/** Swallows the refusal of a request that passed its checks; rethrows anything else. */
function notSent(error: unknown): void {
  if (error instanceof ConfigError) throw error;
  const text = `${(error as Error)?.name} ${(error as Error)?.message}`;
  if (/ECONNREFUSED|RetriesExhausted/.test(text)) return;
  throw error;
}
