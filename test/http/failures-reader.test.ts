/**
 * `http.ingest({ path, failures })`: a `failures(response, records)` reader whose return value is
 * malformed. The ConfigError must name the field the caller wrote (`failures`), not a `send()`
 * they never gave (docs/reference.md: "a `ConfigError` … naming the field, the expectation and what was
 * given").
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import type { RecordFailure } from '../../src/index.js';
import { startServer, type TestServer } from './servers.js';

let servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

describe('http.ingest failures() with a bad return value', () => {
  const cases: Array<[string, () => unknown]> = [
    ['a number', () => 5],
    ['a Promise (an async reader)', async () => [{ index: 0 }]],
    ['an index out of range', () => [{ index: 9 }]],
  ];
  for (const [what, reader] of cases) {
    it(`names \`http.ingest.failures\` when it returns ${what}`, async () => {
      servers = [await startServer((_q, res) => res.end('{}'))];
      const http = createHttpBalancer({ origins: servers.map((s) => s.origin) });
      try {
        const summary = await http.ingest([{ id: 1 }, { id: 2 }], {
          path: '/bulk',
          failures: reader as () => readonly RecordFailure[] | undefined,
        });
        expect(summary.failed).toBe(2);
        const error = summary.failures[0]!.error as Error;
        expect(error.name).toBe('ConfigError');
        // The caller gave `failures`, never a `send`: the error must name what they wrote.
        expect(error.message).not.toContain('send()');
        expect(error.message).toContain('http.ingest.failures');
      } finally {
        await http.close();
      }
    });
  }

  it('names `http.createWriteStream.failures` too', async () => {
    servers = [await startServer((_q, res) => res.end('{}'))];
    const http = createHttpBalancer({ origins: servers.map((s) => s.origin) });
    try {
      const stream = http.createWriteStream<{ id: number }>({
        path: '/bulk',
        failures: () => 5 as unknown as RecordFailure[],
      });
      const errors: unknown[] = [];
      stream.on('failed', (_r: unknown, e: unknown) => errors.push(e));
      stream.on('error', () => {});
      await new Promise<void>((resolve) => {
        stream.end({ id: 1 }, () => resolve());
        stream.on('close', () => resolve());
      });
      const error = errors[0] as Error;
      expect(error?.name).toBe('ConfigError');
      expect(error.message).not.toContain('send()');
      expect(error.message).toContain('http.createWriteStream.failures');
    } finally {
      await http.close();
    }
  });
});
