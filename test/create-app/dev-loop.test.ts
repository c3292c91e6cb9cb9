/**
 * Issue 32 items 5, 8 and 9, the dev loop as a developer meets it, over real
 * child processes: `npm run dev` (the template's own script, run by npm) and
 * `npm run demo` with the app's or the platform's port held by another
 * process (a net.Server here) print one line naming the port, the setting and
 * the fix, exit non-zero, print no admin URL and leave no watcher running; a
 * start that works says the redirect URI is registered (checked by starting
 * an install against the app); an app that does not answer at STORE_APP_URL
 * is named at start; start-up errors are the code and message on one line.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { POSTGRES_ADMIN_URL } from '../helpers/postgres.js';
import { type LaidTemplate, layOutTemplate, root } from '../helpers/template.js';

/** The test server's URL naming a database that does not exist. */
function missingDatabase(): string {
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = '/sak_dev_loop_no_such_db';
  return url.href;
}

const ADMIN_URL = /\/admin\/stores\/[0-9a-f-]{36}/;
const SCOPES = 'read_products,read_orders,read_inventory,write_inventory,read_store_settings';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Another process's server on `port` (all interfaces, as a forgotten dev server would). */
async function hold(port: number): Promise<Server> {
  const s = createServer();
  await new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    s.listen(port, () => resolve());
  });
  return s;
}
const release = (s: Server) => new Promise<void>((r) => s.close(() => r()));

/** The settings create-store-app writes into `.env`, on the given ports. */
function settings(appPort: number, platformPort: number): Record<string, string> {
  return {
    PORT: String(appPort),
    STORE_APP_URL: `http://127.0.0.1:${appPort}`,
    STORE_AUTH_URL: `http://127.0.0.1:${platformPort}`,
    STORE_APP_CLIENT_ID: `app_${randomBytes(8).toString('hex')}`,
    STORE_APP_CLIENT_SECRET: randomBytes(32).toString('base64url'),
    STORE_APP_WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
    STORE_APP_SCOPES: SCOPES,
    STORE_APP_ENCRYPTION_KEYS: generateKey(),
    STORE_APP_SESSION_SECRET: randomBytes(32).toString('base64url'),
    DATABASE_URL: './data/app.db',
    STORE_PLATFORM_DB: ':memory:',
  };
}

function writeEnv(dir: string, values: Record<string, string>): void {
  writeFileSync(
    join(dir, '.env'),
    `${Object.entries(values)
      .map(([k, v]) => `${k}=${v}`)
      .join('\n')}\n`,
  );
}

/** The parent's environment without the settings that must come from `.env`. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'development' };
  for (const k of Object.keys(env)) {
    if (k.startsWith('STORE_') || k === 'DATABASE_URL' || k === 'PORT' || k.startsWith('npm_'))
      delete env[k];
  }
  return env;
}

interface Started {
  child: ChildProcess;
  output(): string;
  stderr(): string;
  /** The exit code, or 'running' when it did not exit within `ms` (then its group is killed). */
  exit(ms: number): Promise<number | 'running'>;
  /** Resolves when `re` shows in the output; rejects on exit or after `ms`. */
  waitFor(re: RegExp, ms: number): Promise<void>;
  stop(): Promise<void>;
}

/** A command in its own process group, so everything it started can be stopped. */
function start(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Started {
  const child = spawn(cmd, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (b: Buffer) => {
    out += b;
  });
  child.stderr!.on('data', (b: Buffer) => {
    out += b;
    err += b;
  });
  const exited = new Promise<number>((r) => child.once('exit', (code) => r(code ?? 128)));
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // Already gone.
    }
  };
  return {
    child,
    output: () => out,
    stderr: () => err,
    async exit(ms) {
      const timer = new Promise<'running'>((r) => setTimeout(() => r('running'), ms).unref());
      const result = await Promise.race([exited, timer]);
      if (result === 'running') killGroup('SIGKILL');
      return result;
    },
    async waitFor(re, ms) {
      const deadline = Date.now() + ms;
      while (!re.test(out)) {
        if (child.exitCode !== null) throw new Error(`exited before ${re}:\n${out}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${re}:\n${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        killGroup('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000).unref())]);
        killGroup('SIGKILL');
      }
    },
  };
}

/** No process of the group is left (tsx watch included) within `ms` of the command's exit. */
async function groupGone(pid: number, ms = 10_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      process.kill(-pid, 0);
    } catch {
      return true;
    }
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const laid: Partial<Record<'express' | 'hono', LaidTemplate>> = {};
const work = mkdtempSync(join(tmpdir(), 'sak-dev-loop-'));
const started: Started[] = [];
beforeAll(async () => {
  laid.express = await layOutTemplate('express');
  laid.hono = await layOutTemplate('hono');
}, 180_000);
afterAll(async () => {
  for (const s of started) await s.stop();
  laid.express?.remove();
  laid.hono?.remove();
  rmSync(work, { recursive: true, force: true });
});

/** `npm run dev` in the laid-out project, as a developer types it. */
function npmRunDev(dir: string): Started {
  const s = start('npm', ['run', 'dev'], dir, cleanEnv());
  started.push(s);
  return s;
}

describe.each(['express', 'hono'] as const)('npm run dev (%s template)', (template) => {
  it.each([
    { which: 'app', setting: 'PORT', fix: /set PORT and the port of STORE_APP_URL in \.env/ },
    {
      which: 'platform',
      setting: 'STORE_AUTH_URL',
      fix: /set STORE_AUTH_URL in \.env to a free port/,
    },
  ] as const)(
    'with the $which port taken: one line naming it, $setting and the fix; exit 1; no URL, no watcher',
    { timeout: 90_000 },
    async ({ which, setting, fix }) => {
      const dir = laid[template]!.dir;
      const [appPort, platformPort] = [await freePort(), await freePort()];
      writeEnv(dir, settings(appPort, platformPort));
      const taken = which === 'app' ? appPort : platformPort;
      const busy = await hold(taken);
      try {
        const dev = npmRunDev(dir);
        const code = await dev.exit(60_000);
        expect(code, dev.output()).toBe(1);
        expect(await groupGone(dev.child.pid!)).toBe(true);
        expect(dev.output()).not.toMatch(ADMIN_URL);
        const lines = dev.stderr().trim().split('\n');
        expect(lines, dev.stderr()).toHaveLength(1);
        expect(lines[0]).toContain(`Port ${taken} on 127.0.0.1`);
        expect(lines[0]).toContain(`from ${setting}`);
        expect(lines[0]).toMatch(/is already in use/);
        expect(lines[0]).toMatch(fix);
      } finally {
        await release(busy);
      }
    },
  );

  it('with the ports free: says the redirect URI is registered, prints the admin URL, logs readable lines with codes', {
    timeout: 90_000,
  }, async () => {
    const [appPort, platformPort] = [await freePort(), await freePort()];
    const env = {
      ...cleanEnv(),
      ...settings(appPort, platformPort),
      DATABASE_URL: join(work, `${template}-app.db`),
      LOG_LEVEL: 'warn',
    };
    const dev = start(process.execPath, [join(laid[template]!.dist, 'dev.js')], work, env);
    started.push(dev);
    await dev.waitFor(ADMIN_URL, 60_000);
    expect(dev.output()).toContain(
      `Redirect URI http://127.0.0.1:${appPort}/auth/callback is registered on the local platform (checked by starting an install).`,
    );
    // Item 10: the kit's logs as readable lines, not JSON, with the refusal's code shown.
    await fetch(`http://127.0.0.1:${appPort}/?launch=not-a-launch-token`, {
      headers: { accept: 'text/html', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'iframe' },
    });
    await dev.waitFor(
      /^\[\d\d:\d\d:\d\d\] WARN: Launch token refused\. .*"errorCode":"[A-Z_]+"/m,
      10_000,
    );
    expect(dev.output()).not.toContain('"level":');
    expect(dev.output()).not.toContain('[redacted]');
    await dev.stop();
  });
});

describe('npm run dev: the app does not answer at STORE_APP_URL', () => {
  it('PORT and STORE_APP_URL disagree: one line naming STORE_APP_URL, exit 1, no admin URL', {
    timeout: 90_000,
  }, async () => {
    const [appPort, urlPort, platformPort] = [await freePort(), await freePort(), await freePort()];
    const env = {
      ...cleanEnv(),
      ...settings(appPort, platformPort),
      STORE_APP_URL: `http://127.0.0.1:${urlPort}`,
    };
    const dev = start(process.execPath, [join(laid.express!.dist, 'dev.js')], work, env);
    started.push(dev);
    expect(await dev.exit(60_000), dev.output()).toBe(1);
    expect(dev.output()).not.toMatch(ADMIN_URL);
    const lines = dev.stderr().trim().split('\n');
    expect(lines, dev.stderr()).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^Nothing answers at STORE_APP_URL \\(http://127\\.0\\.0\\.1:${urlPort}: ECONNREFUSED\\)`,
      ),
    );
    expect(lines[0]).toContain('PORT');
  });
});

describe('npm run demo', () => {
  it.each([
    { which: 'platform', setting: 'STORE_AUTH_URL' },
    { which: 'app', setting: 'PORT' },
  ] as const)(
    'with the $which port taken: the same line, exit 1, no admin URL',
    { timeout: 180_000 },
    async ({ which, setting }) => {
      const [appPort, platformPort] = [await freePort(), await freePort()];
      const taken = which === 'app' ? appPort : platformPort;
      const busy = await hold(taken);
      const dir = mkdtempSync(join(root, 'test-artifacts', 'demo-'));
      try {
        const demo = start(
          process.execPath,
          [join(root, 'create-app/scripts/demo.js'), '--dir', dir],
          root,
          {
            ...cleanEnv(),
            PORT: String(appPort),
            STORE_APP_URL: `http://127.0.0.1:${appPort}`,
            STORE_AUTH_URL: `http://127.0.0.1:${platformPort}`,
          },
        );
        started.push(demo);
        expect(await demo.exit(150_000), demo.output()).toBe(1);
        expect(demo.output()).not.toMatch(ADMIN_URL);
        const lines = demo.stderr().trim().split('\n');
        expect(lines, demo.stderr()).toHaveLength(1);
        expect(lines[0]).toMatch(
          new RegExp(
            `^Port ${taken} on 127\\.0\\.0\\.1 \\(.+, from ${setting}\\) is already in use`,
          ),
        );
      } finally {
        await release(busy);
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});

describe('start-up errors: the code and message, one line', () => {
  const noStack = (text: string) => {
    expect(text).not.toMatch(/^\s+at /m);
    expect(text).not.toMatch(/^\s*\^+\s*$/m);
    expect(text).not.toContain('file://');
  };

  it.each(['server.js', 'dev.js', 'migrate.js'])(
    '%s with a setting missing names it',
    { timeout: 60_000 },
    async (entry) => {
      const [appPort, platformPort] = [await freePort(), await freePort()];
      const env: NodeJS.ProcessEnv = { ...cleanEnv(), ...settings(appPort, platformPort) };
      delete env['STORE_APP_SCOPES'];
      const run = start(process.execPath, [join(laid.express!.dist, entry)], work, env);
      started.push(run);
      expect(await run.exit(45_000), run.output()).toBe(1);
      const lines = run.stderr().trim().split('\n');
      expect(lines, run.stderr()).toHaveLength(1);
      expect(lines[0]).toMatch(/^CONFIG_INVALID: STORE_APP_SCOPES/);
      noStack(run.stderr());
    },
  );

  it('npm start on a database that does not exist: the driver’s words and the fix, one line', {
    timeout: 60_000,
  }, async () => {
    const env: NodeJS.ProcessEnv = {
      ...cleanEnv(),
      ...settings(await freePort(), await freePort()),
      DATABASE_URL: missingDatabase(),
    };
    const run = start(process.execPath, [join(laid.express!.dist, 'server.js')], work, env);
    started.push(run);
    expect(await run.exit(45_000), run.output()).toBe(1);
    const lines = run.stderr().trim().split('\n');
    expect(lines, run.stderr()).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^STORAGE_UNAVAILABLE: connecting to Postgres failed \(3D000: database "sak_dev_loop_no_such_db" does not exist\); .*create it/,
    );
    noStack(run.stderr());
  });
});
