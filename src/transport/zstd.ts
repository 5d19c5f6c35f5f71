/**
 * Where zstd comes from: `node:zlib` where it has it (Node ≥ 22.15, 23.8), else the optional peer
 * `@mongodb-js/zstd` 1.2.2 — whose binaries are npm packages and whose calls run on the libuv
 * threadpool (its 7.x line downloads a binary at install, which fails where only a package
 * registry is reachable). The peer is imported only when a compressor asks for zstd, once.
 */
import zlib from 'node:zlib';
import { ConfigError } from '../base/errors.js';

/** Compresses `bytes` at `level` off the main thread. */
export type ZstdCompress = (bytes: Uint8Array, level: number) => Promise<Uint8Array>;

/** The peer's name and the version this package is tested with. */
export const ZSTD_PEER = '@mongodb-js/zstd';
export const ZSTD_PEER_VERSION = '1.2.2';
/** What a user runs when the peer is missing. */
export const ZSTD_INSTALL = `npm i -E ${ZSTD_PEER}@${ZSTD_PEER_VERSION}`;

/**
 * How the peer is found: a dynamic import by default. Internal: tests pass one that fails, to
 * see the error a user without the peer gets (see {@link CompressorInternals}).
 */
export type PeerImport = (name: string) => Promise<unknown>;

const importPeer: PeerImport = (name) => import(name);
/** How a compressor that was given no import function imports the peer (see below). */
let defaultImport: PeerImport = importPeer;

/**
 * Internal, for tests: makes `load` how the peer is imported by compressors given no import
 * function of their own (those of `http.ingest` and `s3.ingest` are built from options, which
 * carry none) — to see, end to end, what a user without the peer gets. Returns the means to put
 * the default back.
 */
export function replacePeerImport(load: PeerImport): () => void {
  defaultImport = load;
  return () => {
    defaultImport = importPeer;
  };
}

type ZlibWithZstd = typeof zlib & {
  zstdCompress?: (
    bytes: Uint8Array,
    options: { params: Record<number, number> },
    callback: (error: Error | null, result: Buffer) => void,
  ) => void;
  constants: typeof zlib.constants & { ZSTD_c_compressionLevel?: number };
};

/** `node:zlib`'s own zstd, where this Node has it. */
export function nativeZstd(z: ZlibWithZstd = zlib as ZlibWithZstd): ZstdCompress | undefined {
  const compress = z.zstdCompress;
  const levelParam = z.constants.ZSTD_c_compressionLevel;
  if (typeof compress !== 'function' || levelParam === undefined) return undefined;
  return (bytes, level) =>
    new Promise((resolve, reject) => {
      compress(bytes, { params: { [levelParam]: level } }, (error, result) =>
        error === null ? resolve(result) : reject(error),
      );
    });
}

/** The peer, loaded once per import function (a failure is remembered too: it will not change). */
const loaded = new WeakMap<PeerImport, Promise<ZstdCompress>>();

/**
 * zstd for a compressor configured under `field`: `node:zlib`'s, or the peer's. Rejects with a
 * `ConfigError` naming the install command when neither is there.
 */
export function loadZstd(field: string, load: PeerImport = defaultImport): Promise<ZstdCompress> {
  const native = nativeZstd();
  if (native !== undefined) return Promise.resolve(native);
  let promise = loaded.get(load);
  if (promise === undefined) {
    promise = fromPeer(load);
    loaded.set(load, promise);
  }
  return promise.catch((error: unknown) => {
    throw missingZstd(field, error);
  });
}

type PeerCompress = (bytes: Buffer, level: number) => Promise<Buffer>;

/**
 * The peer's `compress`. 1.2.2's `index.js` drops the level it is given (its native binding,
 * `bindings.js`, takes it, and compresses at 3 without it): the binding is used where it is
 * there, the main module otherwise.
 */
async function fromPeer(load: PeerImport): Promise<ZstdCompress> {
  let compress: PeerCompress | undefined;
  try {
    compress = compressOf(await load(`${ZSTD_PEER}/bindings.js`));
  } catch {
    // Not this layout: the main module.
  }
  compress ??= compressOf(await load(ZSTD_PEER));
  if (compress === undefined) throw new Error(`${ZSTD_PEER} has no compress() function`);
  const peer = compress;
  return (bytes, level) =>
    peer(
      Buffer.isBuffer(bytes)
        ? bytes
        : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
      level,
    ).catch((error: unknown) => {
      // The binding's errors carry no stack.
      throw new Error(`zstd: ${error instanceof Error ? error.message : String(error)}`);
    });
}

/** `compress` of a module as ESM sees it: named (CommonJS exports found) or only `default`. */
function compressOf(mod: unknown): PeerCompress | undefined {
  const m = mod as { compress?: unknown; default?: { compress?: unknown } } | undefined;
  const compress = typeof m?.compress === 'function' ? m.compress : m?.default?.compress;
  return typeof compress === 'function' ? (compress as PeerCompress) : undefined;
}

function missingZstd(field: string, cause: unknown): ConfigError {
  const error = new ConfigError(
    field,
    `asks for zstd, which node:zlib lacks before Node 22.15 (this is ${process.version}): install the optional peer with \`${ZSTD_INSTALL}\`, or choose 'gzip' or 'br'`,
    'zstd',
  );
  (error as { cause?: unknown }).cause = cause instanceof Error ? cause.message : String(cause);
  return error;
}
