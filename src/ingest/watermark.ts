/**
 * The watermark of an ingestion: how many records, counted in source order, have all settled
 * (written, or failed — into the dead letters, when there are some), and the source position
 * just after the last of them. Records settle out of order (batches of different homes, retries),
 * so the watermark waits at the oldest record still held; a resumed load that starts after it
 * loses nothing, and sends again at most the records that had settled beyond it.
 *
 * Memory stays small whatever the gap: a byte per record between the watermark and the newest
 * record taken (a ring that grows by doubling), and the source position only every
 * {@link SAMPLE_EVERY} records — so the checkpoint's position may stand up to that many records
 * below the watermark, which a resume sends again.
 */
import type { SourcePosition } from '../sources/position.js';

/** Positions kept: one every this many records (the last of each run of them). */
export const SAMPLE_EVERY = 64;

export class Watermark {
  /** Records of the load settled before this ingestion began (a resumed load's checkpoint). */
  readonly base: number;
  /** This ingestion's lowest unsettled record: all before it have settled. */
  #next = 0;
  /** Settled flags from `#next` on, in a ring (`& #mask`). */
  #flags = new Uint8Array(1024);
  #mask = 1023;
  /** Positions sampled: the record they follow, in order. */
  readonly #samples: { seq: number; position: SourcePosition }[] = [];
  /** The position the watermark stands at (after its last record), kept when samples are dropped. */
  #position: SourcePosition | undefined;

  constructor(base: number, start: SourcePosition | undefined) {
    this.base = base;
    this.#position = start;
  }

  /** Records settled in source order, the load's earlier ones included. */
  get index(): number {
    return this.base + this.#next;
  }

  /** The source position just after the watermark's last record (a sampled one, at most 63 before). */
  get position(): SourcePosition | undefined {
    const samples = this.#samples;
    let drop = 0;
    while (drop < samples.length && samples[drop]!.seq < this.#next) drop++;
    if (drop > 0) {
      this.#position = samples[drop - 1]!.position;
      samples.splice(0, drop);
    }
    return this.#position;
  }

  /** Record `seq` (0 for this ingestion's first) settled. */
  settle(seq: number): void {
    if (seq < this.#next) return;
    while (seq - this.#next >= this.#flags.length) this.#grow();
    this.#flags[seq & this.#mask] = 1;
    while (this.#flags[this.#next & this.#mask] === 1) {
      this.#flags[this.#next & this.#mask] = 0;
      this.#next++;
    }
  }

  /** The source stands at `position` just after record `seq`. */
  sample(seq: number, position: SourcePosition): void {
    this.#samples.push({ seq, position });
  }

  #grow(): void {
    const old = this.#flags;
    const flags = new Uint8Array(old.length * 2);
    const mask = flags.length - 1;
    for (let i = 0; i < old.length; i++) {
      const seq = this.#next + i;
      flags[seq & mask] = old[seq & this.#mask]!;
    }
    this.#flags = flags;
    this.#mask = mask;
  }
}
