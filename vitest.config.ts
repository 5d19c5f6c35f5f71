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
    testTimeout: 60_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
