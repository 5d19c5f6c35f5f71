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
  it('reads the three HTTP-date forms of RFC 9110, all as UTC, and nothing looser', () => {
    // 60 s after `now`, each way the RFC allows; asctime carries no zone and still means GMT.
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('Wednesday, 21-Oct-15 07:28:00 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('Wed Oct 21 07:28:00 2015', now)).toBe(60_000);
    const dec2 = Date.UTC(2026, 11, 2, 5, 18, 9);
    expect(parseRetryAfter('Wed Dec  2 05:18:29 2026', dec2)).toBe(20_000);
    // Date.parse reads these as dates (in 2001, or local time); none is an HTTP-date.
    for (const v of [
      'retry in 10',
      'wait 2',
      'after 10',
      '21 Oct 2015 07:28:00 GMT',
      'Wed, 21 Oct 2015 07:28:00',
      'Wed, 21 Oct 2015 07:28:00 +0000',
      '2015-10-21T07:28:00Z',
      'Wed, 31 Feb 2015 07:28:00 GMT',
      'Wed, 21 Oct 2015 25:28:00 GMT',
    ]) {
      expect(parseRetryAfter(v, now), v).toBeUndefined();
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
