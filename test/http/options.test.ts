import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/base/errors.js';
import {
  createHttpBalancer,
  HttpBalancer,
  type HttpBalancerOptions,
} from '../../src/http/index.js';
import { Balancer } from '../../src/index.js';

function configError(options: unknown): ConfigError {
  try {
    createHttpBalancer(options as HttpBalancerOptions);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('createHttpBalancer options', () => {
  it('needs exactly one of origins and shards', () => {
    expect(configError({}).field).toBe('origins');
    expect(configError({ origins: [] }).field).toBe('origins');
    expect(
      configError({ origins: ['http://a'], shards: [{ id: 'a', target: 'http://a' }] }).message,
    ).toContain('`shards`');
  });

  it('rejects invalid URLs, with the field named', () => {
    expect(configError({ origins: ['not a url'] }).field).toBe('origins[0]');
    expect(configError({ origins: ['ftp://10.0.0.1'] }).field).toBe('origins[0]');
    expect(configError({ origins: ['http://10.0.0.1/ingest'] }).message).toContain(
      'without a path',
    );
    expect(configError({ shards: [{ id: 'a', target: { origin: 7 } }] }).field).toBe(
      'shards[0].target.origin',
    );
    // Credentials in a URL are refused, and never echoed.
    const creds = configError({ origins: ['http://user:hunter2@10.0.0.1'] });
    expect(creds.message).not.toContain('hunter2');
    expect(JSON.stringify(creds)).not.toContain('hunter2');
  });

  it('validates every transport option', () => {
    const origins = ['http://127.0.0.1:1'];
    expect(configError({ origins, connectionsPerShard: 0 }).message).toBe(
      '`connectionsPerShard` must be a positive integer, got 0 (number)',
    );
    expect(configError({ origins, pipelining: -1 }).field).toBe('pipelining');
    expect(configError({ origins, keepAliveTimeoutMs: 0 }).field).toBe('keepAliveTimeoutMs');
    expect(configError({ origins, headersTimeoutMs: -5 }).field).toBe('headersTimeoutMs');
    expect(configError({ origins, bodyTimeoutMs: 'x' }).field).toBe('bodyTimeoutMs');
    expect(configError({ origins, bodyLimitBytes: 1.5 }).field).toBe('bodyLimitBytes');
    expect(configError({ origins, loadHeader: 'bad header' }).field).toBe('loadHeader');
    expect(configError({ origins, tls: { ca: 5 } }).field).toBe('tls.ca');
    expect(configError({ origins, tls: { verify: true } }).field).toBe('tls.verify');
    expect(configError({ origins, maxRetryAfterMs: -1 }).field).toBe('maxRetryAfterMs');
  });

  it('rejects unknown option names, listing the known ones (core and transport)', () => {
    const error = configError({ origins: ['http://127.0.0.1:1'], conectionsPerShard: 4 });
    expect(error.field).toBe('conectionsPerShard');
    expect(error.message).toContain('connectionsPerShard');
    expect(error.message).toContain('maxInFlightPerShard');
    expect(configError({ origins: ['http://127.0.0.1:1'], maxQueued: 0 }).field).toBe('maxQueued');
  });

  it('builds a Balancer whose ids are the normalised origins, or the given ids', async () => {
    const http = createHttpBalancer({
      origins: ['HTTP://LOCALHOST:80', 'https://127.0.0.1:8443/'],
    });
    expect(http).toBeInstanceOf(Balancer);
    expect(http).toBeInstanceOf(HttpBalancer);
    expect(http.shards.map((s) => s.id)).toEqual(['http://localhost', 'https://127.0.0.1:8443']);
    expect(http.shards[0]!.target).toEqual({ origin: 'http://localhost' });
    expect(Object.isFrozen(http.shards[0]!.target)).toBe(true);
    expect(http.stats().shards[0]).toMatchObject({ connections: 0, pending: 0, running: 0 });
    await http.close();
    const named = createHttpBalancer({
      shards: [{ id: 'eu-1', target: 'http://10.0.0.1:8080', weight: 2, zone: 'eu' }],
    });
    expect(named.shards[0]).toMatchObject({ id: 'eu-1', weight: 2, zone: 'eu' });
    await named.close();
  });

  it('defaults maxInFlightPerShard to the pool size, and keeps an explicit one', async () => {
    const a = createHttpBalancer({ origins: ['http://127.0.0.1:1'], connectionsPerShard: 3 });
    expect(a.stats().shards[0]!.limit).toBe(3);
    const b = createHttpBalancer({ origins: ['http://127.0.0.1:1'], maxInFlightPerShard: 50 });
    expect(b.stats().shards[0]!.limit).toBe(50);
    await Promise.all([a.close(), b.close()]);
  });

  it('leaves the global fetch dispatcher alone (undici is loaded without its entry point)', () => {
    expect((globalThis as Record<symbol, unknown>)[Symbol.for('undici.globalDispatcher.1')]).toBe(
      undefined,
    );
  });
});
