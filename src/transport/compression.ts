/**
 * Request bodies compressed off the main thread: the `compression` option read and checked once,
 * and a `Compressor` that turns a body into the bytes to send (gzip and brotli from `node:zlib`'s
 * asynchronous API, zstd from `zstd.ts`), bounded by the process's compression gate. A body is
 * compressed once; every attempt of its run sends the same `Compressed` bytes.
 */
import zlib from 'node:zlib';
import { ConfigError } from '../base/errors.js';
import { checkKnownKeys, isPlainObject } from '../base/validate.js';
import { compressionGate, type Gate } from './gate.js';
import { GzipEngines } from './gzip-engines.js';
import { loadZstd, type PeerImport, type ZstdCompress } from './zstd.js';

/** The codecs: `'gzip'` and `'br'` (brotli) from `node:zlib`, `'zstd'` (see the docs). */
export type CompressionCodec = 'gzip' | 'zstd' | 'br';

/**
 * How bodies are compressed: a codec name, or `{ codec, level?, minBytes? }`. `false` sends them
 * as they are (it turns off a default given elsewhere).
 *
 * @example
 * const options = { compression: 'zstd' };                              // level 1, from 1 KiB
 * const tuned = { compression: { codec: 'gzip', level: 6, minBytes: 4096 } };
 */
export type CompressionOption =
  | CompressionCodec
  | {
      codec: CompressionCodec;
      /** The codec's level (defaults and ranges: {@link COMPRESSION_DEFAULTS}). */
      level?: number;
      /** Bodies shorter than this, in bytes, are sent as they are (default 1024). */
      minBytes?: number;
    };

/** Each codec's default level and accepted range, and the `minBytes` default. */
export const COMPRESSION_DEFAULTS = {
  /**
   * Every default level is its codec's fastest useful one: a producer compresses each batch once
   * and is bound by CPU long before a LAN is full, and the first level already takes NDJSON
   * records to a sixth of their size or less (bench/compression.bench.ts). Raise the level for a
   * slow or metered link.
   */
  levels: {
    gzip: { default: 1, min: 1, max: 9 },
    // zstd's own default is 3; 1 is faster on ingest batches at much the same size.
    zstd: { default: 1, min: 1, max: 22 },
    // Brotli's default (11) is many times slower; 0 gives up much of its ratio for little speed.
    br: { default: 1, min: 0, max: 11 },
  },
  /** Below ~1 KiB a body fits in one packet anyway and compression costs more than it saves. */
  minBytes: 1024,
} as const;

/** The `content-encoding` (HTTP) or `ContentEncoding` (S3) each codec's bytes are sent with. */
export const CONTENT_ENCODING: Readonly<Record<CompressionCodec, string>> = {
  gzip: 'gzip',
  zstd: 'zstd',
  br: 'br',
};

/** The object-name suffix each codec's bytes are usually stored under. */
export const OBJECT_SUFFIX: Readonly<Record<CompressionCodec, string>> = {
  gzip: '.gz',
  zstd: '.zst',
  br: '.br',
};

const CODECS: readonly CompressionCodec[] = ['gzip', 'zstd', 'br'];
const BRAND = Symbol.for('shardwise.compressed');
/** Output chunks of node:zlib's asynchronous calls: fewer threadpool round trips than 16 KiB. */
const ZLIB_CHUNK = 64 * 1024;

/**
 * A body ready to send: compressed (with its `encoding`), or the body as it was when it is
 * shorter than `minBytes` (`encoding` undefined). Give it as a request's `body` (`sendTo`,
 * `request`): every attempt sends these same bytes, with `content-encoding: encoding`.
 */
export class Compressed {
  /** @internal a brand that survives two copies of the package. */
  readonly [BRAND] = true;
  /** The body before compression: its secrets are scrubbed from a shard's echo of it. */
  readonly #source: Uint8Array | string;

  constructor(
    /** The bytes to send (or the body as given, not compressed). */
    readonly body: Uint8Array | string,
    /** `gzip`, `zstd` or `br`; undefined when the body is sent as it was. */
    readonly encoding: string | undefined,
    /** The body's length before compression, bytes. */
    readonly rawBytes: number,
    source: Uint8Array | string = body,
  ) {
    this.#source = source;
  }

  /** @internal the body as it was before compression. */
  source(): Uint8Array | string {
    return this.#source;
  }

  /** The length of `body` as sent, bytes. */
  get wireBytes(): number {
    return typeof this.body === 'string' ? Buffer.byteLength(this.body) : this.body.byteLength;
  }
}

/** True for a {@link Compressed} body (from this copy of the package or another). */
export function isCompressed(value: unknown): value is Compressed {
  return typeof value === 'object' && value !== null && (value as Compressed)[BRAND] === true;
}

/**
 * Internal hooks (not part of the public API): the gate compressions wait at (default: the
 * process's, {@link compressionGate}) and how the zstd peer is imported. Tests use them to count
 * concurrent compressions and to see what a user without the peer gets.
 */
export interface CompressorInternals {
  gate?: Gate;
  importPeer?: PeerImport;
}

/**
 * Compresses bodies with one codec and level. Made by {@link createCompressor} (or
 * {@link resolveCompression} from an option); its options are checked already.
 *
 * @example
 * const gzip = createCompressor('gzip');
 * const ready = await gzip.compress(ndjson);   // once per batch
 * // every attempt: body ready.body, header content-encoding: ready.encoding (when defined)
 */
export class Compressor {
  readonly codec: CompressionCodec;
  readonly level: number;
  readonly minBytes: number;
  /** The encoding name of its output (`gzip`, `zstd`, `br`). */
  readonly encoding: string;
  /** The object-name suffix for its output (`.gz`, `.zst`, `.br`). */
  readonly suffix: string;
  readonly #field: string;
  readonly #gate: Gate;
  readonly #importPeer: PeerImport | undefined;
  #zstd: Promise<ZstdCompress> | undefined;
  /** gzip engines reused across bodies (made on the first gzip body). */
  #gzip: GzipEngines | undefined;

  constructor(
    field: string,
    codec: CompressionCodec,
    level: number,
    minBytes: number,
    internals: CompressorInternals = {},
  ) {
    this.#field = field;
    this.codec = codec;
    this.level = level;
    this.minBytes = minBytes;
    this.encoding = CONTENT_ENCODING[codec];
    this.suffix = OBJECT_SUFFIX[codec];
    this.#gate = internals.gate ?? compressionGate();
    this.#importPeer = internals.importPeer;
  }

  /**
   * Resolves when the codec can run: at once for gzip and brotli; for zstd once it is loaded, or
   * rejects with the `ConfigError` that names the install command. Call it before taking work,
   * so a missing peer fails at the start rather than at the first body.
   */
  ready(): Promise<void> {
    if (this.codec !== 'zstd') return Promise.resolve();
    return this.#zstdCodec().then(noop);
  }

  /**
   * The body to send: `bytes` compressed, or `bytes` untouched when shorter than `minBytes` (the
   * compressor's, unless given here). Runs on the libuv threadpool, at most a few at once across
   * the process (the rest wait).
   */
  compress(bytes: Uint8Array | string, minBytes = this.minBytes): Promise<Compressed> {
    const raw =
      typeof bytes === 'string'
        ? Buffer.byteLength(bytes)
        : bytes instanceof Uint8Array
          ? bytes.byteLength
          : undefined;
    if (raw === undefined) {
      return Promise.reject(
        new ConfigError(`${this.#field} (the body)`, 'must be a string or a Uint8Array', bytes),
      );
    }
    if (raw < minBytes) return Promise.resolve(new Compressed(bytes, undefined, raw));
    const input = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
    return this.#gate
      .run(() => this.#run(input))
      .then((out) => new Compressed(out, this.encoding, raw, bytes));
  }

  #run(input: Uint8Array): Promise<Uint8Array> {
    if (this.codec === 'zstd') return this.#zstdCodec().then((zstd) => zstd(input, this.level));
    if (this.codec === 'gzip') {
      // At most the gate's limit of this compressor's bodies are in flight at once.
      this.#gzip ??= new GzipEngines(this.level, this.#gate.limit);
      return this.#gzip.compress(input);
    }
    // Brotli's encoder, reused with reset(), ran many times slower here: a new one per body.
    return new Promise((resolve, reject) => {
      const chunkSize = Math.max(zlib.constants.Z_MIN_CHUNK, Math.min(ZLIB_CHUNK, input.length));
      zlib.brotliCompress(
        input,
        {
          chunkSize,
          params: {
            [zlib.constants.BROTLI_PARAM_QUALITY]: this.level,
            [zlib.constants.BROTLI_PARAM_SIZE_HINT]: input.length,
          },
        },
        (error, out) => (error === null ? resolve(out) : reject(error)),
      );
    });
  }

  #zstdCodec(): Promise<ZstdCompress> {
    this.#zstd ??= loadZstd(this.#field, this.#importPeer);
    return this.#zstd;
  }
}

/**
 * Reads a `compression` option given under `field` (`http.ingest.compression`): a
 * {@link Compressor}, or undefined for `undefined` / `false`. Throws a `ConfigError` naming the
 * field for anything else. zstd is not loaded here: see {@link Compressor.ready}.
 */
export function resolveCompression(
  field: string,
  value: unknown,
  internals?: CompressorInternals,
): Compressor | undefined {
  if (value === undefined || value === false) return undefined;
  if (typeof value === 'string') {
    const codec = codecOf(field, value);
    return new Compressor(
      field,
      codec,
      COMPRESSION_DEFAULTS.levels[codec].default,
      COMPRESSION_DEFAULTS.minBytes,
      internals,
    );
  }
  if (!isPlainObject(value) || Array.isArray(value)) {
    throw new ConfigError(
      field,
      "must be 'gzip', 'zstd', 'br', false, or { codec, level?, minBytes? }",
      value,
    );
  }
  checkKnownKeys(field, value, ['codec', 'level', 'minBytes']);
  const o = value as { codec?: unknown; level?: unknown; minBytes?: unknown };
  const codec = codecOf(`${field}.codec`, o.codec);
  const range = COMPRESSION_DEFAULTS.levels[codec];
  let level: number = range.default;
  if (o.level !== undefined) {
    if (
      typeof o.level !== 'number' ||
      !Number.isInteger(o.level) ||
      o.level < range.min ||
      o.level > range.max
    ) {
      throw new ConfigError(
        `${field}.level`,
        `must be an integer from ${range.min} to ${range.max} for ${codec}`,
        o.level,
      );
    }
    level = o.level;
  }
  let minBytes: number = COMPRESSION_DEFAULTS.minBytes;
  if (o.minBytes !== undefined) {
    if (typeof o.minBytes !== 'number' || !Number.isSafeInteger(o.minBytes) || o.minBytes < 0) {
      throw new ConfigError(
        `${field}.minBytes`,
        'must be an integer ≥ 0 (bytes; 0 compresses every body)',
        o.minBytes,
      );
    }
    minBytes = o.minBytes;
  }
  return new Compressor(field, codec, level, minBytes, internals);
}

/**
 * A compressor for `option` (`'gzip'`, `{ codec: 'zstd', level: 3 }` …), checked as the option of
 * the transports is.
 *
 * @example
 * const zstd = createCompressor({ codec: 'zstd', level: 3 });
 * await zstd.ready();                                  // the peer is there (Node 20)
 * const { body, encoding, rawBytes } = await zstd.compress(batchBytes);
 */
export function createCompressor(option: CompressionOption): Compressor {
  const compressor = resolveCompression('compression', option);
  if (compressor === undefined) {
    throw new ConfigError('compression', "must be 'gzip', 'zstd', 'br' or { codec, … }", option);
  }
  return compressor;
}

function codecOf(field: string, value: unknown): CompressionCodec {
  if (typeof value === 'string' && (CODECS as readonly string[]).includes(value)) {
    return value as CompressionCodec;
  }
  throw new ConfigError(field, "must be 'gzip', 'zstd' or 'br'", value);
}

function noop(): void {}
