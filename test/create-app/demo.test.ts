/**
 * `npm run demo` runs in its own directory, never in templates/: the .env it
 * writes (the demo app's secrets), the local platform's database and the
 * app's database all land there, so nothing a demo run leaves can be packed
 * into create-store-app or copied into a new project.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { ADMIN_STORE_URL, cleanEnv, freePort, root, run } from '../e2e/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-demo-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every file under templates/, build outputs (node_modules/, dist/) aside. */
function templateFiles(from = join(root, 'templates')): string[] {
  return readdirSync(from, { withFileTypes: true }).flatMap((e) => {
    const path = join(from, e.name);
    if (e.isDirectory())
      return e.name === 'node_modules' || e.name === 'dist' ? [] : templateFiles(path);
    return [relative(root, path)];
  });
}

it('npm run demo keeps its .env and databases out of templates/', {
  timeout: 180_000,
}, async () => {
  const before = templateFiles();
  const [appPort, platformPort] = [await freePort(), await freePort()];
  const demo = run([join(root, 'create-app/scripts/demo.js'), '--dir', dir], root, {
    ...cleanEnv(),
    // Settings in the environment win over the .env the demo writes: free ports.
    PORT: String(appPort),
    STORE_APP_URL: `http://127.0.0.1:${appPort}`,
    STORE_AUTH_URL: `http://127.0.0.1:${platformPort}`,
  });
  try {
    await demo.waitFor(ADMIN_STORE_URL, 0, 150_000);
  } finally {
    await demo.stop();
  }
  expect(existsSync(join(dir, '.env'))).toBe(true);
  expect(existsSync(join(dir, '.dev', 'platform.db'))).toBe(true);
  expect(existsSync(join(dir, 'data', 'app.db'))).toBe(true);
  expect(templateFiles().filter((f) => !before.includes(f))).toEqual([]);
  // The default directory, .demo/ at the repository root, is ignored by git.
  for (const file of ['.demo/.env', '.demo/.dev/platform.db', '.demo/data/app.db']) {
    const ignored = spawnSync('git', ['check-ignore', '-q', file], { cwd: root });
    expect(ignored.status, file).toBe(0);
  }
});
