/**
 * A source whose iterator breaks the iterator protocol (its next() gives a non-object) is a
 * source that failed: documented (docs/batching.md "Every record, accounted for"), `ingest`
 * rejects — once every record taken has settled — with an IngestError whose summary is final.
 */
import { describe, expect, it } from 'vitest';
import { IngestError, type ShardState } from '../../src/index.js';
import { resolveAfter } from '../helpers.js';
import { fleet, ManualClock, type Rec, settle } from './helpers.js';

function brokenSource(good: number): Iterable<Rec> {
  return {
    [Symbol.iterator]() {
      let id = 0;
      return {
        next() {
          if (id < good) return { done: false, value: { id: id++ } };
          return undefined as unknown as IteratorResult<Rec>; // protocol broken
        },
      };
    },
  };
}

function brokenAsyncSource(good: number): AsyncIterable<Rec> {
  return {
    [Symbol.asyncIterator]() {
      let id = 0;
      return {
        async next() {
          if (id < good) return { done: false, value: { id: id++ } };
          return null as unknown as IteratorResult<Rec>;
        },
      };
    },
  };
}

describe('a source whose next() gives a non-object', () => {
  for (const [name, make] of [
    ['sync', brokenSource],
    ['async', brokenAsyncSource],
  ] as const) {
    it(`${name}: rejects with IngestError(kind 'source') only after the records taken settled`, async () => {
      const clock = new ManualClock();
      const balancer = fleet(clock);
      let written = 0;
      const outcome = await settle(
        clock,
        balancer.ingest(make(3), {
          send: async (_shard: ShardState<string>, _record: Rec) => {
            await resolveAfter(clock, 10, undefined);
            written++;
          },
        }),
      );
      expect(outcome.ok).toBe(false);
      const error = (outcome as { error: unknown }).error;
      // when the rejection came, every record taken must have settled
      expect({ writtenWhenRejected: written }).toEqual({ writtenWhenRejected: 3 });
      expect(error).toBeInstanceOf(IngestError);
      expect((error as IngestError<Rec>).kind).toBe('source');
      expect((error as IngestError<Rec>).summary.written).toBe(3);
    });
  }
});
