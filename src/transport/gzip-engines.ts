/**
 * gzip engines kept for reuse. `zlib.gzip()` builds a new stream and a new deflate state for
 * every body — deflate's initialisation allocates and clears a few hundred KB on the main thread —
 * which cost 77–93 µs of main-thread CPU per 50 KB ingest batch here, against 30–40 µs for an
 * engine reused with `reset()` (and less threadpool time too). An engine's default flush is
 * `Z_FINISH`, so each write is one whole gzip member, read back from its `'data'` events; then
 * `reset()` readies it for the next body. Each engine compresses one body at a time; idle ones
 * wait for the next body (at most `keep` of them: the compressions the gate lets run at once).
 */
import zlib from 'node:zlib';

/** Output chunks: fewer threadpool round trips than node:zlib's 16 KiB default. */
const CHUNK = 64 * 1024;

/**
 * A pool of gzip engines at one level.
 *
 * @example
 * const engines = new GzipEngines(1, 3);
 * const gz = await engines.compress(body); // a whole gzip member, off the main thread
 */
export class GzipEngines {
  readonly #idle: Engine[] = [];

  constructor(
    readonly level: number,
    /** Idle engines kept at most (more are closed as they finish). */
    readonly keep: number,
  ) {}

  /** `input` as one gzip member, compressed on the threadpool. */
  compress(input: Uint8Array): Promise<Buffer> {
    const engine = this.#idle.pop() ?? new Engine(this.level);
    return engine.run(input).then(
      (out) => {
        if (this.#idle.length < this.keep) this.#idle.push(engine);
        else engine.close();
        return out;
      },
      (error: unknown) => {
        engine.close();
        throw error;
      },
    );
  }
}

/** One deflate state and the stream around it, one body at a time. */
class Engine {
  /** `reset()` is documented ("zlib.reset()") but missing from @types/node's Gzip. */
  readonly #gzip: zlib.Gzip & { reset(): void };
  #chunks: Buffer[] = [];
  #size = 0;

  constructor(level: number) {
    this.#gzip = zlib.createGzip({
      level,
      chunkSize: CHUNK,
      flush: zlib.constants.Z_FINISH,
    }) as zlib.Gzip & { reset(): void };
    this.#gzip.on('data', (chunk: Buffer) => {
      this.#chunks.push(chunk);
      this.#size += chunk.length;
    });
    // The write's callback gets the error; this keeps it from being an unhandled 'error' event.
    this.#gzip.on('error', noop);
  }

  run(input: Uint8Array): Promise<Buffer> {
    this.#chunks = [];
    this.#size = 0;
    return new Promise((resolve, reject) => {
      this.#gzip.write(input, (error) => {
        if (error) {
          reject(error);
          return;
        }
        // A copy: the chunks are views of the engine's 64 KiB output buffer, which later bodies
        // fill (a body kept for a retry would otherwise hold the whole buffer).
        const out = Buffer.concat(this.#chunks, this.#size);
        this.#chunks = [];
        this.#gzip.reset();
        resolve(out);
      });
    });
  }

  close(): void {
    this.#gzip.close();
  }
}

function noop(): void {}
