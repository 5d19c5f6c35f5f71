/**
 * The compression option and the compressor: each codec's bytes decompress to exactly what went
 * in, `minBytes` is respected, bad options are `ConfigError`s naming the caller's field, the gate
 * bounds compressions in flight, and a missing zstd peer names its install command.
 */
import { createRequire } from 'node:module';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/base/errors.js';
import {
  type Compressed,
  createCompressor,
  isCompressed,
  resolveCompression,
} from '../../src/transport/compression.js';
import { Gate, gateSize, threadpoolSize } from '../../src/transport/gate.js';
import { nativeZstd, ZSTD_INSTALL } from '../../src/transport/zstd.js';

const zstd = createRequire(import.meta.url)('@mongodb-js/zstd') as {
  decompress(bytes: Buffer): Promise<Buffer>;
};

/** ~100-byte NDJSON records, as an ingestion batch holds them. */
function ndjson(records: number): string {
  let out = '';
  for (let i = 0; i < records; i++) {
    out += `${JSON.stringify({ id: i, host: `web-${i % 17}`, level: i % 5 === 0 ? 'warn' : 'info', msg: `request ${i} served in ${(i * 7) % 300} ms` })}\n`;
  }
  return out;
}

const BATCH = ndjson(500);

async function decompress(c: Compressed): Promise<string> {
  const body = Buffer.from(c.body as Uint8Array);
  if (c.encoding === 'gzip') return zlib.gunzipSync(body).toString();
  if (c.encoding === 'br') return zlib.brotliDecompressSync(body).toString();
  if (c.encoding === 'zstd') return (await zstd.decompress(body)).toString();
  throw new Error(`unexpected encoding ${c.encoding}`);
}

describe('compressor round trips', () => {
  for (const codec of ['gzip', 'br', 'zstd'] as const) {
    it(`${codec}: a 500-record batch decompresses to exactly its bytes, and is smaller`, async () => {
      const compressor = createCompressor(codec);
      for (const input of [BATCH, Buffer.from(BATCH), new TextEncoder().encode(BATCH)]) {
        const out = await compressor.compress(input);
        expect(out.encoding).toBe(codec);
        expect(out.rawBytes).toBe(Buffer.byteLength(BATCH));
        expect(out.wireBytes).toBe((out.body as Uint8Array).byteLength);
        expect(out.wireBytes).toBeLessThan(out.rawBytes / 4);
        expect(await decompress(out)).toBe(BATCH);
        expect(isCompressed(out)).toBe(true);
        // What was compressed is kept (its secrets are scrubbed from a shard's echo of it).
        expect(out.source()).toBe(input);
      }
    });
  }

  it('each codec names its content-encoding and object suffix', () => {
    expect(
      (['gzip', 'br', 'zstd'] as const).map((c) => {
        const { encoding, suffix } = createCompressor(c);
        return [encoding, suffix];
      }),
    ).toEqual([
      ['gzip', '.gz'],
      ['br', '.br'],
      ['zstd', '.zst'],
    ]);
  });

  it('the level reaches the codec: gzip level 1 marks its header "fastest", level 9 "best"', async () => {
    const fast = await createCompressor({ codec: 'gzip', level: 1 }).compress(BATCH);
    const best = await createCompressor({ codec: 'gzip', level: 9 }).compress(BATCH);
    // RFC 1952: XFL (byte 8) is 4 for the fastest deflate, 2 for maximum compression.
    expect((fast.body as Uint8Array)[8]).toBe(4);
    expect((best.body as Uint8Array)[8]).toBe(2);
    expect(best.wireBytes).toBeLessThan(fast.wireBytes);
  });
});

describe('minBytes', () => {
  it('a body shorter than minBytes (default 1024) is returned untouched, with no encoding', async () => {
    const gzip = createCompressor('gzip');
    const text = 'x'.repeat(1023);
    const bytes = Buffer.from(text);
    const a = await gzip.compress(text);
    const b = await gzip.compress(bytes);
    expect(a.body).toBe(text);
    expect(b.body).toBe(bytes);
    expect([a.encoding, b.encoding]).toEqual([undefined, undefined]);
    expect([a.rawBytes, a.wireBytes]).toEqual([1023, 1023]);
    // Counted in bytes, not characters: 512 two-byte characters are 1024 bytes.
    const wide = await gzip.compress('é'.repeat(512));
    expect(wide.encoding).toBe('gzip');
  });

  it('at minBytes a body is compressed; minBytes 0 compresses every body', async () => {
    expect((await createCompressor('gzip').compress('x'.repeat(1024))).encoding).toBe('gzip');
    const always = createCompressor({ codec: 'br', minBytes: 0 });
    const out = await always.compress('tiny');
    expect(out.encoding).toBe('br');
    expect(await decompress(out)).toBe('tiny');
    const high = createCompressor({ codec: 'zstd', minBytes: 1_000_000 });
    expect((await high.compress(BATCH)).body).toBe(BATCH);
  });
});

describe('the option, checked once under the caller’s field', () => {
  const bad: [unknown, string, RegExp][] = [
    ['lz4', 'http.ingest.compression', /must be 'gzip', 'zstd' or 'br'/],
    [true, 'http.ingest.compression', /must be 'gzip', 'zstd', 'br', false, or \{ codec/],
    [{ level: 3 }, 'http.ingest.compression.codec', /must be 'gzip'/],
    [{ codec: 'gzip', level: 0 }, 'http.ingest.compression.level', /from 1 to 9 for gzip/],
    [{ codec: 'zstd', level: 23 }, 'http.ingest.compression.level', /from 1 to 22 for zstd/],
    [{ codec: 'br', level: 1.5 }, 'http.ingest.compression.level', /from 0 to 11 for br/],
    [{ codec: 'gzip', minBytes: -1 }, 'http.ingest.compression.minBytes', /integer ≥ 0/],
    [{ codec: 'gzip', minBytes: '1k' }, 'http.ingest.compression.minBytes', /integer ≥ 0/],
    [{ codec: 'gzip', levle: 3 }, 'http.ingest.compression.levle', /not a known option/],
  ];
  for (const [value, field, message] of bad) {
    it(`${JSON.stringify(value)} → ConfigError on ${field}`, () => {
      let error: unknown;
      try {
        resolveCompression('http.ingest.compression', value);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe(field);
      expect((error as Error).message).toMatch(message);
    });
  }

  it('undefined and false mean none; defaults are level 1 from 1 KiB (brotli 1)', () => {
    expect(resolveCompression('c', undefined)).toBeUndefined();
    expect(resolveCompression('c', false)).toBeUndefined();
    const picked = (['gzip', 'zstd', 'br'] as const).map((codec) => {
      const c = resolveCompression('c', codec)!;
      return [c.codec, c.level, c.minBytes];
    });
    expect(picked).toEqual([
      ['gzip', 1, 1024],
      ['zstd', 1, 1024],
      ['br', 1, 1024],
    ]);
    expect(() => createCompressor(false as never)).toThrow(ConfigError);
  });

  it('a body that is neither text nor bytes is refused by name', async () => {
    const gzip = resolveCompression('request.compression', 'gzip')!;
    await expect(gzip.compress({ length: 5 } as never)).rejects.toThrow(
      /`request\.compression \(the body\)` must be a string or a Uint8Array/,
    );
  });
});

describe('the gate', () => {
  it('runs at most `limit` tasks at once, the rest in arrival order', async () => {
    const gate = new Gate(3);
    let running = 0;
    let peak = 0;
    const started: number[] = [];
    const releases: (() => void)[] = [];
    const all = Array.from({ length: 20 }, (_, i) =>
      gate.run(async () => {
        started.push(i);
        running++;
        peak = Math.max(peak, running);
        await new Promise<void>((resolve) => releases.push(resolve));
        running--;
        return i;
      }),
    );
    expect([gate.active, gate.waiting]).toEqual([3, 17]);
    // Release one at a time, oldest first, until all have run.
    while (releases.length > 0) {
      releases.shift()!();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await Promise.all(all)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(peak).toBe(3);
    expect(started).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect([gate.active, gate.waiting]).toEqual([0, 0]);
  });

  it('a task that throws or rejects frees its turn', async () => {
    const gate = new Gate(1);
    const failed = gate.run(() => {
      throw new Error('sync');
    });
    const rejected = gate.run(() => Promise.reject(new Error('async')));
    const ok = gate.run(async () => 'ok');
    await expect(failed).rejects.toThrow('sync');
    await expect(rejected).rejects.toThrow('async');
    expect(await ok).toBe('ok');
    expect(gate.active).toBe(0);
  });

  it('a compressor waits at its gate: 2 in flight of 12, each body still exact', async () => {
    const gate = new Gate(2);
    const gzip = resolveCompression('c', 'gzip', { gate })!;
    const bodies = Array.from({ length: 12 }, (_, i) => ndjson(40 + i));
    const pending = bodies.map((b) => gzip.compress(b));
    expect([gate.active, gate.waiting]).toEqual([2, 10]);
    // Short bodies pass the gate by: nothing to compress.
    void gzip.compress('short');
    expect(gate.active + gate.waiting).toBe(12);
    const out = await Promise.all(pending);
    expect(await Promise.all(out.map(decompress))).toEqual(bodies);
  });

  it('its size follows UV_THREADPOOL_SIZE and the cores, leaving a thread and a core free', () => {
    expect(threadpoolSize({})).toBe(4);
    expect(threadpoolSize({ UV_THREADPOOL_SIZE: '16' })).toBe(16);
    expect(threadpoolSize({ UV_THREADPOOL_SIZE: 'lots' })).toBe(4);
    expect(threadpoolSize({ UV_THREADPOOL_SIZE: '0' })).toBe(4);
    expect(threadpoolSize({ UV_THREADPOOL_SIZE: '5000' })).toBe(1024);
    expect([gateSize(4, 8), gateSize(16, 8), gateSize(16, 32), gateSize(1, 8)]).toEqual([
      3, 7, 15, 1,
    ]);
    expect([gateSize(4, 2), gateSize(4, 1)]).toEqual([1, 1]);
    expect(() => new Gate(0)).toThrow(RangeError);
  });
});

describe('zstd from the optional peer', () => {
  it('is imported only when a zstd body is compressed, and once', async () => {
    const names: string[] = [];
    const importPeer = (name: string) => {
      names.push(name);
      return import(name);
    };
    const gzip = resolveCompression('c', 'gzip', { importPeer })!;
    await gzip.compress(BATCH);
    await gzip.ready();
    const z = resolveCompression('c', 'zstd', { importPeer })!;
    expect(names).toEqual([]);
    const outs = await Promise.all([z.compress(BATCH), z.compress(BATCH), z.ready()]);
    expect(await decompress(outs[0] as Compressed)).toBe(BATCH);
    // node:zlib's own zstd (Node ≥ 22.15) needs no import at all.
    expect(names).toEqual(nativeZstd() === undefined ? ['@mongodb-js/zstd/bindings.js'] : []);
  });

  it('the level reaches the peer (its index.js drops it; its binding takes it)', async () => {
    const fast = await resolveCompression('c', { codec: 'zstd', level: 1 })!.compress(BATCH);
    const small = await resolveCompression('c', { codec: 'zstd', level: 19 })!.compress(BATCH);
    expect(small.wireBytes).toBeLessThan(fast.wireBytes * 0.9);
    expect(await decompress(small)).toBe(BATCH);
  });

  it('a CommonJS peer seen only as `default` works too', async () => {
    const real = await import('@mongodb-js/zstd');
    const z = resolveCompression('c', 'zstd', {
      importPeer: async () => ({ default: { compress: real.compress } }),
    })!;
    expect(await decompress(await z.compress(BATCH))).toBe(BATCH);
  });

  it('missing: a ConfigError naming the field and the install command', async () => {
    const missing = async (name: string) => {
      throw Object.assign(new Error(`Cannot find package '${name}'`), {
        code: 'ERR_MODULE_NOT_FOUND',
      });
    };
    const z = resolveCompression(
      'http.ingest.compression',
      { codec: 'zstd' },
      {
        importPeer: missing,
      },
    )!;
    if (nativeZstd() !== undefined) {
      // This Node has zstd itself: the peer is never needed.
      await expect(z.ready()).resolves.toBeUndefined();
      return;
    }
    for (const attempt of [z.ready(), z.compress(BATCH), z.compress(BATCH)]) {
      const error = await attempt.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe('http.ingest.compression');
      expect((error as Error).message).toContain(ZSTD_INSTALL);
      expect((error as Error).message).toContain('npm i -E @mongodb-js/zstd@1.2.2');
    }
    // Short bodies never need the codec.
    expect((await z.compress('short')).encoding).toBeUndefined();
  });
});
