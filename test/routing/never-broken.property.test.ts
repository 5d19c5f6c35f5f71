import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  consistentHash,
  type Picker,
  p2c,
  peakEwma,
  type Requirement,
  roundRobin,
  type ShardSpec,
  type ShardState,
} from '../../src/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
import { flush, makeBalancer } from '../helpers.js';

/**
 * The governance guarantee, checked by property: whatever the picker, failures, timeouts,
 * ejections, panic mode, retries, membership changes and bounded-load spill do, no attempt ever
 * reaches a shard outside its run's rule. 20 scenarios × 5 000 runs = 100 000 runs.
 */
const REGIONS = ['eu', 'us', 'ch'] as const;
const SITES = ['onprem', 'cloud'] as const;

const pickers: Record<string, () => Picker> = {
  'round-robin': roundRobin,
  p2c: () => p2c(),
  'peak-ewma': () => peakEwma(),
  'ring+bounded': () => consistentHash({ algorithm: 'ring', boundedLoad: 1.25 }),
  maglev: () => consistentHash({ algorithm: 'maglev' }),
};

const scenario = fc.record({
  picker: fc.constantFrom(...Object.keys(pickers)),
  seed: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
  failureRates: fc.array(fc.constantFrom(0, 0, 0.2, 0.6, 1), { minLength: 6, maxLength: 6 }),
  hangs: fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
  panicThreshold: fc.constantFrom(0, 50, 90),
  maxEjectedPercent: fc.constantFrom(10, 50, 100),
  removeAt: fc.integer({ min: 500, max: 4_000 }),
  removeIndex: fc.integer({ min: 0, max: 5 }),
  prefer: fc.boolean(),
});

function labelsOf(i: number) {
  return { region: REGIONS[i % 3]!, site: SITES[Math.floor(i / 3) % 2]! };
}

function satisfied(shard: ShardState, rule: Requirement | undefined): boolean {
  if (rule === undefined) return true;
  return Object.entries(rule).every(([label, allowed]) =>
    typeof allowed === 'string'
      ? shard.labels[label] === allowed
      : allowed.includes(shard.labels[label]!),
  );
}

describe('routing rules are never broken', () => {
  it('no attempt reaches a shard outside its rule (100 000 runs, random failures and changes)', async () => {
    let totalRuns = 0;
    let totalAttempts = 0;
    let totalRetries = 0;
    let totalViolations = 0;
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const clock = new ManualClock();
        const rnd = seededRandom(s.seed);
        const specs: ShardSpec<number>[] = Array.from({ length: 6 }, (_, i) => ({
          id: `s${i}`,
          target: i,
          labels: labelsOf(i),
        }));
        const { balancer } = makeBalancer({
          clock,
          shards: specs,
          picker: pickers[s.picker]!(),
          maxInFlightPerShard: 4,
          timeoutMs: 30,
          // Keyed runs wait for an ejected home at most this long (all must settle in the loop).
          deliveryTimeoutMs: 200,
          retry: { attempts: 4, backoff: { baseMs: 1, maxMs: 10 } },
          health: {
            consecutiveFailures: 3,
            baseEjectionMs: 200,
            maxEjectedPercent: s.maxEjectedPercent,
            panicThreshold: s.panicThreshold,
          },
          ...(s.prefer ? { prefer: [{ site: 'onprem' }, { site: 'cloud' }] } : {}),
          random: seededRandom(s.seed + 1),
        });
        let violations = 0;
        let attempts = 0;
        const rules: (Requirement | undefined)[] = [
          undefined,
          { region: 'eu' },
          { region: ['eu', 'ch'] },
          { site: 'onprem' },
          { region: 'us', site: 'cloud' },
        ];
        const send = (rule: Requirement | undefined) => (shard: ShardState<number>) =>
          new Promise<void>((resolve, reject) => {
            attempts++;
            if (!satisfied(shard, rule)) violations++;
            if (s.hangs[shard.target]! && rnd() < 0.3) return; // cut by the timeout
            clock.setTimer(
              () => {
                if (rnd() < s.failureRates[shard.target]!) reject(new Error('boom'));
                else resolve();
              },
              1 + rnd() * 5,
            );
          });
        let settled = 0;
        let removed = false;
        for (let i = 0; i < 5_000; i++) {
          if (!removed && i === s.removeAt) {
            removed = true;
            void balancer.removeShard(`s${s.removeIndex}`, { drain: rnd() < 0.5 });
          }
          if (i === s.removeAt + 500)
            balancer.addShard({
              id: 'late',
              target: s.removeIndex,
              labels: labelsOf(s.removeIndex),
            });
          const rule = rules[i % rules.length];
          const options = {
            idempotent: true,
            key: `k${i % 97}`,
            ...(rule === undefined ? {} : { require: rule }),
          };
          balancer.run(send(rule), options).then(
            () => settled++,
            () => settled++,
          );
          if (i % 8 === 7) {
            clock.advance(1);
            await flush();
          }
        }
        for (let k = 0; k < 5_000 && settled < 5_000; k++) {
          clock.advance(5);
          await flush();
        }
        totalRuns += settled;
        totalAttempts += attempts;
        totalRetries += balancer.stats().retries;
        totalViolations += violations;
        return settled === 5_000 && violations === 0;
      }),
      { numRuns: 20, seed: 20261130 },
    );
    expect(totalRuns).toBe(100_000);
    expect(totalAttempts).toBeGreaterThan(50_000);
    expect(totalRetries).toBeGreaterThan(1_000); // retries happened
    expect(totalViolations).toBe(0);
  });
});
