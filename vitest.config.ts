import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // `*.long.test.ts` (slow runs) only under `npm run test:long`.
    exclude: process.env['STORE_APP_LONG_TESTS']
      ? configDefaults.exclude
      : [...configDefaults.exclude, 'test/**/*.long.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // 2-core machine: cap workers so socket-heavy integration tests do not starve each other.
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    pool: 'forks',
  },
});
