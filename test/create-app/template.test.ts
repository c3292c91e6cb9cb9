/**
 * The templates cannot go stale: each is laid out as create-store-app lays it
 * (shared layer, then its own files), linked to this repository's built kit
 * and type-checked with its own tsconfig, tests included; its own suite runs
 * on every database, and its compiled server is started the way `npm start`
 * starts it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { SERVERS } from '../helpers/databases.js';
import { run } from '../helpers/run.js';
import { type LaidTemplate, layOutTemplate, root, type TemplateName } from '../helpers/template.js';

const laid: Partial<Record<TemplateName, LaidTemplate>> = {};
beforeAll(async () => {
  laid.express = await layOutTemplate('express');
  laid.hono = await layOutTemplate('hono', { compile: false });
  // Built: its suite serves Vite's build of the UI, as `npm run build && npm test` does.
  laid.react = await layOutTemplate('react');
}, 240_000);
afterAll(() => {
  laid.express?.remove();
  laid.hono?.remove();
  laid.react?.remove();
});

it('templates/express type-checks against the kit', { timeout: 120_000 }, async () => {
  const tsc = await run(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(laid.express!.dir, 'tsconfig.json')],
    { cwd: root },
  );
  expect(tsc.status, tsc.stdout).toBe(0);
});

/** The template's own suite (install, routes, uninstall purge) on each database. */
function runTemplateTests(env: NodeJS.ProcessEnv, name: TemplateName = 'express') {
  return run(process.execPath, [join(root, 'node_modules/vitest/vitest.mjs'), 'run'], {
    cwd: laid[name]!.dir,
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

describe('templates/express on a port already in use', () => {
  let busy: Server;
  let port: number;
  const dir = mkdtempSync(join(tmpdir(), 'sak-template-port-'));
  beforeAll(async () => {
    busy = createServer();
    // The wildcard address, as the app's app.listen(PORT) binds: a sure conflict.
    await new Promise<void>((r) => busy.listen(0, r));
    port = (busy.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise<void>((r) => busy.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('`npm start` prints one line naming the port and PORT, and exits 1', {
    timeout: 60_000,
  }, async () => {
    // A valid configuration, so the only mistake is the port (no .env: the variables are set).
    const env: NodeJS.ProcessEnv = {
      PATH: process.env['PATH'],
      HOME: dir,
      NODE_ENV: 'production',
      PORT: String(port),
      STORE_APP_URL: `http://127.0.0.1:${port}`,
      STORE_AUTH_URL: 'http://127.0.0.1:9',
      STORE_APP_CLIENT_ID: 'app_port_test',
      STORE_APP_CLIENT_SECRET: randomBytes(24).toString('base64url'),
      STORE_APP_WEBHOOK_SECRET: `whsec_${randomBytes(24).toString('base64')}`,
      STORE_APP_SCOPES: 'read_products,write_products',
      STORE_APP_ENCRYPTION_KEYS: generateKey(),
      STORE_APP_SESSION_SECRET: randomBytes(32).toString('base64url'),
      DATABASE_URL: `file:${join(dir, 'app.db')}`,
    };
    const r = await run(process.execPath, [join(laid.express!.dist, 'server.js')], {
      cwd: dir,
      env,
      timeout: 45_000,
    });
    expect(r.status, r.out).toBe(1);
    expect(r.stdout).not.toContain('listening');
    const lines = r.stderr.trim().split('\n');
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toBe(
      `Port ${port} is already in use; set PORT to a free port (in .env or the environment) and start again.`,
    );
  });
});

describe('templates/hono', () => {
  it('type-checks against the kit', { timeout: 120_000 }, async () => {
    const tsc = await run(
      process.execPath,
      [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(laid.hono!.dir, 'tsconfig.json')],
      { cwd: root },
    );
    expect(tsc.status, tsc.stdout).toBe(0);
  });

  it('passes its tests on SQLite', { timeout: 120_000 }, async () => {
    const r = await runTemplateTests({}, 'hono');
    expect(r.status, r.out).toBe(0);
  });

  for (const server of SERVERS) {
    it(`passes its tests on ${server.label} (one DATABASE_URL change)`, {
      timeout: 120_000,
    }, async () => {
      const db = await server.create('sak_tplh');
      try {
        const r = await runTemplateTests({ TEST_DATABASE_URL: db.url }, 'hono');
        expect(r.status, r.out).toBe(0);
      } finally {
        await db.drop();
      }
    });
  }
});

describe('templates/react', () => {
  it('type-checks against the kit, its server and its UI', { timeout: 120_000 }, async () => {
    for (const config of ['tsconfig.json', 'tsconfig.web.json']) {
      const tsc = await run(
        process.execPath,
        [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(laid.react!.dir, config)],
        { cwd: root },
      );
      expect(tsc.status, `${config}\n${tsc.stdout}`).toBe(0);
    }
  });

  it('passes its tests on SQLite', { timeout: 120_000 }, async () => {
    const r = await runTemplateTests({}, 'react');
    expect(r.status, r.out).toBe(0);
  });

  it('`npm start` without a built UI says so in one line and exits 1', {
    timeout: 60_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sak-react-unbuilt-'));
    const ui = join(laid.react!.dist, 'client');
    renameSync(ui, `${ui}.away`);
    try {
      const r = await run(process.execPath, [join(laid.react!.dist, 'server.js')], {
        cwd: dir,
        env: { PATH: process.env['PATH'], HOME: dir },
        timeout: 45_000,
      });
      expect(r.status, r.out).toBe(1);
      expect(r.stderr.trim().split('\n')).toEqual([
        expect.stringMatching(
          /^The UI is not built \(.*index\.html is missing\): run `npm run build`\.$/,
        ),
      ]);
    } finally {
      renameSync(`${ui}.away`, ui);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
