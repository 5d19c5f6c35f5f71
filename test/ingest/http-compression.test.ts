/**
 * `http.ingest({ compression })` on real `node:http` shards that decompress what they get: each
 * body decodes to exactly the NDJSON of its batch (gzip, br, zstd), a short batch goes as it is,
 * a retry resends the very same bytes, the ingestion's and the balancer's ledgers match what the
 * shards received (per shard, per `prefer` tier, per `transitLabel` value), a missing zstd peer
 * stops the ingestion before a record is read, and `ordering: 'key'` holds. Counts, never timings.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ConfigError,
  consistentHash,
  createHttpBalancer,
  type HttpBalancer,
} from '../../src/http/index.js';
import { seededRandom } from '../../src/testing/index.js';
import { replacePeerImport, ZSTD_INSTALL } from '../../src/transport/zstd.js';
import {
  type DecodingServer,
  type Received,
  startDecodingServer,
} from '../http/decoding-servers.js';
import { startServers, type TestServer } from '../http/servers.js';

interface Row {
  id: number;
  host: string;
  msg: string;
}

/** ~100-byte records, as a log producer's. */
function rows(n: number, from = 0): Row[] {
  return Array.from({ length: n }, (_, i) => {
    const id = from + i;
    return { id, host: `web-${id % 17}`, msg: `request ${id} served in ${(id * 7) % 300} ms` };
  });
}

const line = (row: Row) => `${JSON.stringify(row)}\n`;

let servers: DecodingServer[] = [];
let plain: TestServer[] = [];
let balancers: HttpBalancer[] = [];
afterEach(async () => {
  await Promise.all(balancers.map((b) => b.close()));
  await Promise.all([...servers, ...plain].map((s) => s.close()));
  servers = [];
  plain = [];
  balancers = [];
});

async function start(
  n: number,
  options?: Parameters<typeof startDecodingServer>[0],
): Promise<DecodingServer[]> {
  const started = await Promise.all(Array.from({ length: n }, () => startDecodingServer(options)));
  servers.push(...started);
  return started;
}

function track(http: HttpBalancer): HttpBalancer {
  balancers.push(http);
  return http;
}

/** Every body a server decoded, in the order of the records it holds (unkeyed: whole ranges). */
function decodedInOrder(received: readonly Received[]): string {
  return received
    .map((r) => r.raw.toString())
    .sort(
      (a, b) =>
        (JSON.parse(a.slice(0, a.indexOf('\n'))) as Row).id -
        (JSON.parse(b.slice(0, b.indexOf('\n'))) as Row).id,
    )
    .join('');
}

const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

describe('http.ingest({ compression })', () => {
  for (const codec of ['gzip', 'br', 'zstd'] as const) {
    it(`${codec}: every body decodes to exactly the NDJSON of its batch; the ledgers match the shards`, async () => {
      const shards = await start(2);
      const http = track(createHttpBalancer({ origins: shards.map((s) => s.origin) }));
      const data = rows(2_000);
      const summary = await http.ingest(data, {
        path: '/ingest',
        compression: codec,
        batch: { maxRecords: 500 },
      });
      expect(summary.written).toBe(2_000);
      const received = shards.flatMap((s) => s.received);
      expect(received).toHaveLength(4);
      for (const r of received) {
        expect(r.encoding).toBe(codec);
        expect(r.headers['content-type']).toBe('application/x-ndjson');
        expect(r.headers['idempotency-key']).toMatch(/^[0-9a-f]{16}-/);
        expect(r.wire.length).toBeLessThan(r.raw.length / 4);
      }
      expect(decodedInOrder(received)).toBe(data.map(line).join(''));
      // The ingestion's account and the balancer's: what the shards read off their sockets.
      expect(summary.transit).toEqual({
        raw: sum(received.map((r) => r.raw.length)),
        wire: sum(received.map((r) => r.wire.length)),
        received: sum(shards.map((s) => s.answered)),
      });
      expect(http.stats().shards.map((s) => s.bytes.wire)).toEqual(
        shards.map((s) => sum(s.received.map((r) => r.wire.length))),
      );
      expect(http.stats().bytes).toEqual(summary.transit);
    });
  }

  it('minBytes: a short batch goes as it is, with no content-encoding', async () => {
    const [shard] = await start(1);
    const http = track(createHttpBalancer({ origins: [shard!.origin] }));
    // 5 records: ~400 bytes, below the default 1 KiB.
    await http.ingest(rows(5), { path: '/short', compression: 'gzip' });
    // 100 records (~8 KB) under a minBytes above them; 1 record with minBytes 0.
    await http.ingest(rows(100, 5), {
      path: '/under',
      compression: { codec: 'zstd', minBytes: 100_000 },
    });
    await http.ingest(rows(1, 105), {
      path: '/zero',
      compression: { codec: 'gzip', level: 9, minBytes: 0 },
    });
    const got = shard!.received.map((r) => [r.path, r.encoding, r.raw.toString()]);
    expect(got).toEqual([
      ['/short', undefined, rows(5).map(line).join('')],
      ['/under', undefined, rows(100, 5).map(line).join('')],
      ['/zero', 'gzip', rows(1, 105).map(line).join('')],
    ]);
    expect(shard!.received[0]!.headers['content-encoding']).toBeUndefined();
  });

  it('a retry resends byte-identical bodies, compressed once (server-side hashes)', async () => {
    // The shard answers 500 to each batch's first send.
    const ids = new Set<string>();
    const [shard] = await start(1, {
      status: (_path, _n, headers) => {
        const id = String(headers['idempotency-key']);
        if (ids.has(id)) return 200;
        ids.add(id);
        return 500;
      },
    });
    const http = track(
      createHttpBalancer({
        origins: [shard!.origin],
        retry: { attempts: 3, budget: false, backoff: { baseMs: 1, maxMs: 1 } },
        health: false,
      }),
    );
    const signed: Uint8Array[] = [];
    const summary = await http.ingest(rows(1_000), {
      path: '/retried',
      compression: 'zstd',
      batch: { maxRecords: 500 },
      ordering: 'none',
      sign: ({ body }) => {
        signed.push(body!);
        return undefined;
      },
    });
    expect(summary.written).toBe(1_000);
    expect(summary.batches).toBe(4);
    const sent = shard!.received;
    expect(sent).toHaveLength(4);
    const hash = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    // Each batch: its failed send and its retry, the same bytes and the same id.
    const byKey = new Map<string, string[]>();
    for (const r of sent) {
      const key = String(r.headers['idempotency-key']);
      byKey.set(key, [...(byKey.get(key) ?? []), hash(r.wire)]);
    }
    expect(byKey.size).toBe(2);
    for (const hashes of byKey.values()) {
      expect(hashes).toHaveLength(2);
      expect(hashes[0]).toBe(hashes[1]);
    }
    // The hook saw the same bytes object on both attempts of a batch: compressed once.
    expect(new Set(signed).size).toBe(2);
    expect(summary.transit.wire).toBe(sum(sent.map((r) => r.wire.length)));
    expect(summary.transit.raw).toBe(sum(sent.map((r) => r.raw.length)));
  });

  it('per prefer tier and per transitLabel, the wire bytes equal what each shard received', async () => {
    // On the premises, a shard that answers 500 to every other request: its batches' retries
    // leave it for the cloud tier.
    const [onprem, cloud] = [
      await startDecodingServer({ status: (_p, n) => (n % 2 === 0 ? 500 : 200) }),
      await startDecodingServer(),
    ];
    servers.push(onprem!, cloud!);
    const http = track(
      createHttpBalancer({
        shards: [
          { id: 'dc1', target: onprem!.origin, labels: { site: 'onprem', region: 'eu' } },
          { id: 'aws', target: cloud!.origin, labels: { site: 'cloud', region: 'us' } },
        ],
        prefer: [{ site: 'onprem' }, { site: 'cloud' }],
        transitLabel: 'region',
        retry: { attempts: 3, budget: false, backoff: { baseMs: 1, maxMs: 1 } },
        health: false,
      }),
    );
    const summary = await http.ingest(rows(3_000), {
      path: '/tiers',
      compression: 'gzip',
      batch: { maxRecords: 300 },
    });
    expect(summary.written).toBe(3_000);
    const wire = (s: DecodingServer) => sum(s.received.map((r) => r.wire.length));
    const raw = (s: DecodingServer) => sum(s.received.map((r) => r.raw.length));
    expect(wire(onprem!)).toBeGreaterThan(0);
    expect(wire(cloud!)).toBeGreaterThan(0);
    const stats = http.stats();
    expect(stats.tiers.map((t) => t.transit.wire)).toEqual([wire(onprem!), wire(cloud!), 0]);
    expect(stats.tiers.map((t) => t.transit.raw)).toEqual([raw(onprem!), raw(cloud!), 0]);
    expect(stats.transit.region?.eu?.wire).toBe(wire(onprem!));
    expect(stats.transit.region?.us?.wire).toBe(wire(cloud!));
    expect(summary.transit.wire).toBe(wire(onprem!) + wire(cloud!));
    expect(summary.transit.received).toBe(onprem!.answered + cloud!.answered);
  });

  it('a missing zstd peer: a ConfigError naming the option and the install command, before a record is read', async () => {
    const [shard] = await start(1);
    const http = track(createHttpBalancer({ origins: [shard!.origin] }));
    const restore = replacePeerImport(async (name) => {
      throw Object.assign(new Error(`Cannot find package '${name}'`), {
        code: 'ERR_MODULE_NOT_FOUND',
      });
    });
    try {
      let read = 0;
      function* source() {
        for (const row of rows(1_000)) {
          read++;
          yield row;
        }
      }
      const error = await http
        .ingest(source(), { path: '/zstd', compression: { codec: 'zstd', level: 3 } })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe('http.ingest.compression');
      expect((error as Error).message).toContain(ZSTD_INSTALL);
      expect(read).toBe(0);
      // The write stream errors before it takes a record; those written are reported, not sent.
      const failed: Row[] = [];
      const stream = http.createWriteStream<Row>({ path: '/zstd', compression: 'zstd' });
      stream.on('failed', (row: Row) => failed.push(row));
      const streamError = await pipeline(Readable.from(rows(10)), stream).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(streamError).toBeInstanceOf(ConfigError);
      expect((streamError as ConfigError).field).toBe('http.createWriteStream.compression');
      const summary = await stream.settled;
      expect(summary.written).toBe(0);
      expect(summary.failed).toBe(failed.length);
      expect(shard!.received).toHaveLength(0);
    } finally {
      restore();
    }
  });

  it('bad compression options are ConfigErrors naming the field, before a record is read', async () => {
    const [shard] = await start(1);
    const http = track(createHttpBalancer({ origins: [shard!.origin] }));
    const cases: [unknown, string][] = [
      ['lz4', 'http.ingest.compression'],
      [{ codec: 'gzip', level: 12 }, 'http.ingest.compression.level'],
      [{ codec: 'zstd', minBytes: -1 }, 'http.ingest.compression.minBytes'],
      [{ codec: 'br', quality: 4 }, 'http.ingest.compression.quality'],
    ];
    for (const [compression, field] of cases) {
      const error = await http
        .ingest(rows(3), { path: '/x', compression: compression as never })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error, JSON.stringify(compression)).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe(field);
    }
    expect(() =>
      http.createWriteStream({ path: '/x', compression: { codec: 'gzip', level: 0 } }),
    ).toThrow(/http\.createWriteStream\.compression\.level/);
    // A content-encoding of one's own beside compression: the compressor's to say.
    await expect(
      http.ingest(rows(3), {
        path: '/x',
        compression: 'gzip',
        headers: { 'Content-Encoding': 'gzip' },
      }),
    ).rejects.toThrow(/http\.ingest\.headers\.Content-Encoding/);
    expect(shard!.received).toHaveLength(0);
  });

  it("ordering: 'key' holds with compression, through failing shards", async () => {
    // Shards that store what they decode, in arrival order, and answer 500 to one request in
    // three (after storing it every sixth time: the retry stores those records again).
    const stored: { id: number; key: string }[][] = [[], [], []];
    const handled = [0, 0, 0];
    const shards = await startServers(3, (req, res, body, server) => {
      const i = shards.indexOf(server);
      const n = handled[i]!++;
      expect(req.headers['content-encoding']).toBe('gzip');
      const fails = n % 3 === 1;
      if (!fails || n % 6 === 1) {
        for (const text of zlib.gunzipSync(body).toString().split('\n')) {
          if (text !== '') stored[i]!.push(JSON.parse(text));
        }
      }
      res.statusCode = fails ? 500 : 200;
      res.end();
    });
    plain.push(...shards);
    const http = track(
      createHttpBalancer({
        origins: shards.map((s) => s.origin),
        picker: consistentHash(),
        retry: { attempts: 10, budget: false, backoff: { baseMs: 1, maxMs: 2 } },
        health: false,
        random: seededRandom(31),
      }),
    );
    const random = seededRandom(7);
    const data = rows(600).map((row) => ({ ...row, key: `k${Math.floor(random() * 9)}` }));
    const summary = await http.ingest(data, {
      path: '/ordered',
      key: (row) => row.key,
      ordering: 'key',
      compression: { codec: 'gzip', minBytes: 0 },
      batch: { maxRecords: 7, lingerMs: 1 },
    });
    expect(summary.written).toBe(600);
    expect(summary.batches).toBeGreaterThan(600 / 7);
    // Per key, the first time each record was stored follows the source order.
    const firstArrival = new Map<string, number[]>();
    const seen = new Set<number>();
    for (const row of stored.flat()) {
      if (seen.has(row.id)) continue;
      seen.add(row.id);
      firstArrival.set(row.key, [...(firstArrival.get(row.key) ?? []), row.id]);
    }
    expect(seen.size).toBe(600);
    expect(firstArrival.size).toBe(9);
    for (const ids of firstArrival.values()) expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });
});
