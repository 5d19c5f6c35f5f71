/**
 * Keyed batches are grouped by home; a membership change re-checks them (`#rehome`), a Maglev
 * `resize()` does not: records whose key's home moved ride in a batch to another shard.
 */
import { describe, expect, it } from 'vitest';
import { consistentHash, type ShardState } from '../../../src/index.js';
import { flush, makeBalancer, shardsOf, tick } from '../../helpers.js';

describe('keyed batches and maglev resize()', () => {
  it('every record of a keyed batch sent after resize() lands on its key’s home', async () => {
    const picker = consistentHash({ algorithm: 'maglev', tableSize: 1009 });
    const { clock, balancer } = makeBalancer({
      shards: shardsOf(['a', 'b', 'c', 'd']),
      picker,
    });
    const probe = consistentHash({ algorithm: 'maglev', tableSize: 65537 });
    probe.rebuild(balancer.shards);
    // Two keys with one home now and different homes after the resize.
    const keys: string[] = [];
    const oldHome = balancer.homeOf('k0')!;
    const newHomes = new Set<string>();
    for (let i = 0; i < 10_000 && keys.length < 2; i++) {
      const k = `k${i}`;
      if (balancer.homeOf(k) !== oldHome) continue;
      const h = probe.home(balancer.shards, k)!.id;
      if (newHomes.has(h)) continue;
      newHomes.add(h);
      keys.push(k);
    }
    expect(keys).toHaveLength(2);
    const mixed: string[] = [];
    let endSource!: () => void;
    const sourceEnds = new Promise<void>((r) => {
      endSource = r;
    });
    let sent = 0;
    async function* source() {
      for (const key of keys) yield { key };
      await sourceEnds;
    }
    const ingestion = balancer.ingest(source(), {
      key: (r) => r.key,
      batch: { maxRecords: 10, lingerMs: 100 },
      send: async (shard: ShardState<string>, batch: { key: string }[]) => {
        sent++;
        for (const r of batch) {
          const home = balancer.homeOf(r.key);
          if (home !== shard.id) mixed.push(`${r.key} (home ${home}) → ${shard.id}`);
        }
      },
    });
    await flush();
    await tick(clock, 10); // both records wait in one batch for the old home
    expect(sent).toBe(0);
    picker.resize(65537);
    await tick(clock, 500);
    endSource();
    await tick(clock, 10);
    const summary = await ingestion;
    expect(summary.written).toBe(2);
    expect(mixed).toEqual([]);
    await balancer.close();
  });
});
