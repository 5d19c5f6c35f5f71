/**
 * Consistent hashing: shardwise's ring, Maglev, rendezvous and jump against npm `hashring`
 * (ketama over md5, 160 points per server), side by side in one run.
 *
 * - lookup: ns per key over 200 000 distinct string keys, so hashring's 5 000-entry LRU cache
 *   cannot answer from memory (each pass walks every key once, far past the cache);
 * - balance: max/mean keys per shard over 1M keys;
 * - movement: the fraction of keys that change shard when shard n + 1 joins, against 1/(n + 1);
 * - build: constructing a 1 000-shard ring / table.
 *
 * Run: npx tsx bench/hashing.bench.ts
 */
import HashRing from 'hashring';
import { consistentHash, type HashAlgorithm } from '../src/pickers/hashing/index.js';
import type { Picker, PickRequest, ShardState } from '../src/types.js';
import { fmt, goal, median, nowNs, printHeader, printTable, ratio } from './lib.js';

const ALGORITHMS: readonly HashAlgorithm[] = ['ring', 'maglev', 'rendezvous', 'jump'];
const LOOKUP_KEYS = 200_000;
const BALANCE_KEYS = 1_000_000;
const MOVE_KEYS = 100_000;

function shardsOf(n: number): ShardState[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `10.0.${i >> 8}.${i & 255}:8080`,
    target: i,
    weight: 1,
    zone: undefined,
    labels: {},
    index: i,
    inFlight: 0,
    bytesInFlight: 0,
    limit: Number.POSITIVE_INFINITY,
    rttMs: 1,
    load: 0,
    cost: 0,
  }));
}

function keysOf(count: number, prefix: string): string[] {
  // Flat strings (a template literal makes a rope the hash would flatten on first use).
  return Array.from({ length: count }, (_, i) => `${prefix}${i}`.split('').join(''));
}

function built(algorithm: HashAlgorithm, shards: readonly ShardState[]): Picker {
  const picker = consistentHash({ algorithm });
  picker.rebuild(shards);
  return picker;
}

function hashringOf(shards: readonly ShardState[]): HashRing {
  return new HashRing(shards.map((s) => s.id));
}

type Loop = (picker: Picker, shards: readonly ShardState[], keys: readonly string[]) => number;
type RingLoop = (ring: HashRing, keys: readonly string[]) => number;

// A fresh function per case keeps each case's call sites monomorphic (as mitata does).
function pickLoop(): Loop {
  return new Function(
    'picker',
    'shards',
    'keys',
    `const request = { key: '', attempt: 1, random: () => 0, totalInFlight: 0 };
     let acc = 0;
     for (let i = 0; i < keys.length; i++) { request.key = keys[i]; acc += picker.pick(shards, request).index; }
     return acc;`,
  ) as Loop;
}

function ringLoop(): RingLoop {
  return new Function(
    'ring',
    'keys',
    'let acc = 0;\nfor (let i = 0; i < keys.length; i++) acc += ring.get(keys[i]).length;\nreturn acc;',
  ) as RingLoop;
}

/** ns per key: the median of `passes` timed passes over all keys, after one warm-up pass. */
function timePicker(picker: Picker, shards: readonly ShardState[], keys: string[], passes: number) {
  const loop = pickLoop();
  loop(picker, shards, keys.slice(0, 20_000));
  const samples: number[] = [];
  for (let p = 0; p < passes; p++) {
    const start = nowNs();
    loop(picker, shards, keys);
    samples.push((nowNs() - start) / keys.length);
  }
  return median(samples);
}

function timeHashring(ring: HashRing, keys: string[]): number {
  const loop = ringLoop();
  // Warm up on other keys, so the measured pass starts with a cache that holds none of its own.
  loop(ring, keysOf(20_000, 'warm:'));
  const start = nowNs();
  loop(ring, keys);
  return (nowNs() - start) / keys.length;
}

const sink: number[] = [];

function lookups(): void {
  printHeader('Lookup: ns per key (200 000 distinct string keys)');
  const keys = keysOf(LOOKUP_KEYS, 'user:');
  const rows: string[][] = [];
  for (const n of [8, 100, 1000]) {
    const shards = shardsOf(n);
    const peer = timeHashring(hashringOf(shards), keys);
    const ours = new Map<HashAlgorithm, number>();
    for (const algorithm of ALGORITHMS) {
      ours.set(algorithm, timePicker(built(algorithm, shards), shards, keys, 3));
    }
    rows.push([`${n}`, 'hashring', fmt(peer, 0), '1.00×', '']);
    for (const algorithm of ALGORITHMS) {
      const ns = ours.get(algorithm)!;
      const check =
        algorithm === 'ring'
          ? `ring ≥ 5× hashring: ${goal(peer / ns >= 5)}`
          : algorithm === 'maglev'
            ? `faster than ring: ${goal(ns < ours.get('ring')!)}`
            : '';
      rows.push([`${n}`, algorithm, fmt(ns, 0), ratio(peer / ns, 1), check]);
    }
  }
  printTable(['shards', 'picker', 'ns/key', 'speed vs hashring', 'goal'], rows);
}

function maxOverMean(counts: Map<string, number> | Float64Array, n: number, total: number) {
  let max = 0;
  for (const c of counts.values()) max = Math.max(max, c);
  return max / (total / n);
}

function balances(): void {
  printHeader('Balance: max/mean keys per shard over 1 000 000 keys');
  const keys = keysOf(BALANCE_KEYS, 'order:');
  const rows: string[][] = [];
  for (const n of [8, 100]) {
    const shards = shardsOf(n);
    const ring = hashringOf(shards);
    const peerCounts = new Map<string, number>();
    for (const key of keys) {
      const id = ring.get(key);
      peerCounts.set(id, (peerCounts.get(id) ?? 0) + 1);
    }
    const peer = maxOverMean(peerCounts, n, keys.length);
    rows.push([`${n}`, 'hashring', fmt(peer, 4), '']);
    for (const algorithm of ALGORITHMS) {
      const picker = built(algorithm, shards);
      const counts = new Float64Array(n);
      const request: PickRequest = { key: '', attempt: 1, random: () => 0, totalInFlight: 0 };
      for (const key of keys) {
        request.key = key;
        counts[picker.pick(shards, request)!.index]!++;
      }
      const value = maxOverMean(counts, n, keys.length);
      rows.push([`${n}`, algorithm, fmt(value, 4), ratio(value / peer, 3)]);
    }
  }
  printTable(['shards', 'picker', 'max/mean', 'vs hashring'], rows);
}

function movement(): void {
  printHeader('Keys moved when shard n + 1 joins (100 000 keys)');
  const keys = keysOf(MOVE_KEYS, 'doc:');
  const rows: string[][] = [];
  for (const n of [8, 100]) {
    const before = shardsOf(n);
    const after = shardsOf(n + 1);
    const ideal = 1 / (n + 1);
    const ring = hashringOf(before);
    const was = keys.map((k) => ring.get(k));
    ring.add(after[n]!.id);
    let moved = 0;
    keys.forEach((k, i) => {
      if (ring.get(k) !== was[i]) moved++;
    });
    rows.push([
      `${n}`,
      'hashring',
      fmt((100 * moved) / keys.length, 2),
      fmt(100 * ideal, 2),
      ratio(moved / keys.length / ideal),
    ]);
    for (const algorithm of ALGORITHMS) {
      const picker = built(algorithm, before);
      const request: PickRequest = { key: '', attempt: 1, random: () => 0, totalInFlight: 0 };
      const ids = keys.map((k) => {
        request.key = k;
        return picker.pick(before, request)!.id;
      });
      picker.rebuild!(after);
      let movedOurs = 0;
      keys.forEach((k, i) => {
        request.key = k;
        if (picker.pick(after, request)!.id !== ids[i]) movedOurs++;
      });
      const fraction = movedOurs / keys.length;
      rows.push([
        `${n}`,
        algorithm,
        fmt(100 * fraction, 2),
        fmt(100 * ideal, 2),
        ratio(fraction / ideal),
      ]);
    }
  }
  printTable(['n', 'picker', 'moved %', 'ideal 1/(n+1) %', 'moved / ideal'], rows);
}

function builds(): void {
  printHeader('Build for 1 000 shards: ms (median of 5)');
  const shards = shardsOf(1000);
  const time = (build: () => unknown) => {
    build();
    const samples: number[] = [];
    for (let r = 0; r < 5; r++) {
      const start = nowNs();
      sink.push(build() === undefined ? 0 : 1);
      samples.push((nowNs() - start) / 1e6);
    }
    return median(samples);
  };
  const peer = time(() => hashringOf(shards));
  const rows: string[][] = [['hashring (constructor, md5, 160 000 points)', fmt(peer, 1), '1.00×']];
  for (const [label, algorithm] of [
    ['ring (160 000 points)', 'ring'],
    ['maglev (table 100 003)', 'maglev'],
  ] as const) {
    const ms = time(() => built(algorithm, shards));
    rows.push([label, fmt(ms, 1), ratio(peer / ms, 1)]);
  }
  printTable(['build', 'ms', 'speed vs hashring'], rows);
}

const started = nowNs();
lookups();
balances();
movement();
builds();
console.log(`\n(total ${fmt((nowNs() - started) / 1e9, 1)} s)`);
