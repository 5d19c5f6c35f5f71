/**
 * Status mapping (docs/http.md, "Status mapping"): "other 5xx → HttpError, retryable: true —
 * retried when idempotent — counts against health: yes"; "429 → PushBackError". An error page is
 * read only for its 1 KiB excerpt, yet its size decides the outcome: past `bodyLimitBytes` the
 * status is ignored and the attempt becomes a non-retryable BodyTooLargeError.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BodyTooLargeError, createHttpBalancer, HttpError } from '../../src/http/index.js';
import { PushBackError } from '../../src/index.js';
import { roundRobin } from '../../src/pickers/index.js';
import { outcome } from '../helpers.js';
import { startServer } from './servers.js';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanup.splice(0).map((f) => f()));
});

/** A 4 KiB HTML error page, as a proxy in front of a shard sends (nginx, a cloud LB). */
const PAGE = `<html><body><h1>Bad Gateway</h1>${'<!-- padding -->'.repeat(250)}</body></html>`;

describe('an error page larger than bodyLimitBytes', () => {
  it('a 502 with a 4 KiB page is still a retryable 5xx: an idempotent PUT moves to the healthy shard', async () => {
    const sick = await startServer((_req, res) => {
      res.statusCode = 502;
      res.setHeader('content-type', 'text/html');
      res.end(PAGE);
    });
    const healthy = await startServer((_req, res) => res.end('ok'));
    cleanup.push(sick.close, healthy.close);
    const http = createHttpBalancer({
      origins: [sick.origin, healthy.origin],
      picker: roundRobin(), // the first attempt goes to the sick shard
      bodyLimitBytes: 1024, // acks are tiny JSON
      timeoutMs: 5_000,
      retry: { attempts: 2, backoff: { baseMs: 1, maxMs: 1 }, budget: false },
    });
    const result = await outcome(http.request({ method: 'PUT', path: '/items/1', body: '{}' }));
    await http.close();
    // Observed: BodyTooLargeError (statusCode 502, retryable false); healthy.requests === 0.
    expect(result).not.toBeInstanceOf(BodyTooLargeError);
    expect((result as { statusCode?: number }).statusCode).toBe(200);
    expect(healthy.requests).toBe(1);
  });

  it('a 502 with a 4 KiB page counts against health: five in a row eject the shard', async () => {
    const sick = await startServer((_req, res) => {
      res.statusCode = 502;
      res.end(PAGE);
    });
    const healthy = await startServer((_req, res) => res.end('ok'));
    cleanup.push(sick.close, healthy.close);
    const http = createHttpBalancer({
      origins: [sick.origin, healthy.origin],
      picker: roundRobin(),
      bodyLimitBytes: 1024,
      timeoutMs: 5_000,
      retry: false,
    });
    const errors: unknown[] = [];
    for (let i = 0; i < 10 && sick.requests < 5; i++) {
      const r = await outcome(http.request({ method: 'PUT', path: `/items/${i}`, body: '{}' }));
      if (r instanceof Error) errors.push(r);
    }
    const stats = http.stats();
    await http.close();
    expect(sick.requests).toBe(5);
    expect(errors.every((e) => e instanceof HttpError && e.statusCode === 502)).toBe(true);
    // Observed: ejected false, ejections 0 — a BodyTooLargeError is not the shard's fault.
    expect(stats.shards[0]!.ejections).toBe(1);
  });

  it('a 429 with a 4 KiB page is still push-back', async () => {
    const busy = await startServer((_req, res) => {
      res.statusCode = 429;
      res.setHeader('retry-after', '2');
      res.end(PAGE);
    });
    cleanup.push(busy.close);
    const http = createHttpBalancer({
      origins: [busy.origin],
      bodyLimitBytes: 1024,
      timeoutMs: 5_000,
      retry: false,
    });
    const result = await outcome(http.request({ method: 'POST', path: '/ingest', body: '{}' }));
    await http.close();
    // Observed: BodyTooLargeError (statusCode 429); the shard is not spared.
    expect(result).toBeInstanceOf(PushBackError);
    expect((result as PushBackError).retryAfterMs).toBe(2_000);
  });
});
