import { describe, expect, it } from 'vitest';
import { IngestError } from '../../src/index.js';
import { flush } from '../helpers.js';
import { fleet, ManualClock, type Rec } from './helpers.js';

describe('stop while the source is blocked', () => {
  it('the summary of the IngestError is final: a late record does not change it after the rejection', async () => {
    const clock = new ManualClock();
    const balancer = fleet(clock);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    async function* source(): AsyncGenerator<Rec> {
      yield { id: 0 };
      await gate;
      yield { id: 1 };
    }
    const failedLater: number[] = [];
    let settledAt: 'pending' | 'settled' = 'pending';
    const controller = new AbortController();
    const ingestion = balancer.ingest(source(), {
      signal: controller.signal,
      onFailed: (r) => failedLater.push(r.id),
      send: async () => undefined,
    });
    ingestion
      .catch(() => {})
      .finally(() => {
        settledAt = 'settled';
      });
    await flush();
    controller.abort(new Error('stop'));
    const error = (await ingestion.catch((e: unknown) => e)) as IngestError<Rec>;
    expect(error).toBeInstanceOf(IngestError);
    expect(error.kind).toBe('aborted');
    const snapshot = { written: error.summary.written, failed: error.summary.failed };
    expect(settledAt).toBe('settled');
    release();
    for (let i = 0; i < 5; i++) await flush();
    // "rejects — once every record taken has settled — with an IngestError whose summary is final"
    expect({ written: error.summary.written, failed: error.summary.failed }).toEqual(snapshot);
    await balancer.close();
  });
});
