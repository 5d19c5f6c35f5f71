/**
 * Bad options of batched ingestion are `ConfigError`s naming the field, the expectation and the
 * value — thrown (or rejected) before a single record is taken.
 */
import { describe, expect, it } from 'vitest';
import { createHttpBalancer } from '../../src/http/index.js';
import { Balancer, ConfigError } from '../../src/index.js';
import { createS3Balancer } from '../../src/s3/index.js';

const send = async () => undefined;

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('batch option checks', () => {
  const balancer = new Balancer<string>({ shards: [{ id: 'a', target: 'a' }] });
  const cases: [unknown, RegExp][] = [
    [{ maxRecords: 0 }, /`ingest\.batch\.maxRecords` must be a positive integer, got 0 \(number\)/],
    [{ maxRecords: 2.5 }, /`ingest\.batch\.maxRecords`/],
    [{ maxBytes: -1 }, /`ingest\.batch\.maxBytes` must be a positive integer, got -1/],
    [{ lingerMs: -5 }, /`ingest\.batch\.lingerMs` must be a non-negative number of ms/],
    [{ lingerMs: Number.NaN }, /`ingest\.batch\.lingerMs`/],
    [{ size: 100 }, /`ingest\.batch\.size` must be a function/],
    [
      { maxRecords: 10, maxHeldRecords: 5 },
      /`ingest\.batch\.maxHeldRecords` must be at least maxRecords \(10\)/,
    ],
    [
      { maxBytes: 1_000, maxHeldBytes: 999 },
      /`ingest\.batch\.maxHeldBytes` must be at least maxBytes \(1000\)/,
    ],
    [{ retry: { attempts: 0 } }, /`ingest\.batch\.retry\.attempts` must be a positive integer/],
    [
      { retry: { backoff: { baseMs: 10, maxMs: 5 } } },
      /`ingest\.batch\.retry\.backoff\.maxMs` must be ≥ backoff\.baseMs \(10\)/,
    ],
    [{ retry: { budget: { ratio: 2 } } }, /`ingest\.batch\.retry\.budget\.ratio`/],
    [{ retry: { atempts: 3 } }, /`ingest\.batch\.retry\.atempts` is not a known option/],
    [{ maxRecrods: 10 }, /`ingest\.batch\.maxRecrods` is not a known option/],
    ['big', /`ingest\.batch` must be an object/],
  ];
  it.each(cases)('batch %j → %s', async (batch, message) => {
    let taken = 0;
    function* source() {
      taken++;
      yield 1;
    }
    const error = await rejection(balancer.ingest(source(), { batch, send } as never));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(message);
    expect(taken).toBe(0);
    expect(() => balancer.createWriteStream({ batch, send } as never)).toThrow(ConfigError);
  });

  it('checks onFailed and signal', async () => {
    expect(
      ((await rejection(balancer.ingest([1], { send, onFailed: 'log' } as never))) as Error)
        .message,
    ).toMatch(/`ingest\.onFailed` must be a function/);
    expect(
      ((await rejection(balancer.ingest([1], { send, signal: {} } as never))) as Error).message,
    ).toMatch(/`ingest\.signal` must be an AbortSignal/);
  });
});

describe('http.ingest option checks', () => {
  const http = createHttpBalancer({ origins: ['http://127.0.0.1:9'] });
  const cases: [unknown, RegExp][] = [
    [{}, /`http\.ingest\.path` must be a string starting with "\/", got undefined/],
    [{ path: 'ingest' }, /`http\.ingest\.path` must be a string starting with "\/"/],
    [
      { path: '/x', encode: 'csv' },
      /`http\.ingest\.encode` must be 'ndjson', 'json' or a function/,
    ],
    [{ path: '/x', failures: true }, /`http\.ingest\.failures` must be a function/],
    [{ path: '/x', batch: { maxRecords: -1 } }, /`http\.ingest\.batch\.maxRecords`/],
    [{ path: '/x', sned: send }, /`http\.ingest\.sned` is not a known option/],
    [{ path: '/x', method: 7 }, /`http\.ingest\.method` must be an HTTP method name/],
  ];
  it.each(cases)('%j → %s', async (options, message) => {
    const error = await rejection(http.ingest([{ a: 1 }], options as never));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(message);
  });

  it('a send still means the core ingest', async () => {
    const summary = await http.ingest([1, 2], { send: async () => undefined });
    expect(summary.written).toBe(2);
    await http.close();
  });
});

describe('s3.ingest option checks', () => {
  const s3 = createS3Balancer({
    targets: [{ client: { region: 'us-east-1', endpoint: 'http://127.0.0.1:9' }, bucket: 'abc' }],
  });
  const objectKey = () => 'k';
  const cases: [unknown, RegExp][] = [
    [{}, /`s3\.ingest\.objectKey` must be a function/],
    [{ objectKey, encode: 'csv' }, /`s3\.ingest\.encode` must be 'ndjson', 'json' or a function/],
    [{ objectKey, partSizeBytes: 1024 }, /`s3\.ingest\.partSizeBytes`/],
    [{ objectKey, metadata: { a: 1 } }, /`s3\.ingest\.metadata\.a` must be a string/],
    [{ objectKey, contentType: 3 }, /`s3\.ingest\.contentType` must be a string/],
    [{ objectKey, path: '/x' }, /`s3\.ingest\.path` is not a known option/],
  ];
  it.each(cases)('%j → %s', async (options, message) => {
    const error = await rejection(s3.ingest([{ a: 1 }], options as never));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(message);
  });
});
