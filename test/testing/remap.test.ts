import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/base/errors.js';
import type { Picker } from '../../src/base/types.js';
import { consistentHash } from '../../src/pickers/hashing/index.js';
import { roundRobin } from '../../src/pickers/index.js';
import { remapFraction } from '../../src/testing/index.js';

const ids = (n: number) => Array.from({ length: n }, (_, i) => `s${i}`);

/** Key `key-i` goes to the shard at position i mod n: the textbook case of a bad remap. */
function modulo(): Picker {
  return {
    name: 'modulo',
    keyed: true,
    pick(shards, request) {
      if (shards.length === 0) return undefined;
      const i = Number(String(request.key).slice('key-'.length));
      return shards[i % shards.length];
    },
  };
}

describe('remapFraction', () => {
  it('modulo hashing moves 8/9 of the keys from 8 to 9 shards (exact)', () => {
    // key i stays iff i mod 8 = i mod 9, i.e. i mod 72 < 8: 8 keys in every 72 stay.
    expect(remapFraction({ picker: modulo, before: ids(8), after: ids(9), keys: 7_200 })).toBe(
      8 / 9,
    );
    // Nothing changes, nothing moves.
    expect(remapFraction({ picker: modulo, before: ids(8), after: ids(8), keys: 100 })).toBe(0);
    // Removing the last of 2 shards moves exactly the odd keys.
    expect(
      remapFraction({ picker: modulo, before: ['a', 'b'], after: ['a'], keys: ['key-1', 'key-2'] }),
    ).toBe(0.5);
  });

  it('a hash ring moves ≈ 1/9 of the keys when a 9th shard joins 8 (within 0.05)', () => {
    const moved = remapFraction({
      picker: () => consistentHash({ algorithm: 'ring' }),
      before: ids(8),
      after: ids(9),
      keys: 20_000,
    });
    expect(Math.abs(moved - 1 / 9)).toBeLessThan(0.05);
  });

  it('one picker instance is rebuilt in place, as setShards does, with the same result', () => {
    const options = { before: ids(8), after: ids(9), keys: 5_000 };
    const fresh = remapFraction({ ...options, picker: () => consistentHash() });
    const rebuilt = remapFraction({ ...options, picker: consistentHash() });
    expect(rebuilt).toBe(fresh);
  });

  it('takes shard specs with weights, and unkeyed pickers get a seeded random source', () => {
    const moved = remapFraction({
      picker: () => consistentHash({ algorithm: 'rendezvous' }),
      before: [{ id: 'a' }, { id: 'b', weight: 2 }],
      after: [{ id: 'a' }, { id: 'b', weight: 2 }],
      keys: 1_000,
    });
    expect(moved).toBe(0);
    // round robin ignores keys: a fresh picker over the same shards repeats its sequence.
    expect(remapFraction({ picker: roundRobin, before: ids(3), after: ids(3), keys: 30 })).toBe(0);
    expect(remapFraction({ picker: roundRobin, before: ids(3), after: ids(4), keys: 12 })).toBe(
      9 / 12,
    );
  });

  it('rejects bad arguments with ConfigErrors', () => {
    expect(() => remapFraction({ picker: modulo, before: ids(2), after: ids(2), keys: 0 })).toThrow(
      ConfigError,
    );
    expect(() =>
      remapFraction({ picker: modulo, before: ['a', 'a'], after: ids(2), keys: 1 }),
    ).toThrow(/before\[1\]\.id/);
    // More keys than it can make: named, before an array of 1e12 strings is tried.
    expect(() =>
      remapFraction({ picker: modulo, before: ids(2), after: ids(2), keys: 1e12 }),
    ).toThrow(/`keys` must be an integer from 1 to 10000000/);
    expect(() =>
      remapFraction({ picker: {} as Picker, before: ids(2), after: ids(2), keys: 1 }),
    ).toThrow(ConfigError);
  });
});
