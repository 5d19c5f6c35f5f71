/**
 * Maglev's table population (Eisenbud et al., "Maglev: A Fast and Reliable Software Network Load
 * Balancer", NSDI 2016, §3.4, Pseudocode 1), weighted as in Envoy: in round r = 1, 2, …, shards
 * take turns in membership order, and a shard of relative weight w (the largest weight is 1)
 * takes a turn only when r × w has caught up with the turns it took. A turn claims the shard's
 * next free slot along its permutation `(offset + j × skip) mod M`.
 *
 * Weights within a factor of a few run that loop as written. When one shard outweighs the rest
 * the loop would spend n steps a round for one slot (a weight of 1e6 among 1000 shards of 1:
 * ~65 M steps for a 65 537-slot table), so the same turns are then taken from a heap ordered by
 * (round of the next turn, membership index), the order the loop visits them in: the same table
 * in O(M log n) steps, whatever the weights.
 */

/** Loop steps per slot past which the heap is cheaper than the loop. */
const LOOP_WASTE = 4;
/** Heap keys are round × 2^24 + index: both below 2^24, as M ≤ 10 000 019. */
const TURN_SCALE = 2 ** 24;

/**
 * Fills `table` (length M, prime) from each shard's `offset`, `skip` (1 ≤ skip < M) and relative
 * `weight` (in [0, 1], the largest exactly 1). Every shard takes its first turn in round 1, so
 * each holds at least one slot when M ≥ n.
 */
export function fillTable(
  table: Int32Array | Uint16Array,
  offset: Float64Array,
  skip: Float64Array,
  weight: Float64Array,
): void {
  const m = table.length;
  const n = offset.length;
  if (n === 0) return;
  const next = Float64Array.from(offset);
  // Which slots are taken, one bit each: the probes of a fill (~M ln M in all, most of them late,
  // over a nearly full table) then read 80 KB for a 655 373-slot table instead of 2.6 MB, and
  // the table itself is written once per slot.
  const taken = new Int32Array((m + 31) >>> 5);
  const claim = (i: number): void => {
    let c = next[i]!;
    const s = skip[i]!;
    while ((taken[c >>> 5]! & (1 << (c & 31))) !== 0) {
      c += s;
      if (c >= m) c -= m;
    }
    taken[c >>> 5]! |= 1 << (c & 31);
    table[c] = i;
    c += s;
    next[i] = c >= m ? c - m : c;
  };
  let sum = 0;
  for (let i = 0; i < n; i++) sum += weight[i]!;
  if (n <= LOOP_WASTE * sum) {
    // Rounds of n steps fill ≥ sum slots each: the loop as written, ≤ LOOP_WASTE steps a slot.
    const turns = new Float64Array(n);
    for (let round = 1, filled = 0; filled < m; round++) {
      for (let i = 0; i < n && filled < m; i++) {
        if (round * weight[i]! < turns[i]!) continue;
        turns[i]! += 1;
        claim(i);
        filled++;
      }
    }
    return;
  }
  // The same turns from a heap of (round of the next turn, index), packed into one double as
  // round × 2^24 + index (rounds ≤ M + 2 < 2^24, indexes < M < 2^24: exact below 2^53).
  const turns = new Float64Array(n);
  const heap = Float64Array.from({ length: n }, (_, i) => TURN_SCALE + i);
  const never = (m + 2) * TURN_SCALE;
  for (let filled = 0; filled < m; filled++) {
    const top = heap[0]!;
    const round = Math.floor(top / TURN_SCALE);
    const i = top - round * TURN_SCALE;
    claim(i);
    turns[i]! += 1;
    const next = nextRound(round, turns[i]!, weight[i]!, m);
    siftDown(heap, next > m + 1 ? never + i : next * TURN_SCALE + i, n);
  }
}

/**
 * The first round after `round` in which a shard of relative weight `w` that took `turns` turns
 * takes another: the smallest integer R > round with R × w ≥ turns, evaluated in floating point
 * as the loop evaluates it. Infinity past round M + 1: the heaviest shard takes a turn every
 * round, so the table is full by round M.
 */
function nextRound(round: number, turns: number, w: number, m: number): number {
  if (w === 1) return round + 1;
  let r = Math.ceil(turns / w);
  if (!(r <= m + 1)) return Number.POSITIVE_INFINITY;
  while (r * w < turns) r++;
  while (r - 1 > round && (r - 1) * w >= turns) r--;
  return Math.max(r, round + 1);
}

/** Replaces the heap's top with `key` and restores the heap (a binary min-heap of n keys). */
function siftDown(heap: Float64Array, key: number, n: number): void {
  let at = 0;
  for (;;) {
    let child = 2 * at + 1;
    if (child >= n) break;
    if (child + 1 < n && heap[child + 1]! < heap[child]!) child++;
    if (heap[child]! >= key) break;
    heap[at] = heap[child]!;
    at = child;
  }
  heap[at] = key;
}
