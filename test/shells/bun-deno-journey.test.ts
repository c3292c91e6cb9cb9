/**
 * The kit on Bun.serve and Deno.serve, each the real runtime from the npm
 * registry (test/runtimes, installed by test/runtimes/install.js), serving the
 * built package (dist/) over real sockets against the local platform running
 * in this process: install (begin → consent → callback through kit.fetch), an
 * API call with a bearer app session token through kit.authenticate, a forced
 * refresh, the app.uninstalled webhook and its purge. On the real Postgres and
 * on SQLite through each runtime's own driver (bun:sqlite, Deno's
 * node:sqlite: docs/runtimes.md), whose storage conformance suite also runs
 * inside the runtime.
 * Under CI=true a missing runtime fails the test; it never skips.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { INSTALL_ERROR_CODES as E } from '../../src/install/errors.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { sign } from '../../src/webhooks/verify.js';
import { createTempDatabase } from '../helpers/postgres.js';
import { Browser } from '../install/harness.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const runtimesDir = join(root, 'test/runtimes/node_modules');
const RUNTIMES = {
  bun: { bin: join(runtimesDir, '@oven/bun-linux-x64/bin/bun'), args: [] as string[] },
  // The permissions docs/runtimes.md names, no more.
  deno: {
    bin: join(runtimesDir, '@deno/linux-x64-glibc/deno'),
    args: ['run', '--allow-net', '--allow-env', '--allow-read', '--allow-sys=hostname'],
  },
};
const script = join(root, 'test/shells/runtimes/journey-server.mjs');

beforeAll(() => {
  if (!existsSync(join(root, 'dist/index.js'))) {
    throw new Error('dist/ is missing: run `npm run build` before this test.');
  }
  const missing = Object.values(RUNTIMES).some((r) => !existsSync(r.bin));
  if (!missing) return;
  // CI installs them in .ci/run: missing there is a broken CI, never a skip.
  if (process.env['CI'] === 'true') {
    throw new Error(
      'Bun or Deno is missing under CI: .ci/run must run `node test/runtimes/install.js`.',
    );
  }
  const r = spawnSync(process.execPath, [join(root, 'test/runtimes/install.js')], {
    stdio: 'inherit',
  });
  if (r.status !== 0) throw new Error('`node test/runtimes/install.js` failed: see its output.');
}, 120_000);

interface RuntimeApp {
  child: ChildProcess;
  appUrl: string;
  /** What the runtime wrote to stderr: the kit's pino logs (JSON lines). */
  output: () => string;
}

/** Spawns the runtime with the journey server and hands it the kit's options; returns its answer. */
async function handshake(
  name: keyof typeof RUNTIMES,
  configure: (appUrl: string) => Record<string, unknown>,
  extraArgs: string[] = [],
): Promise<RuntimeApp & { reply: Record<string, unknown> }> {
  const { bin, args } = RUNTIMES[name];
  const child = spawn(bin, [...args, ...extraArgs, script], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1' },
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => {
    stderr += c;
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async (): Promise<Record<string, unknown>> => {
    const line = await lines.next();
    if (line.done) throw new Error(`${name} exited before the handshake:\n${stderr}`);
    return JSON.parse(line.value) as Record<string, unknown>;
  };
  const { port } = (await next()) as { port: number };
  const appUrl = `http://127.0.0.1:${port}`;
  child.stdin!.write(`${JSON.stringify(configure(appUrl))}\n`);
  return { child, appUrl, output: () => stderr, reply: await next() };
}

/** The runtime serving the kit; throws when the kit did not start. */
async function startRuntime(
  name: keyof typeof RUNTIMES,
  configure: (appUrl: string) => Record<string, unknown>,
  extraArgs: string[] = [],
): Promise<RuntimeApp> {
  const app = await handshake(name, configure, extraArgs);
  if (!app.reply['ready']) {
    await stopRuntime(app);
    throw new Error(`${name}: the kit did not start: ${JSON.stringify(app.reply)}`);
  }
  return app;
}

async function stopRuntime(app: RuntimeApp | undefined): Promise<void> {
  if (!app || app.child.exitCode !== null) return;
  const exited = new Promise((resolve) => app.child.once('exit', resolve));
  app.child.stdin!.end();
  const timer = setTimeout(() => app.child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Where the runtime's kit keeps its data: a fresh database, its URL, what Deno must be allowed. */
async function database(
  name: keyof typeof RUNTIMES,
  kind: 'Postgres' | 'SQLite',
): Promise<{ url: string; denoArgs: string[]; drop: () => Promise<void> }> {
  if (kind === 'Postgres') {
    const pg = await createTempDatabase(`sak_${name}`);
    return { url: pg.url, denoArgs: [], drop: () => pg.drop() };
  }
  // The runtime's own SQLite driver (bun:sqlite, node:sqlite) on a file.
  const dir = mkdtempSync(join(tmpdir(), `sak-${name}-sqlite-`));
  return {
    url: `file:${join(dir, 'data', 'app.db')}`,
    // Deno opens the file only with write access to its folder (docs/runtimes.md).
    denoArgs: [`--allow-write=${dir}`],
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

describe.each([
  ['bun', 'Postgres'],
  ['deno', 'Postgres'],
  ['bun', 'SQLite'],
  ['deno', 'SQLite'],
] as const)('%s (%s)', (name, kind) => {
  let platform: Platform;
  let app: RuntimeApp;
  let clientId: string;
  let webhookSecret: string;
  let clientSecret: string;
  const tokens: string[] = [];
  let storeId: string;
  /** How far the cases moved the platform's clock: it signs deliveries in it. */
  let platformAheadSeconds = 0;
  let dropDb: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    const db = await database(name, kind);
    dropDb = db.drop;
    platform = await startPlatform({ logger: false });
    app = await startRuntime(
      name,
      (appUrl) => {
        const creds = platform.registerApp({
          name: `${name} app`,
          redirectUri: `${appUrl}/auth/callback`,
          webhookUrl: `${appUrl}/webhooks`,
          scopes: ['read_products'],
          appUrl,
        });
        clientId = creds.clientId;
        webhookSecret = creds.webhookSecret;
        clientSecret = creds.clientSecret;
        return {
          appUrl,
          environment: 'test',
          oauth: {
            clientId: creds.clientId,
            clientSecret: creds.clientSecret,
            scopes: ['read_products'],
            authUrl: platform.authUrl,
          },
          storage: { databaseUrl: db.url, encryptionKeys: [generateKey()] },
          session: { secret: randomBytes(32).toString('base64url') },
          webhooks: { secrets: creds.webhookSecret },
          health: { path: '/healthz' },
        };
      },
      name === 'deno' ? db.denoArgs : [],
    );
    storeId = platform.createStore({ name: `${name} store`, seed: 2 }).storeId;
  }, 60_000);
  afterAll(async () => {
    await stopRuntime(app);
    await platform?.close();
    await dropDb?.();
  });

  const state = async () =>
    (await (await fetch(`${app.appUrl}/_journey/state?store=${storeId}`)).json()) as {
      runtime: string;
      installed: boolean;
      pendingPurges: number;
    };

  it('installs, calls the API with a bearer token, refreshes, and purges on uninstall', async () => {
    expect(await state()).toEqual({ runtime: name, installed: false, pendingPurges: 0 });
    const browser = new Browser();
    const begun = await browser.get(`${app.appUrl}/auth?store_id=${storeId}`);
    expect(begun.status).toBe(302);
    const authorizeUrl = begun.headers.get('location')!;
    expect(authorizeUrl.startsWith(platform.authUrl)).toBe(true);
    const done = await browser.get(platform.approveInstall({ authorizeUrl, storeId }));
    expect(done.status).toBe(302);
    // Embedded (the default): back to the app inside the store admin.
    expect(done.headers.get('location')).toContain(storeId);
    expect(browser.cookies.get('store_app.sid')?.value).toMatch(/^s%3A/);
    expect((await state()).installed).toBe(true);

    const { token } = (await (
      await fetch(`${app.appUrl}/_journey/token?store=${storeId}`)
    ).json()) as { token: string };
    tokens.push(token);
    const call = () =>
      fetch(`${app.appUrl}/api/products`, { headers: { authorization: `Bearer ${token}` } });
    const first = await call();
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ storeId, count: 1, runtime: name });

    // Only the platform's clock moves: it refuses the token the runtime's kit still thinks valid.
    const refreshes = platform.stats().tokenRequests.refresh_token;
    platform.advanceClock(86_400 + 60);
    platformAheadSeconds += 86_400 + 60;
    const refreshed = await call();
    expect(refreshed.status).toBe(200);
    expect(platform.stats().tokenRequests.refresh_token - refreshes).toBe(1);

    const { deliveryId } = platform.uninstall({ storeId, clientId });
    const [delivery] = await platform.waitForDeliveries({ clientId, count: 1 });
    expect(delivery?.id).toBe(deliveryId);
    expect(delivery?.attempts.at(-1)?.status).toBe(200);
    expect(await state()).toEqual({ runtime: name, installed: false, pendingPurges: 0 });
    // The uninstall ended the token's session: 401 naming where to re-authorise.
    const after = await call();
    expect(after.status).toBe(401);
    expect(after.headers.get('x-store-app-reauthorize') ?? '').toContain('/auth');

    // The kit's pino logger ran on the runtime: JSON lines for each step, nothing else on stderr.
    const logs = app
      .output()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { msg: string; storeId?: string });
    const said = logs.filter((l) => l.storeId === storeId).map((l) => l.msg);
    // (A single refresh is a debug line: the kit's default level is info.)
    expect(said).toEqual(expect.arrayContaining(['store installed', 'store data purged']));
  });

  it('the health route answers through kit.fetch, uncached', async () => {
    const res = await fetch(`${app.appUrl}/healthz`);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('a request without credentials gets 401 with the bare Bearer challenge, never a 500', async () => {
    const res = await fetch(`${app.appUrl}/api/products`);
    expect(res.status).toBe(401);
    // RFC 6750 §3.1: no credentials presented, no error attribute (DECISIONS.md).
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('attack: a forged callback (no pending-install cookie) is refused before any exchange', async () => {
    const exchanges = platform.stats().tokenRequests.authorization_code;
    const res = await fetch(
      `${app.appUrl}/auth/callback?code=forged&state=forged&store_id=${storeId}`,
    );
    expect(res.status).toBe(400);
    expect(res.headers.get('x-store-app-error')).toBe(E.BINDING_MISSING);
    expect(platform.stats().tokenRequests.authorization_code).toBe(exchanges);
  });

  it('attack: unsigned, forged and oversized deliveries are refused with their own status', async () => {
    const url = `${app.appUrl}/webhooks`;
    const body = JSON.stringify({ type: 'app.uninstalled', data: { store_id: storeId } });
    const headers = { 'content-type': 'application/json' };
    expect((await fetch(url, { method: 'POST', headers, body })).status).toBe(400);
    // Signed as the platform signs: in its clock (moved ahead by the refresh case above).
    const now = Math.floor(Date.now() / 1000) + platformAheadSeconds;
    const forged = sign(`whsec_${randomBytes(32).toString('base64')}`, 'msg_forged', now, body);
    const bad = await fetch(url, { method: 'POST', headers: { ...headers, ...forged }, body });
    expect(bad.status).toBe(401);
    // Signed with the app's secret but over the default bound (1 MiB), sent chunked.
    const big = `{"pad":"${'x'.repeat(1024 * 1024)}"}`;
    const signed = sign(webhookSecret, 'msg_big', now, big);
    const chunked = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode(big));
        c.close();
      },
    });
    const oversized = await fetch(url, {
      method: 'POST',
      headers: { ...headers, ...signed },
      body: chunked,
      duplex: 'half',
    } as RequestInit);
    expect(oversized.status).toBe(413);
    // Nothing secret reached the runtime's logs along the way.
    const logs = app.output();
    expect(logs.length).toBeGreaterThan(0);
    for (const secret of [clientSecret, webhookSecret, ...tokens]) {
      expect(logs).not.toContain(secret);
    }
  });
});

describe.each(['bun', 'deno'] as const)('%s: SQLite storage', (name) => {
  it('the storage conformance suite passes inside the runtime, on its own SQLite driver', () => {
    // vitest itself runs on the runtime (test/shells/runtimes/sqlite-suite.test.mjs).
    const { bin } = RUNTIMES[name];
    const args = [
      ...(name === 'deno' ? ['run', '-A'] : []),
      join(root, 'node_modules/vitest/vitest.mjs'),
      'run',
      '--config',
      join(root, 'test/shells/runtimes/vitest.config.mjs'),
    ];
    const r = spawnSync(bin, args, {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1', STORE_APP_EXPECT_RUNTIME: name, CI: 'true' },
      timeout: 120_000,
    });
    const output = `${r.stdout}\n${r.stderr}`;
    expect(r.status, output).toBe(0);
    expect(output).toMatch(/Tests\s+3\d passed/);
  }, 150_000);
});

it('deno: without write access to the SQLite folder, Deno fails at start naming the flag, not the path', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sak-deno-denied-'));
  try {
    const app = await handshake('deno', (appUrl) => ({
      appUrl,
      environment: 'test',
      oauth: {
        clientId: 'client',
        clientSecret: 'secret-never-shown',
        scopes: ['read_products'],
        authUrl: 'http://127.0.0.1:9',
      },
      storage: { databaseUrl: `file:${join(dir, 'app.db')}`, encryptionKeys: [generateKey()] },
      session: { secret: randomBytes(32).toString('base64url') },
      webhooks: { secrets: `whsec_${randomBytes(32).toString('base64')}` },
    }));
    await stopRuntime(app);
    expect(app.reply['error']).toBe('CONFIG_INVALID');
    expect(app.reply['message']).toMatch(/^DATABASE_URL: .*--allow-write/);
    expect(app.reply['message']).not.toContain('secret-never-shown');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
