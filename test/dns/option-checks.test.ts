import { describe, expect, it } from 'vitest';
import { watchDns } from '../../src/dns/index.js';
import { Balancer, ConfigError } from '../../src/index.js';

/**
 * `watchDns` options: a bad value is a `ConfigError` naming the field, thrown by `watchDns`
 * itself — not a RangeError from node:dns, not a watch that retries a hopeless name for ever.
 */
function thrown(f: () => unknown): unknown {
  try {
    const watch = f() as { close?: () => void };
    watch?.close?.();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('watchDns options', () => {
  it.each([2 ** 31, 2 ** 40, 365 * 24 * 3_600_000])(
    'timeoutMs %d is a ConfigError naming timeoutMs, not a RangeError from node:dns',
    async (timeoutMs) => {
      const balancer = new Balancer({ shards: [{ id: 'a', target: 'http://127.0.0.1:1' }] });
      const error = thrown(() =>
        watchDns(balancer, { hostname: 'localhost', port: 8080, timeoutMs }),
      );
      await balancer.close();
      // today: RangeError [ERR_OUT_OF_RANGE] The value of "options.timeout" is out of range.
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe('timeoutMs');
    },
  );

  it.each(['http://ingest.internal:8080', 'ingest.internal:8080'])(
    'hostname %s (a URL / host:port, not a DNS name) is a ConfigError, not a watch whose ready never settles',
    async (hostname) => {
      const balancer = new Balancer({ shards: [{ id: 'a', target: 'http://127.0.0.1:1' }] });
      // today: accepted; every refresh emits 'error' (EBADNAME) and `ready` stays pending for ever
      const error = thrown(() =>
        watchDns(balancer, { hostname, port: 8080, servers: ['127.0.0.1:1'], timeoutMs: 50 }),
      );
      await balancer.close();
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe('hostname');
    },
  );
});
