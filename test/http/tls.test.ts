import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { startServer, type TestServer } from './servers.js';

const cert = readFileSync(new URL('./fixtures/cert.pem', import.meta.url));
const key = readFileSync(new URL('./fixtures/key.pem', import.meta.url));

describe('https shards', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer((req, res) => res.end(`secure ${req.url}`), { tls: { cert, key } });
  });
  afterAll(async () => {
    await server.close();
  });

  it('reaches a self-signed shard trusted through tls.ca, over kept-alive connections', async () => {
    const http = createHttpBalancer({
      origins: [server.origin],
      tls: { ca: cert },
      connectionsPerShard: 2,
    });
    for (let i = 0; i < 20; i++) {
      const res = await http.request({ path: `/${i}` });
      expect(res.text()).toBe(`secure /${i}`);
    }
    expect(server.connections).toBeLessThanOrEqual(2);
    await http.close();
  });

  it('refuses the same shard without the CA', async () => {
    const http = createHttpBalancer({ origins: [server.origin], retry: false });
    const error = await http.request({ path: '/' }).catch((e) => e);
    expect(String((error as { code?: string }).code)).toMatch(/SELF_SIGNED|UNABLE_TO_VERIFY/);
    await http.close();
  });

  it('checks the name given in tls.servername', async () => {
    const http = createHttpBalancer({
      origins: [server.origin],
      tls: { ca: cert, servername: 'localhost' },
    });
    expect((await http.request({ path: '/sni' })).text()).toBe('secure /sni');
    await http.close();
    const wrong = createHttpBalancer({
      origins: [server.origin],
      tls: { ca: cert, servername: 'example.com' },
      retry: false,
    });
    const error = await wrong.request({ path: '/' }).catch((e) => e);
    expect(String((error as { code?: string }).code)).toMatch(/ERR_TLS_CERT_ALTNAME_INVALID/);
    await wrong.close();
  });
});
