/**
 * templates/workers (issue 35 item 6) cannot go stale: laid out as create-store-app lays it
 * (the _page layer, then its own files), linked to this repository's built kit, it
 * type-checks with its own tsconfig, its own suite passes (the Worker in workerd through
 * Miniflare on a local D1: install from the local platform over real sockets, the API with
 * the session token, the uninstall purge), and `npm run dev` starts the local platform and
 * the Worker and prints the admin URL. The published path (npm from a registry, wrangler's
 * bundle) is .ci/scaffold's.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { generateSecrets, renderEnv } from '../../create-app/src/secrets.js';
import { run } from '../helpers/run.js';
import { type LaidTemplate, layOutTemplate, root } from '../helpers/template.js';

let laid: LaidTemplate;
beforeAll(async () => {
  laid = await layOutTemplate('workers');
}, 120_000);
afterAll(() => laid?.remove());

it('type-checks against the kit (src/, dev/, test/)', { timeout: 120_000 }, async () => {
  const tsc = await run(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(laid.dir, 'tsconfig.json')],
    { cwd: root },
  );
  expect(tsc.status, tsc.stdout).toBe(0);
});

it('passes its own tests in workerd on D1', { timeout: 120_000 }, async () => {
  const r = await run(process.execPath, [join(root, 'node_modules/vitest/vitest.mjs'), 'run'], {
    cwd: laid.dir,
    timeout: 120_000,
    env: { ...process.env, VITEST: '', VITEST_POOL_ID: '', VITEST_WORKER_ID: '' },
  });
  expect(r.status, r.out).toBe(0);
});

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

it('`npm run dev` starts the local platform and the Worker, and prints the admin URL', {
  timeout: 90_000,
}, async () => {
  const [appPort, platformPort] = [await freePort(), await freePort()];
  // What create-store-app writes, on free ports.
  const vars = renderEnv(generateSecrets(), '.dev.vars')
    .replace('http://127.0.0.1:3000', `http://127.0.0.1:${appPort}`)
    .replace('http://127.0.0.1:4400', `http://127.0.0.1:${platformPort}`);
  writeFileSync(join(laid.dir, '.dev.vars'), vars, { mode: 0o600 });
  const child = spawn(
    process.execPath,
    [join(root, 'node_modules/tsx/dist/cli.mjs'), 'dev/dev.ts'],
    {
      cwd: laid.dir,
      env: { ...process.env, STORE_PLATFORM_DB: ':memory:' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  child.stderr.on('data', (d) => {
    out += d;
  });
  try {
    const deadline = Date.now() + 60_000;
    while (!/\/admin\/stores\//.test(out) && child.exitCode === null && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(out).toContain(`http://127.0.0.1:${platformPort}/admin/stores/`);
    const health = await fetch(`http://127.0.0.1:${appPort}/healthz`);
    expect(health.status).toBe(200);
    // The install starts against the local platform the dev loop registered the app on.
    const begin = await fetch(`http://127.0.0.1:${appPort}/auth?store_id=x`, {
      redirect: 'manual',
    });
    expect(begin.status).toBe(302);
    expect(begin.headers.get('location')).toContain(`http://127.0.0.1:${platformPort}/`);
  } finally {
    child.kill('SIGINT');
    await new Promise((r) => (child.exitCode === null ? child.once('exit', r) : r(null)));
  }
  // Ctrl-C closes the Worker and the platform: both ports are free again (tsx, which runs
  // dev.ts, reports the interrupt as 130).
  for (const port of [appPort, platformPort]) {
    const probe = createServer().listen(port, '127.0.0.1');
    await new Promise((resolve, reject) => {
      probe.once('listening', resolve);
      probe.once('error', reject);
    });
    await new Promise((resolve) => probe.close(resolve));
  }
});
