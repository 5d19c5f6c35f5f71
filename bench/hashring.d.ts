// npm `hashring` (CommonJS, no bundled types): only what bench/hashing.bench.ts uses.
declare module 'hashring' {
  export default class HashRing {
    constructor(
      servers: string[] | Record<string, unknown>,
      algorithm?: string,
      options?: Record<string, unknown>,
    );
    get(key: string): string;
    add(servers: string | string[]): this;
  }
}
