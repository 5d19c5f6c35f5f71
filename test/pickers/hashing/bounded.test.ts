import { describe, expect, it } from 'vitest';
import { createRandom } from '../../../src/base/random.js';
import { loadBound } from '../../../src/pickers/hashing/bounded.js';
import { consistentHash } from '../../../src/pickers/hashing/index.js';
import { request, shards } from './helpers.js';

const ALGORITHMS = ['ring', 'maglev', 'rendezvous', 'jump'] as const;

describe('loadBound', () => {
  it('is ceil(c × (total + 1) / n)', () => {
    expect(loadBound(1.25, 0, 10)).toBe(1);
    expect(loadBound(1.25, 39, 10)).toBe(5);
    expect(loadBound(1.25, 40, 10)).toBe(6);
    expect(loadBound(1, 99, 10)).toBe(10);
    expect(loadBound(2, 7, 4)).toBe(4);
  });
});

describe.each(ALGORITHMS)('%s with boundedLoad 1.25', (algorithm) => {
  it('never lets a shard reach the bound under a hot-key stream, and counts every spill', () => {
    const c = 1.25;
    const n = 10;
    const all = shards(n);
    const bounded = consistentHash({ algorithm, boundedLoad: c });
    const plain = consistentHash({ algorithm });
    bounded.rebuild(all);
    plain.rebuild(all);
    const random = createRandom(2024);
    const hot = ['hot-0', 'hot-1', 'hot-2', 'hot-3', 'hot-4'];
    const running: number[] = []; // shard index of each call in flight
    const req = request();
    let total = 0;
    let overBound = 0;
    let moved = 0;
    let maxSeen = 0;
    for (let step = 0; step < 20_000; step++) {
      // 80 % of the traffic on 5 hot keys, the rest spread over 10 000 cold keys.
      req.key =
        random() < 0.8 ? hot[(random() * hot.length) | 0]! : `cold-${(random() * 10_000) | 0}`;
      req.totalInFlight = total;
      const bound = loadBound(c, total, n);
      const chosen = bounded.pick(all, req)!;
      if (chosen.inFlight >= bound) overBound++;
      if (chosen !== plain.pick(all, req)) moved++;
      all[chosen.index]!.inFlight++;
      maxSeen = Math.max(maxSeen, all[chosen.index]!.inFlight);
      running.push(chosen.index);
      total++;
      // Completions: keep ~60 calls in flight, finishing random ones.
      while (running.length > 40 + ((random() * 40) | 0)) {
        const at = (random() * running.length) | 0;
        const done = running[at]!;
        running[at] = running[running.length - 1]!;
        running.pop();
        all[done]!.inFlight--;
        total--;
      }
    }
    expect(overBound).toBe(0);
    // With ~60 in flight the bound is ~8; the hot keys alone would put ~10 on each of their shards.
    expect(maxSeen).toBeLessThanOrEqual(loadBound(c, 80, n));
    expect(bounded.spills).toBeGreaterThan(1000);
    expect(bounded.spills).toBe(moved);
    expect(plain.spills).toBe(0);
  });

  it('spills to the next shard of the key order, and returns when the load drops', () => {
    const all = shards(8);
    const picker = consistentHash({ algorithm, boundedLoad: 1.25 });
    picker.rebuild(all);
    const first = picker.pick(all, request('k', 0))!;
    // bound = ceil(1.25 × (7 + 1) / 8) = 2: the first choice holds 7 of 7, so it is skipped.
    all[first.index]!.inFlight = 7;
    const second = picker.pick(all, request('k', 7))!;
    expect(second).not.toBe(first);
    expect(picker.spills).toBe(1);
    // The spill target is the key's second choice: the shard it gets when the first is not offered.
    const unbounded = consistentHash({ algorithm });
    unbounded.rebuild(all);
    expect(
      unbounded.pick(
        all.filter((s) => s !== first),
        request('k'),
      ),
    ).toBe(second);
    all[first.index]!.inFlight = 0;
    expect(picker.pick(all, request('k', 0))).toBe(first);
    expect(picker.spills).toBe(1);
  });

  it('falls back to the first offered shard when every offered shard is at the bound', () => {
    const all = shards(4);
    const picker = consistentHash({ algorithm, boundedLoad: 1 });
    picker.rebuild(all);
    const offered = [all[1]!, all[3]!];
    for (const s of offered) s.inFlight = 10;
    // bound = ceil(1 × 21 / 4) = 6 < 10: both offered shards are full; the others are not offered.
    const unbounded = consistentHash({ algorithm });
    unbounded.rebuild(all);
    expect(picker.pick(offered, request('key', 20))).toBe(unbounded.pick(offered, request('key')));
    expect(picker.spills).toBe(0);
  });

  it('sums in-flight counts itself when the request has no total', () => {
    const all = shards(4);
    const picker = consistentHash({ algorithm, boundedLoad: 1.25 });
    picker.rebuild(all);
    const first = picker.pick(all, request('k'))!;
    all[first.index]!.inFlight = 5;
    const req = { key: 'k', attempt: 1, random: () => 0 } as unknown as ReturnType<typeof request>;
    expect(picker.pick(all, req)).not.toBe(first);
  });
});
