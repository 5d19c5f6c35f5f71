/**
 * What the hostile-shard tests count: every attempt's shard in order (from `pick` events), every
 * run's outcome, and the attempts that went to the shards under attack once the balancer had a
 * chance to learn (after the first `learnAttempts`).
 */
import type { PickEvent } from '../../src/index.js';

/** The attempts a balancer started, in order, by shard id. */
export function recordPicks(balancer: {
  on(event: 'pick', listener: (event: PickEvent) => void): unknown;
}): string[] {
  const picks: string[] = [];
  balancer.on('pick', ({ shardId }) => picks.push(shardId));
  return picks;
}

/** Counts of a load run against a fleet where some shards are hostile. */
export interface Tally {
  runs: number;
  failedRuns: number;
  attempts: number;
  /** Attempts on the hostile shards, over every attempt. */
  hostileAttempts: number;
  /** Attempts after the first `learnAttempts`, and of those the ones on hostile shards. */
  laterAttempts: number;
  laterHostile: number;
}

export function tally(
  picks: readonly string[],
  hostile: ReadonlySet<string>,
  runs: number,
  failedRuns: number,
  learnAttempts: number,
): Tally {
  let hostileAttempts = 0;
  let laterHostile = 0;
  for (let i = 0; i < picks.length; i++) {
    if (!hostile.has(picks[i]!)) continue;
    hostileAttempts++;
    if (i >= learnAttempts) laterHostile++;
  }
  return {
    runs,
    failedRuns,
    attempts: picks.length,
    hostileAttempts,
    laterAttempts: Math.max(0, picks.length - learnAttempts),
    laterHostile,
  };
}

/** A tally as one line, for the message of a failed expectation. */
export function show(t: Tally): string {
  return `${t.failedRuns}/${t.runs} runs failed; ${t.hostileAttempts}/${t.attempts} attempts on hostile shards, ${t.laterHostile}/${t.laterAttempts} after learning`;
}
