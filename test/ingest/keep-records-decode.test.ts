/**
 * `keepRecords: false`: "a failed record is reported decoded from the bytes it was sent as — the
 * same text for a string, a `Buffer` of the same bytes, `JSON.parse` of its JSON for anything
 * else — equal to the record" (docs/batching.md). Strings, Buffers and objects, multi-byte and
 * astral text, against a real server that refuses every batch (400).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { startServers, type TestServer } from '../http/servers.js';

let servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

describe('keepRecords: false, records reported failed', () => {
  it('a string record comes back as the same text', async () => {
    servers = await startServers(1, (_req, res) => res.writeHead(400).end('no'));
    const http = createHttpBalancer({ origins: [servers[0]!.origin] });
    const data: string[] = [
      'plain',
      'é😀 multi-byte',
      `${'x'.repeat(200)}€`, // past the ASCII copy loop
      'half of a pair: \uD83D', // a lone surrogate
      '\uDE00 a trailing half first',
    ];
    const summary = await http.ingest(data, {
      path: '/ingest',
      batch: { maxRecords: 100, keepRecords: false },
    });
    await http.close();
    // Every batch refused: split down to each record, each reported failed once.
    expect(summary.failed).toBe(data.length);
    const back = summary.failures.map((f) => f.record as string);
    expect([...back].sort()).toEqual([...data].sort());
  });
});
