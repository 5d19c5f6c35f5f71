import { defineConfig } from 'tsup';

const entry = {
  index: 'src/index.ts',
  'http/index': 'src/http/index.ts',
  's3/index': 'src/s3/index.ts',
  'testing/index': 'src/testing/index.ts',
  'dns/index': 'src/dns/index.ts',
  'otel/index': 'src/otel/index.ts',
  'sources/index': 'src/sources/index.ts',
};

// Library: ESM keeps dependencies external; CJS inlines ESM-only ones (TOOLCHAIN.md trap 1).
// The command line (`bin`) is one ESM file without chunks, so it can fork itself for the demo.
export default defineConfig([
  {
    entry,
    format: ['esm'],
    dts: true,
    sourcemap: true,
    clean: false,
    target: 'node20',
    splitting: true,
  },
  {
    entry,
    format: ['cjs'],
    dts: true,
    sourcemap: true,
    clean: false,
    target: 'node20',
    // One module per chunk: `require('shardwise/http').Balancer === require('shardwise').Balancer`.
    splitting: true,
  },
  {
    entry: { 'cli/main': 'src/cli/main.ts' },
    format: ['esm'],
    sourcemap: true,
    clean: false,
    target: 'node20',
    splitting: false,
  },
]);
