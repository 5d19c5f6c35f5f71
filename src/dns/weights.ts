/**
 * DNS weights into shard weights. SRV weights are relative (RFC 2782) and may be anything up to
 * 65 535, and records naming one address and port add up: taken as they come, a legal answer could
 * ask the picker for more than it accepts (`MAX_WEIGHT`, the ring's 10 000 000 points) and be
 * refused for ever, or for a ring just under its bound, ~2 s of blocked event loop on every
 * refresh that moves a weight. Scaled so they sum to at most {@link DNS_WEIGHT_TOTAL}, they keep
 * their ratios, and every membership change the watch makes is bounded.
 */

/**
 * The most the shard weights from one DNS answer add up to: weights summing to more are scaled
 * down together, keeping their ratios. A ring (`consistentHash()`, `Σ max(1, round(vnodes ×
 * weight))` points) built from a DNS answer of n shards so holds at most `vnodes × 1 000 + n`
 * points — 160 000 + n at the default 160 vnodes, ~10 ms to build on this project's machines
 * (a refresh that moves every weight: a median of 18–32 ms of blocked event loop in
 * bench/dns-reweight.bench.ts) — and no weight exceeds `MAX_WEIGHT`.
 */
export const DNS_WEIGHT_TOTAL = 1_000;

/**
 * Sets each record's shard `weight` from its `dnsWeight`: unchanged while they sum to at most
 * {@link DNS_WEIGHT_TOTAL} (SRV weights of 10 and 5 stay 10 and 5), else all scaled by the same
 * factor so that they sum to it.
 */
export function scaleWeights(records: readonly { dnsWeight: number; weight: number }[]): void {
  let total = 0;
  for (const r of records) total += r.dnsWeight;
  const factor = total > DNS_WEIGHT_TOTAL ? DNS_WEIGHT_TOTAL / total : 1;
  for (const r of records) r.weight = r.dnsWeight * factor;
}
