import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Two projects. `slow`: the tests that install and type-check a whole
 * generated project (about a minute of child processes each) run in their own
 * single fork, so they never hold one of the workers the socket-heavy
 * integration tests share, and a long child process cannot starve vitest's
 * worker RPC. `default`: everything else.
 */
const SLOW = [
  'test/create-app/generated-project.test.ts',
  'test/create-app/template.test.ts',
  // Type-checks the Workers template and runs its suite and dev loop in workerd (~25 s).
  'test/create-app/workers-template.test.ts',
];

const exclude = process.env['STORE_APP_LONG_TESTS']
  ? configDefaults.exclude
  : // `*.long.test.ts` (slow runs) only under `npm run test:long`.
    [...configDefaults.exclude, 'test/**/*.long.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // expect.poll's own default (1 s) is shorter than a browser round trip through the app
    // and the local platform takes on this 2-core machine under a full run; a poll that
    // succeeds returns as soon as it does, so only a failing one waits this long.
    expect: { poll: { timeout: 15_000 } },
    pool: 'forks',
    // 2-core machine: cap workers so socket-heavy integration tests do not starve each other.
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    projects: [
      {
        extends: true,
        test: {
          name: 'default',
          include: ['test/**/*.test.ts'],
          exclude: [...exclude, ...SLOW],
        },
      },
      {
        extends: true,
        test: {
          name: 'slow',
          include: SLOW,
          exclude,
          poolOptions: { forks: { singleFork: true } },
        },
      },
    ],
  },
});
