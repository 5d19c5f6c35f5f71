import { describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { ConfigError } from '../../src/index.js';
import { leaks, outcomeOf } from './scan.js';

/**
 * docs/reference.md "Errors": "No error, event payload or stats() value echoes a secret: URL credentials and
 * query strings are removed". docs/http.md "Secrets": "an origin with `user:password@` is refused
 * (and not echoed in the error, nor when it fails to parse)".
 *
 * Passwords that hold a character a URL would want percent-encoded (`/`, `#`, `?`, a space, a
 * quote) and query strings holding an unencoded space: `redactText` (src/base/redact.ts) stops at those
 * characters and lets the rest through.
 */
const PW = 'AtkOriginPw91x';
const TOKEN = 'AtkQueryTok92x';

async function configError(call: () => unknown): Promise<ConfigError> {
  const error = await outcomeOf(call);
  expect(error).toBeInstanceOf(ConfigError);
  return error as ConfigError;
}

describe('secrets: URL credentials whose password holds a special character', () => {
  // Each is a credentialed URL a user could paste (an unencoded password from a vault).
  const URLS = [
    `http://ingest:pa/${PW}@127.0.0.1:8080`,
    `http://ingest:pa ${PW}@127.0.0.1:8080`,
    `http://ingest:${PW}#x@127.0.0.1:8080`,
    `http://ingest:${PW}"x@127.0.0.1:8080`,
  ];

  it.each(URLS)(
    'origins given as one string, not an array (%s): the ConfigError does not echo the password',
    async (url) => {
      const e = await configError(() => createHttpBalancer({ origins: url as never }));
      expect(e.field).toBe('origins');
      expect(leaks(e, [PW])).toEqual([]);
    },
  );

  it.each(URLS)(
    'addShard(%s) given a bare URL string: the ConfigError does not echo the password',
    async (url) => {
      const http = createHttpBalancer({ origins: ['http://127.0.0.1:9'] });
      try {
        const e = await configError(() => http.addShard(url as never));
        expect(leaks(e, [PW])).toEqual([]);
      } finally {
        await http.close();
      }
    },
  );

  it('request({ path: <a full URL with credentials> }): the ConfigError does not echo the password', async () => {
    const http = createHttpBalancer({ origins: ['http://127.0.0.1:9'] });
    try {
      const e = await configError(() =>
        http.request({ path: `https://ingest:pa/${PW}@example.com/ingest` }),
      );
      expect(e.field).toBe('request.path');
      expect(leaks(e, [PW])).toEqual([]);
    } finally {
      await http.close();
    }
  });
});

describe('secrets: a query string with an unencoded space', () => {
  // A path built by concatenation, with a value that was not percent-encoded.
  const PATH = `/ingest?name=Ada Lovelace&token=${TOKEN}`;

  it('request({ path }) refused for the space: neither message nor value holds the token', async () => {
    const http = createHttpBalancer({ origins: ['http://127.0.0.1:9'] });
    try {
      const e = await configError(() => http.request({ method: 'POST', path: PATH, body: 'x' }));
      expect(e.field).toBe('request.path');
      expect(leaks(e, [TOKEN])).toEqual([]);
    } finally {
      await http.close();
    }
  });

  it('http.ingest({ path }) refused for the space: the ConfigError does not hold the token', async () => {
    const http = createHttpBalancer({ origins: ['http://127.0.0.1:9'] });
    try {
      const e = await configError(() => http.ingest([{ id: 1 }], { path: PATH }));
      expect(e.field).toBe('http.ingest.path');
      expect(leaks(e, [TOKEN])).toEqual([]);
    } finally {
      await http.close();
    }
  });

  it('an origin with such a query: the ConfigError does not hold the token', async () => {
    const e = await configError(() =>
      createHttpBalancer({ origins: [`http://127.0.0.1:8080/?name=Ada Lovelace&token=${TOKEN}`] }),
    );
    expect(leaks(e, [TOKEN])).toEqual([]);
  });
});

describe('secrets: watchDns({ hostname }) given a credentialed URL', () => {
  it('the ConfigError does not echo a password holding a "/"', async () => {
    const { watchDns } = await import('../../src/dns/index.js');
    const http = createHttpBalancer({ origins: ['http://127.0.0.1:9'] });
    try {
      const e = await configError(() =>
        watchDns(http, { hostname: `http://ingest:pa/${PW}@shards.internal`, port: 8080 }),
      );
      expect(e.field).toBe('hostname');
      expect(leaks(e, [PW])).toEqual([]);
    } finally {
      await http.close();
    }
  });
});
