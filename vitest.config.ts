import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = fileURLToPath(new URL('./src/', import.meta.url));

export default defineConfig({
  // Examples import the package by name, as users do; in tests that name means the sources.
  resolve: {
    alias: [
      { find: /^shardwise$/, replacement: `${src}index.ts` },
      { find: /^shardwise\/(http|s3|testing|dns|otel|sources)$/, replacement: `${src}$1/index.ts` },
    ],
  },
  test: {
    include: ['test/**/*.test.ts', 'examples/**/*.test.ts'],
    // The AWS SDK's notice that its releases after January 2027 need Node 22: true, and noise in a
    // test run (and in the example processes the tests start, which inherit it), where it reads
    // like a failure. The tests pin the last SDK that runs on Node 20.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    testTimeout: 60_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
