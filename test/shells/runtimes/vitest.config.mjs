// vitest inside Bun or Deno for ./sqlite-suite.test.mjs (see there). Threads:
// the workers are the runtime's own, not Node processes.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: import.meta.dirname,
    include: ['sqlite-suite.test.mjs'],
    pool: 'threads',
    poolOptions: { threads: { singleThread: true } },
    testTimeout: 30_000,
  },
});
