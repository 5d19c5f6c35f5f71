import { describe, expect, it } from 'vitest';
import { AimdLimit, aimd, ConfigError } from '../../src/index.js';

const sample = (inFlight: number, dropped = false, rttMs = 5) => ({ rttMs, inFlight, dropped });

describe('aimd()', () => {
  it('adds one per success while the limit is in use, and only then', () => {
    const limit = aimd({ initial: 10 })();
    limit.onSample(sample(5)); // 5 × 2 ≥ 10: in use
    expect(limit.limit).toBe(11);
    limit.onSample(sample(5)); // 10 < 11: not in use
    expect(limit.limit).toBe(11);
    limit.onSample(sample(6));
    expect(limit.limit).toBe(12);
  });

  it('multiplies by backoffRatio on a drop and on a sample slower than timeoutMs', () => {
    const limit = aimd({ initial: 20, backoffRatio: 0.5, timeoutMs: 100 })();
    limit.onSample(sample(1, true));
    expect(limit.limit).toBe(10);
    limit.onSample(sample(1, false, 101));
    expect(limit.limit).toBe(5);
  });

  it('stays within min and max', () => {
    const limit = aimd({ initial: 2, min: 2, max: 3, backoffRatio: 0.5 })();
    limit.onSample(sample(1, true));
    expect(limit.limit).toBe(2);
    for (let i = 0; i < 5; i++) limit.onSample(sample(3));
    expect(limit.limit).toBe(3);
  });

  it('makes one instance per call of the factory', () => {
    const factory = aimd();
    const a = factory();
    const b = factory();
    a.onSample(sample(100));
    expect(a).toBeInstanceOf(AimdLimit);
    expect(a.limit).toBe(11);
    expect(b.limit).toBe(10);
  });

  it.each([
    [{ initial: 0 }, 'aimd.initial'],
    [{ backoffRatio: 1 }, 'aimd.backoffRatio'],
    [{ min: 5, max: 4, initial: 4 }, 'aimd.min'],
    [{ initial: 300 }, 'aimd.initial'],
    [{ timeoutMs: -1 }, 'aimd.timeoutMs'],
    [{ ceiling: 3 }, 'aimd.ceiling'],
  ])('rejects %o naming %s', (options, field) => {
    expect(() => aimd(options as never)).toThrow(ConfigError);
    expect(() => aimd(options as never)).toThrow(field);
  });
});
