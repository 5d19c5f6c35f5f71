import { describe, expect, it } from 'vitest';
import { aimd } from '../../src/index.js';

// docs/adaptive-limits.md: "+1 after a success while the limit is in use (in-flight ≥ half the
// limit), × `backoffRatio` after a drop".
describe('aimd(): growth threshold is half the limit', () => {
  it('after a drop to 10 (10.8 inside), 5 in flight is half the limit: a success adds 1', () => {
    const limit = aimd({ initial: 12 })();
    limit.onSample({ rttMs: 1, inFlight: 1, dropped: true }); // 12 × 0.9 = 10.8
    expect(limit.limit).toBe(10);
    limit.onSample({ rttMs: 1, inFlight: 5, dropped: false }); // 5 ≥ 10 / 2
    expect(limit.limit).toBe(11);
  });
});
