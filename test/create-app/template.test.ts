/**
 * The template cannot go stale: it is linked to this repository's built kit
 * (as `npm run demo` does) and type-checked with its own tsconfig, tests
 * included.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { SERVERS } from '../helpers/databases.js';
import { run } from '../helpers/run.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

it('templates/express type-checks against the kit', { timeout: 120_000 }, async () => {
  const prep = await run(
    process.execPath,
    [join(root, 'create-app/scripts/demo.js'), '--prepare-only'],
    {
      cwd: root,
    },
  );
  expect(prep.status, `${prep.stdout}\n${prep.stderr}`).toBe(0);
  const tsc = await run(
    process.execPath,
    [
      join(root, 'node_modules/typescript/bin/tsc'),
      '-p',
      join(root, 'templates/express/tsconfig.json'),
    ],
    { cwd: root },
  );
  expect(tsc.status, tsc.stdout).toBe(0);
});

/** The template's own suite (install, routes, uninstall purge) on each database. */
function runTemplateTests(env: NodeJS.ProcessEnv) {
  return run(process.execPath, [join(root, 'node_modules/vitest/vitest.mjs'), 'run'], {
    cwd: join(root, 'templates/express'),
    timeout: 120_000,
    env: { ...process.env, VITEST: '', VITEST_POOL_ID: '', VITEST_WORKER_ID: '', ...env },
  });
}

it('templates/express passes its tests on SQLite', { timeout: 120_000 }, async () => {
  const r = await runTemplateTests({});
  expect(r.status, r.out).toBe(0);
});

for (const server of SERVERS) {
  it(`templates/express passes its tests on ${server.label} (one DATABASE_URL change)`, {
    timeout: 120_000,
  }, async () => {
    const db = await server.create('sak_tpl');
    try {
      const r = await runTemplateTests({ TEST_DATABASE_URL: db.url });
      expect(r.status, r.out).toBe(0);
    } finally {
      await db.drop();
    }
  });
}
