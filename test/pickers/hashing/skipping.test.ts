import { describe, expect, it } from 'vitest';
import { consistentHash } from '../../../src/pickers/hashing/index.js';
import { keys, mapping, shards } from './helpers.js';

const ALGORITHMS = ['ring', 'maglev', 'rendezvous', 'jump'] as const;
const KEYS = keys(20_000);

describe.each(ALGORITHMS)('%s: shards not offered', (algorithm) => {
  it("sends an unoffered shard's keys elsewhere, leaves the others, and brings them back", () => {
    const picker = consistentHash({ algorithm });
    const all = shards(10);
    picker.rebuild(all);
    const before = mapping(picker, all, KEYS);
    const offered = all.filter((s) => s.id !== 'shard-4');
    const during = mapping(picker, offered, KEYS);
    let moved = 0;
    const wrong: number[] = [];
    for (let i = 0; i < KEYS.length; i++) {
      if (during[i] === 'shard-4' || during[i] === undefined) wrong.push(i);
      if (before[i] === 'shard-4') moved++;
      else if (during[i] !== before[i]) wrong.push(i);
    }
    expect(wrong).toEqual([]);
    expect(moved).toBeGreaterThan(KEYS.length / 20);
    // The displaced keys spread out rather than all landing on one neighbour.
    const targets = new Set(during.filter((_, i) => before[i] === 'shard-4'));
    expect(targets.size).toBeGreaterThan(4);
    expect(mapping(picker, all, KEYS)).toEqual(before);
  });

  it('skips several shards at once and returns a shard among those offered', () => {
    const picker = consistentHash({ algorithm });
    const all = shards(30);
    picker.rebuild(all);
    const before = mapping(picker, all, KEYS);
    const offered = all.filter((s) => s.index % 3 === 0);
    const ids = new Set(offered.map((s) => s.id));
    const during = mapping(picker, offered, KEYS);
    const wrong: number[] = [];
    for (let i = 0; i < KEYS.length; i++) {
      if (!ids.has(during[i]!)) wrong.push(i);
      if (ids.has(before[i]!) && during[i] !== before[i]) wrong.push(i);
    }
    expect(wrong).toEqual([]);
    // Only one shard offered: every key goes there.
    expect(new Set(mapping(picker, [all[7]!], KEYS))).toEqual(new Set(['shard-7']));
  });

  it('returns the offered object itself, even from a different array', () => {
    const picker = consistentHash({ algorithm });
    const all = shards(6);
    picker.rebuild(all);
    const offered = [all[1]!, all[2]!, all[5]!];
    for (const key of keys(200)) {
      const chosen = picker.pick(offered, { key, attempt: 2, random: () => 0, totalInFlight: 0 });
      expect(offered).toContain(chosen);
    }
  });
});
