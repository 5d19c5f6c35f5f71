/**
 * Types for the undici modules `shardwise/http` loads. undici's package entry installs an
 * undici 7 agent as Node's global fetch dispatcher on import (TOOLCHAIN trap 4), which breaks
 * Node 20's built-in `fetch` for the whole process; these modules alone do not.
 */
declare module 'undici/lib/dispatcher/pool.js' {
  import type { Pool } from 'undici';

  const PoolClass: typeof Pool;
  export default PoolClass;
}

declare module 'undici/lib/dispatcher/client.js' {
  import type { Client } from 'undici';

  const ClientClass: typeof Client;
  export default ClientClass;
}

declare module 'undici/lib/core/connect.js' {
  import type { buildConnector } from 'undici';

  /** undici's socket connector (net/tls connect, TCP keep-alive and no-delay, connect timeout). */
  const build: typeof buildConnector;
  export default build;
}

declare module 'undici/lib/core/util.js' {
  /** undici's response header parser: lower-cased names, repeated headers as arrays. */
  const util: {
    parseHeaders(rawHeaders: Buffer[]): Record<string, string | string[]>;
  };
  export default util;
}
