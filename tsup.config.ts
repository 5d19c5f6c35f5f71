import { defineConfig } from 'tsup';

const entry = {
  index: 'src/index.ts',
  'testing/index': 'src/testing/index.ts',
};

// Two builds: ESM keeps dependencies external; CJS inlines ESM-only ones (see TOOLCHAIN.md trap 1).
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
  },
]);
