import { describe, expect, it } from 'vitest';
import type { Picker, ShardState } from '../../src/base/types.js';
import { consistentHash } from '../../src/pickers/hashing/index.js';
import {
  leastInFlight,
  p2c,
  peakEwma,
  random,
  roundRobin,
  weightedRoundRobin,
} from '../../src/pickers/index.js';
import { INVARIANTS, pickerConformance } from '../../src/testing/index.js';

function brokenWith(factory: () => Picker): string {
  try {
    pickerConformance(factory);
  } catch (error) {
    expect(error).toBeInstanceOf(Error);
    return (error as Error).message;
  }
  throw new Error('pickerConformance accepted a broken picker');
}

/** A keyed picker in a few lines: a key's number modulo the shard count, among those offered. */
function modulo(): Picker {
  return {
    name: 'modulo',
    keyed: true,
    pick(shards, request) {
      if (shards.length === 0) return undefined;
      const key = String(request.key ?? '');
      let h = 0;
      for (let i = 0; i < key.length; i++) h = (Math.imul(h, 31) + key.charCodeAt(i)) >>> 0;
      return shards[h % shards.length];
    },
  };
}

describe('pickerConformance', () => {
  it.each([
    ['roundRobin', roundRobin],
    ['weightedRoundRobin', weightedRoundRobin],
    ['random', random],
    ['p2c', () => p2c()],
    ['p2c ewma', () => p2c({ load: 'ewma' })],
    ['leastInFlight', leastInFlight],
    ['peakEwma', () => peakEwma()],
    ['a hand-written keyed picker', modulo],
  ])('passes for %s', (_, factory) => {
    const report = pickerConformance(factory);
    expect(report.picker).toBe(factory().name);
    expect(report.checks).toContain(INVARIANTS.offered);
    expect(report.checks).toContain(INVARIANTS.exclusion);
    expect(report.checks).toContain(INVARIANTS.deterministic);
    expect(report.checks).toContain(INVARIANTS.immutable);
  });

  it.each(['ring', 'maglev', 'rendezvous', 'jump'] as const)(
    'passes for consistentHash %s, with the keyed checks',
    (algorithm) => {
      const factory = () =>
        consistentHash(
          algorithm === 'jump' ? { algorithm } : { algorithm, boundedLoad: 1.25 },
        ) as Picker;
      // jump takes no weights (a ConfigError when they differ): check it on equal weights.
      const report = pickerConformance(factory, { shards: 8, equalWeights: algorithm === 'jump' });
      expect(report.checks).toContain(INVARIANTS.sticky);
    },
  );

  it('catches a picker that returns a foreign shard', () => {
    const message = brokenWith(() => ({
      name: 'foreign',
      pick: (shards) => (shards.length === 0 ? undefined : { ...shards[0]! }),
    }));
    expect(message).toContain(`breaks "${INVARIANTS.offered}"`);
    expect(message).toContain('picker "foreign"');
  });

  it('catches a picker that returns an excluded shard', () => {
    const message = brokenWith(() => {
      let members: readonly ShardState[] = [];
      return {
        name: 'sticky-first',
        rebuild(shards) {
          members = shards;
        },
        pick: (shards) => (shards.length === 0 ? undefined : (members[0] ?? shards[0])),
      };
    });
    expect(message).toContain(`breaks "${INVARIANTS.exclusion}"`);
  });

  it('catches a picker that is not deterministic under a seed', () => {
    // Each construction shifts its choices: two pickers with one seed disagree.
    let constructions = 0;
    const message = brokenWith(() => {
      const shift = constructions++;
      return {
        name: 'drifting',
        pick: (shards, request) =>
          shards.length === 0
            ? undefined
            : shards[(((request.random() * shards.length) | 0) + shift) % shards.length],
      };
    });
    expect(message).toContain(`breaks "${INVARIANTS.deterministic}"`);
  });

  it('catches a picker that writes to a shard or sorts the list in place', () => {
    const writes = brokenWith(() => ({
      name: 'writer',
      pick(shards) {
        const shard = shards[0];
        if (shard !== undefined) (shard as { inFlight: number }).inFlight = 0;
        return shard;
      },
    }));
    expect(writes).toContain(`breaks "${INVARIANTS.immutable}"`);
    const sorts = brokenWith(() => ({
      name: 'sorter',
      pick: (shards) => (shards as ShardState[]).sort((a, b) => a.inFlight - b.inFlight)[0],
    }));
    expect(sorts).toContain(`breaks "${INVARIANTS.immutable}"`);
  });

  it('catches a picker that returns nothing from a non-empty list', () => {
    const message = brokenWith(() => ({
      name: 'shy',
      pick: (shards) => (shards.length > 1 ? undefined : shards[0]),
    }));
    expect(message).toContain(`breaks "${INVARIANTS.chooses}"`);
  });

  it('catches a picker that fails with one shard, or throws on an empty list', () => {
    const one = brokenWith(() => ({ name: 'pair', pick: (shards) => shards[1] }));
    expect(one).toContain(`breaks "${INVARIANTS.one}"`);
    const empty = brokenWith(() => ({
      name: 'strict',
      pick(shards) {
        if (shards.length === 0) throw new Error('no shards');
        return shards[0];
      },
    }));
    expect(empty).toContain(`breaks "${INVARIANTS.empty}"`);
  });

  it('catches a picker that breaks on membership change', () => {
    const message = brokenWith(() => {
      let size = -1;
      return {
        name: 'fixed-size',
        rebuild(shards) {
          if (size >= 0 && shards.length !== size) throw new Error('membership is fixed');
          size = shards.length;
        },
        pick: (shards) => shards[0],
      };
    });
    expect(message).toContain(`breaks "${INVARIANTS.membership}"`);
  });

  it('catches a keyed picker that does not route a key consistently', () => {
    const message = brokenWith(() => ({
      name: 'fickle',
      keyed: true,
      pick: (shards, request) => shards[(request.random() * shards.length) | 0],
    }));
    expect(message).toContain(`breaks "${INVARIANTS.sticky}"`);
  });

  it('catches a factory that does not return a picker', () => {
    const message = brokenWith(() => ({ name: 'no-pick' }) as unknown as Picker);
    expect(message).toContain(`breaks "${INVARIANTS.shape}"`);
  });
});
