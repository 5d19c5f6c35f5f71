import { describe, expect, it } from 'vitest';
import { parseLoadHeader, parseRetryAfter } from '../../src/http/index.js';

describe('parseRetryAfter', () => {
  const now = Date.parse('Wed, 21 Oct 2015 07:27:00 GMT');
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter(' 120 ', now)).toBe(120_000);
    expect(parseRetryAfter(['3', '9'], now)).toBe(3_000);
  });
  it('reads an HTTP-date, clamped at 0 when past', () => {
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', () => now)).toBe(60_000);
  });
  it('ignores what is neither', () => {
    for (const v of [undefined, '', '1.5', '-1', '1e3', 'soon', '0x10']) {
      expect(parseRetryAfter(v, now)).toBeUndefined();
    }
  });
});

describe('parseLoadHeader', () => {
  it('takes finite numbers ≥ 0 only', () => {
    expect(parseLoadHeader('0')).toBe(0);
    expect(parseLoadHeader('12.5')).toBe(12.5);
    expect(parseLoadHeader(['3', '4'])).toBe(3);
    for (const v of [undefined, '', '-1', 'NaN', 'Infinity', 'high']) {
      expect(parseLoadHeader(v)).toBeUndefined();
    }
  });
});
