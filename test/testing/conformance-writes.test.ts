/**
 * docs/writing-a-picker.md: `pickerConformance` "checks that the picker: … and writes to no
 * shard", and it reports "does not mutate shards" as checked. shardwise ships CJS too, and a
 * picker written in a plain CommonJS `.js` file runs in sloppy mode, where a write to a frozen
 * object or a getter-only property is silently dropped instead of throwing.
 */
import { describe, expect, it } from 'vitest';
import type { Picker } from '../../src/index.js';
import { pickerConformance } from '../../src/testing/index.js';

/** The body of a picker as a CommonJS file without 'use strict' would run it (sloppy mode). */
function sloppyPicker(body: string): () => Picker {
  const pick = new Function('shards', 'request', body) as Picker['pick'];
  return () => ({ name: 'sloppy-writer', pick });
}

describe('pickerConformance and a picker that writes to its shards', () => {
  it('names "does not mutate shards" for a sloppy-mode picker that writes limit and weight', () => {
    const factory = sloppyPicker(`
      if (shards.length === 0) return undefined;
      var s = shards[0];
      s.limit = 100000;   // would lift the shard's cap in a real balancer
      s.weight = 1000;
      s.inFlight = 0;     // a getter-only figure
      return s;
    `);
    expect(() => pickerConformance(factory)).toThrow(/does not mutate shards/);
  });

  it('names "does not mutate shards" for a sloppy-mode picker that writes to the list', () => {
    const factory = sloppyPicker(`
      if (shards.length === 0) return undefined;
      shards[0] = shards[shards.length - 1]; // overwrite the list it was given
      return shards[0];
    `);
    expect(() => pickerConformance(factory)).toThrow(/does not mutate shards/);
  });
});
