/**
 * How a 32-bit key hash becomes a Maglev slot, and the exact hash interval of each slot, so that
 * shares and moved fractions are measured over the whole hash space rather than sampled.
 *
 * The map is Lemire's multiply-shift ("Fast Random Integer Generation in an Interval", ACM TOMACS
 * 2019): slot = ⌊h × M / 2^32⌋, several times cheaper than `h % M` in V8 and as uniform. In exact
 * arithmetic slot c holds the hashes [⌈c·2^32/M⌉, ⌈(c+1)·2^32/M⌉). Here h × M is a double: exact
 * below 2^53 (M < 2^21), rounded above, which can move a boundary by a hash or so. The intervals
 * below are therefore found against {@link slotOf} itself — the function lookups use — so they
 * are exact for the map as it runs, not for the ideal one.
 */

const TWO_POW_32 = 4294967296;

/** A Maglev table: the owner (membership index) of each slot. */
export type SlotTable = Int32Array | Uint16Array;

/**
 * The slot of hash `h` (a uint32) in a table of `m` slots. Never `m`: for m < 2^31 the product
 * (2^32 − 1)·m = 2^32·m − m cannot round up to 2^32·m, as m exceeds the double spacing there.
 */
export function slotOf(h: number, m: number): number {
  return Math.floor((h * m) / TWO_POW_32);
}

/** The first hash of slot `c` (0 ≤ c ≤ m; `slotStart(m, m)` is 2^32, the end of the last). */
export function slotStart(c: number, m: number): number {
  // The ideal boundary, then a step or two against slotOf for the rounding of h × m.
  let h = Math.min(TWO_POW_32, Math.ceil(c * (TWO_POW_32 / m)));
  while (h > 0 && slotOf(h - 1, m) >= c) h--;
  while (h < TWO_POW_32 && slotOf(h, m) < c) h++;
  return h;
}

/**
 * Each owner's share of the 32-bit hash space under `table` (owners are indexes below `n`).
 * O(M).
 */
export function tableShares(table: SlotTable, n: number): Float64Array {
  const out = new Float64Array(n);
  const m = table.length;
  let start = 0;
  for (let c = 0; c < m; c++) {
    const end = slotStart(c + 1, m);
    const owner = table[c]!;
    out[owner]! += end - start;
    start = end;
  }
  for (let i = 0; i < n; i++) out[i]! /= TWO_POW_32;
  return out;
}

/**
 * The exact fraction of the 32-bit hash space whose owner differs between two tables of any
 * sizes (owners compared as numbers: the same membership index, or ids mapped to numbers by the
 * caller). Merges the two tables' slot intervals in one pass, O(M1 + M2).
 */
export function movedFraction(before: SlotTable, after: SlotTable): number {
  const m1 = before.length;
  const m2 = after.length;
  if (m1 === 0 || m2 === 0) return m1 === m2 ? 0 : 1;
  let i = 0;
  let j = 0;
  let end1 = slotStart(1, m1);
  let end2 = slotStart(1, m2);
  let position = 0;
  let moved = 0;
  while (position < TWO_POW_32) {
    const end = Math.min(end1, end2);
    if (before[i] !== after[j]) moved += end - position;
    position = end;
    if (end1 === end) end1 = slotStart(++i + 1, m1);
    if (end2 === end) end2 = slotStart(++j + 1, m2);
  }
  return moved / TWO_POW_32;
}
