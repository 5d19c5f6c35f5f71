import { describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { Balancer, ConfigError } from '../../src/index.js';

function configError(f: () => unknown): ConfigError {
  try {
    f();
  } catch (e) {
    return e as ConfigError;
  }
  throw new Error('no ConfigError');
}

describe('ConfigError: an `@` past a URL authority is not userinfo', () => {
  it('an origin with a path holding `@` is echoed with its own host, not the text after the `@`', () => {
    const e = configError(() =>
      createHttpBalancer({ origins: ['http://10.0.0.1:8080/notify/ops@example.com'] }),
    );
    expect(e).toBeInstanceOf(ConfigError);
    // No credentials anywhere: the authority is 10.0.0.1:8080. The error names another host.
    expect(String(e.value)).toContain('10.0.0.1');
  });

  it('a bad option value holding a URL with `@` in its query names what was given', () => {
    const e = configError(
      () =>
        new Balancer({
          shards: [{ id: 'a', target: 'x' }],
          timeoutMs: 'http://10.0.0.1:8080/?mail=ops@example.com' as unknown as number,
        }),
    );
    expect(e).toBeInstanceOf(ConfigError);
    expect(e.message).toContain('10.0.0.1');
  });
});
