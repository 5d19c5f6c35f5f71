/**
 * What `weightedByLoadReport()` costs per pick against its peer, the plain smooth weighted round
 * robin it runs over, on the same 8 reporting shards of a real `Balancer` (ManualClock, so a
 * recompute happens once per virtual second: every 1 000th pick here), and the heap bytes a pick
 * leaves behind (0 = no allocation per pick). Interleaved rounds, medians.
 */
import {
  Balancer,
  type Picker,
  type PickRequest,
  weightedByLoadReport,
  weightedRoundRobin,
} from '../../src/index.js';
import { ManualClock, seededRandom } from '../../src/testing/index.js';
import { collectGarbage, median, nowNs } from '../lib.js';

const SHARDS = 8;
const BATCH = 200_000;
const ROUNDS = 9;

interface Case {
  picker: Picker;
  shards: Balancer<string>['shards'];
  request: PickRequest;
}

function setup(picker: Picker): Case {
  const clock = new ManualClock();
  const balancer = new Balancer<string>({
    shards: Array.from({ length: SHARDS }, (_, i) => ({ id: `s${i}`, target: `s${i}` })),
    picker,
    clock,
    random: seededRandom(1),
  });
  for (let i = 0; i < SHARDS; i++) {
    balancer.reportLoad(`s${i}`, { cpuUtilization: 0.5, rpsFractional: 100 * (i + 1), eps: i });
  }
  clock.advance(20_000);
  const request: PickRequest = {
    key: undefined,
    attempt: 1,
    random: seededRandom(2),
    totalInFlight: 0,
    now: 20_000,
  };
  return { picker, shards: balancer.shards, request };
}

/** Picks `n` times, the virtual time moving 1 ms per pick; returns a checksum. */
function loop(c: Case, n: number): number {
  let sum = 0;
  for (let i = 0; i < n; i++) {
    c.request.now = (c.request.now ?? 0) + 1;
    sum += c.picker.pick(c.shards, c.request)?.index ?? 0;
  }
  return sum;
}

function nsPerPick(c: Case): number {
  const t0 = nowNs();
  loop(c, BATCH);
  return (nowNs() - t0) / BATCH;
}

function bytesPerPick(c: Case): number {
  collectGarbage();
  const before = process.memoryUsage().heapUsed;
  loop(c, BATCH);
  const grown = process.memoryUsage().heapUsed - before;
  return Math.max(0, grown) / BATCH;
}

export function measurePickCost(): {
  ns: number;
  peerNs: number;
  ratio: number;
  bytes: number;
  peerBytes: number;
} {
  const wbl = setup(weightedByLoadReport({ blackoutMs: 1_000 }));
  const peer = setup(weightedRoundRobin());
  loop(wbl, BATCH);
  loop(peer, BATCH);
  const ns: number[] = [];
  const peerNs: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    if (r % 2 === 0) {
      peerNs.push(nsPerPick(peer));
      ns.push(nsPerPick(wbl));
    } else {
      ns.push(nsPerPick(wbl));
      peerNs.push(nsPerPick(peer));
    }
  }
  return {
    ns: median(ns),
    peerNs: median(peerNs),
    ratio: median(ns.map((v, i) => v / peerNs[i]!)),
    bytes: bytesPerPick(wbl),
    peerBytes: bytesPerPick(peer),
  };
}
