/**
 * docs/retries-and-health.md, Push-back: "`Retry-After` (seconds or an HTTP-date) … a 429 whose
 * `Retry-After` is missing, negative or unreadable holds the shard `defaultRetryAfterMs` (1 000);
 * an HTTP 503 with such a value is a plain 5xx." docs/http.md: "`Retry-After` is read as seconds
 * or as an HTTP date".
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpBalancer, HttpError } from '../../src/http/index.js';
import { PushBackError } from '../../src/index.js';
import { roundRobin } from '../../src/pickers/index.js';
import { outcome } from '../helpers.js';
import { startServer } from './servers.js';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanup.splice(0).map((f) => f()));
});

describe('a Retry-After that is neither delay-seconds nor an HTTP-date', () => {
  it('503 "Retry-After: retry in 10" is a plain 5xx: a POST is not sent again to another shard', async () => {
    const sick = await startServer((_req, res) => {
      res.statusCode = 503;
      res.setHeader('retry-after', 'retry in 10');
      res.end('maintenance');
    });
    const other = await startServer((_req, res) => res.end('ok'));
    cleanup.push(sick.close, other.close);
    const http = createHttpBalancer({
      origins: [sick.origin, other.origin],
      picker: roundRobin(),
      timeoutMs: 5_000,
      retry: { attempts: 2, backoff: { baseMs: 1, maxMs: 1 }, budget: false },
    });
    const result = await outcome(
      http.request({ method: 'POST', path: '/orders', body: '{"n":1}' }),
    );
    await http.close();
    // Observed: the 503 became a PushBackError of 0 ms ("retry in 10" parsed by Date.parse as
    // 1 Oct 2001), so the non-idempotent POST reached both shards and the run resolved 200.
    expect(sick.requests + other.requests).toBe(1);
    expect(result).toBeInstanceOf(HttpError);
    expect((result as HttpError).statusCode).toBe(503);
  });

  it.each(['wait 2'])(
    '429 "Retry-After: %s" holds the shard defaultRetryAfterMs (1 000), like any unreadable value',
    async (value) => {
      const busy = await startServer((_req, res) => {
        res.statusCode = 429;
        res.setHeader('retry-after', value);
        res.end();
      });
      cleanup.push(busy.close);
      const http = createHttpBalancer({ origins: [busy.origin], retry: false, timeoutMs: 5_000 });
      const e = await outcome(http.request({ path: '/x' }));
      await http.close({ drain: false });
      expect(e).toBeInstanceOf(PushBackError);
      // Observed: 0 (a date in 2001, clamped).
      expect((e as PushBackError).retryAfterMs).toBe(1_000);
    },
  );
});

/** The asctime form of RFC 9110 §5.6.7 (`Sun Nov  6 08:49:37 1994`), always in GMT. */
function asctime(epochMs: number): string {
  const d = new Date(epochMs);
  const days = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
  const months = [
    'Jan',
    'Feb',
    'Mar',
    'Apr',
    'May',
    'Jun',
    'Jul',
    'Aug',
    'Sep',
    'Oct',
    'Nov',
    'Dec',
  ];
  const two = (n: number) => String(n).padStart(2, '0');
  return `${days[d.getUTCDay()]} ${months[d.getUTCMonth()]} ${String(d.getUTCDate()).padStart(2, ' ')} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} ${d.getUTCFullYear()}`;
}

describe('an HTTP-date in asctime form, on a host whose time zone is not UTC', () => {
  const savedTz = process.env.TZ;
  afterEach(() => {
    if (savedTz === undefined) delete process.env.TZ;
    else process.env.TZ = savedTz;
  });

  it.each(['America/New_York', 'Asia/Tokyo'])(
    'TZ=%s: a 429 asking for 20 s (asctime, GMT) holds the shard about 20 s',
    async (tz) => {
      process.env.TZ = tz;
      const busy = await startServer((_req, res) => {
        res.statusCode = 429;
        res.setHeader('retry-after', asctime(Date.now() + 20_000));
        res.end();
      });
      cleanup.push(busy.close);
      const http = createHttpBalancer({ origins: [busy.origin], retry: false, timeoutMs: 5_000 });
      const e = await outcome(http.request({ path: '/x' }));
      await http.close({ drain: false });
      expect(e).toBeInstanceOf(PushBackError);
      // Observed: 60 000 (the cap: read as New York time, 5 h late) and 0 (Tokyo, 9 h early).
      const ms = (e as PushBackError).retryAfterMs;
      expect(ms).toBeGreaterThanOrEqual(10_000);
      expect(ms).toBeLessThanOrEqual(20_000);
    },
  );
});
