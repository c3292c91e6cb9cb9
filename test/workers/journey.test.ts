/**
 * The kit in workerd (Cloudflare's runtime, through Miniflare): the Worker a
 * user writes with `store-app-kit/workers` and `store-app-kit/storage/d1`,
 * bundled from the built package as Wrangler bundles it (no `nodejs_compat`:
 * the Worker has no Node module at all), on a local D1 database, listening on
 * a real socket. The local platform runs in this process on another socket:
 * the Worker reaches it with `fetch`, the platform delivers webhooks to it.
 * The merchant's journey (install, an authenticated API call, a refresh once
 * the platform's clock moved, the uninstall webhook and its purge), then the
 * Fetch shell's red-team cases (launch replay, cross-site cookie write,
 * forged webhook).
 */
import { once } from 'node:events';
import { createServer } from 'node:net';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { sign } from '../../src/webhooks/verify.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The Worker as an app writes it (docs/runtimes.md, "Cloudflare Workers"). */
const WORKER = `
  import { createWorker } from './dist/workers/index.js';
  import { d1Adapter } from './dist/storage/d1/index.js';

  export default createWorker({
    options: (env) => ({
      storage: { adapter: d1Adapter(env.DB, { applyMigrations: true }) },
      logger: { level: 'silent' },
    }),
    async fetch(request, env, ctx, kit) {
      const { pathname } = new URL(request.url);
      if (pathname === '/' || pathname === '/api/products') {
        const store = await kit.authenticate(request);
        if (store instanceof Response) return store;
        if (pathname === '/') return kit.secureResponse(request, new Response('<h1>My app</h1>', {
          headers: { 'content-type': 'text/html; charset=utf-8' },
        }));
        const page = await store.client.products.list({ limit: 1 });
        return kit.secureResponse(request, Response.json({ storeId: store.storeId, count: page.data.length }));
      }
      return new Response('Not found', { status: 404 });
    },
  });
`;

/** A free port on the loopback (the Worker's URL must be known to register the app). */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/** Cookies as a browser keeps them for the app's origin. */
class Jar {
  readonly cookies = new Map<string, string>();
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  take(res: Response): Response {
    for (const c of res.headers.getSetCookie()) {
      const pair = c.split(';')[0] ?? '';
      const eq = pair.indexOf('=');
      if (eq > 0) this.cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    return res;
  }
  async get(url: string, headers: Record<string, string> = {}): Promise<Response> {
    return this.take(
      await fetch(url, { redirect: 'manual', headers: { ...headers, cookie: this.header() } }),
    );
  }
}

const FRAMED = {
  accept: 'text/html',
  'sec-fetch-mode': 'navigate',
  'sec-fetch-dest': 'iframe',
  'sec-fetch-site': 'cross-site',
};

let platform: Platform;
let mf: Miniflare;
let appUrl: string;
let creds: { clientId: string; clientSecret: string; webhookSecret: string };

beforeAll(async () => {
  platform = await startPlatform({ logger: false });
  const port = await freePort();
  appUrl = `http://127.0.0.1:${port}`;
  creds = platform.registerApp({
    name: 'Workers app',
    redirectUri: `${appUrl}/auth/callback`,
    webhookUrl: `${appUrl}/webhooks`,
    scopes: ['read_products'],
    appUrl,
  });
  const bundled = await build({
    stdin: { contents: WORKER, resolveDir: root },
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['browser', 'module', 'main'],
    write: false,
    logLevel: 'silent',
  });
  mf = new Miniflare({
    modules: true,
    script: bundled.outputFiles[0]!.text,
    compatibilityDate: '2025-01-01',
    d1Databases: ['DB'],
    host: '127.0.0.1',
    port,
    // The Worker's variables and secrets (wrangler's [vars] and `wrangler secret put`).
    bindings: {
      STORE_APP_URL: appUrl,
      STORE_APP_CLIENT_ID: creds.clientId,
      STORE_APP_CLIENT_SECRET: creds.clientSecret,
      STORE_APP_SCOPES: 'read_products',
      STORE_AUTH_URL: platform.authUrl,
      STORE_APP_ENCRYPTION_KEYS: generateKey(),
      STORE_APP_SESSION_SECRET: generateKey(),
      STORE_APP_WEBHOOK_SECRET: creds.webhookSecret,
      NODE_ENV: 'development',
    },
  });
  await mf.ready;
}, 120_000);

afterAll(async () => {
  await mf?.dispose();
  await platform?.close();
});

/** Installs the app into a new store as a merchant does; the browser's jar and the store id. */
async function install(): Promise<{ storeId: string; jar: Jar }> {
  const { storeId } = platform.createStore({ name: 'Edge store', seed: 3 });
  const jar = new Jar();
  const begin = await jar.get(`${appUrl}/auth?store_id=${storeId}`, { accept: 'text/html' });
  expect(begin.status).toBe(302);
  const callback = platform.approveInstall({
    authorizeUrl: begin.headers.get('location')!,
    storeId,
  });
  const done = await jar.get(callback, { accept: 'text/html' });
  expect(done.status, await done.text()).toBe(302);
  return { storeId, jar };
}

async function rows(sql: string, ...params: string[]): Promise<number> {
  const db = await mf.getD1Database('DB');
  const r = await db
    .prepare(sql)
    .bind(...params)
    .first<{ n: number }>();
  return Number(r?.n);
}

describe('the kit in workerd on D1', () => {
  let storeId: string;
  let jar: Jar;
  let token: string;

  it('installs from the platform: tokens sealed in D1, the session cookie set', async () => {
    ({ storeId, jar } = await install());
    const stored = await (await mf.getD1Database('DB'))
      .prepare('SELECT access_token_enc AS t FROM store_app_installations WHERE store_id = ?')
      .bind(storeId)
      .first<{ t: string }>();
    // A compact JWE (dir, A256GCM), never the token.
    expect(stored?.t.split('.')).toHaveLength(5);
    const swap = await jar.get(`${appUrl}/auth/session-token`, { accept: 'application/json' });
    expect(swap.status).toBe(200);
    ({ token } = (await swap.json()) as { token: string });
    expect(token.split('.')).toHaveLength(3);
  });

  it('answers an authenticated API call, and refreshes once the platform’s clock moved', async () => {
    const call = () =>
      fetch(`${appUrl}/api/products`, { headers: { authorization: `Bearer ${token}` } });
    const first = await call();
    expect(first.status, await first.clone().text()).toBe(200);
    expect(await first.json()).toEqual({ storeId, count: 1 });
    expect(first.headers.get('x-content-type-options')).toBe('nosniff');
    // The same token again: answered from memory (workerd has no WeakRef by default).
    const again = await call();
    expect(again.status, await again.clone().text()).toBe(200);
    expect(await again.json()).toEqual({ storeId, count: 1 });

    const refreshes = platform.stats().tokenRequests.refresh_token;
    platform.advanceClock(86_400 + 60);
    const refreshed = await call();
    expect(refreshed.status, await refreshed.clone().text()).toBe(200);
    expect(platform.stats().tokenRequests.refresh_token - refreshes).toBe(1);
  });

  it('a Cron Trigger’s scheduled() refreshes a token about to expire, without a request', async () => {
    // The token's expiry, as stored, is now: the sweep finds it due.
    const db = await mf.getD1Database('DB');
    await db
      .prepare('UPDATE store_app_installations SET access_expires_at = ? WHERE store_id = ?')
      .bind(Date.now(), storeId)
      .run();
    const refreshes = platform.stats().tokenRequests.refresh_token;
    const worker = (await mf.getWorker()) as unknown as {
      scheduled(o: { cron: string }): Promise<unknown>;
    };
    await worker.scheduled({ cron: '*/5 * * * *' });
    expect(platform.stats().tokenRequests.refresh_token - refreshes).toBe(1);
    expect(
      await rows(
        'SELECT count(*) AS n FROM store_app_installations WHERE store_id = ? AND access_expires_at > ?',
        storeId,
        String(Date.now() + 60_000),
      ),
    ).toBe(1);
  });

  it('the uninstall webhook is acknowledged and the store purged from D1', async () => {
    const { deliveryId } = platform.uninstall({ storeId, clientId: creds.clientId });
    const [delivery] = await platform.waitForDeliveries({ clientId: creds.clientId, count: 1 });
    expect(delivery?.id).toBe(deliveryId);
    expect(delivery?.attempts.at(-1)?.status).toBe(200);
    expect(
      await rows('SELECT count(*) AS n FROM store_app_installations WHERE store_id = ?', storeId),
    ).toBe(0);
    // Acknowledged after the purge committed; what remains is the outbox's later
    // sweep of rows written after the uninstall's signed time (purge.horizonMs).
    expect(
      await rows("SELECT count(*) AS n FROM store_app_pending_purges WHERE kind <> 'sweep'"),
    ).toBe(0);
    // The outbox's later sweep runs from the Worker's scheduled() (Cron Triggers), once.
    const db = await mf.getD1Database('DB');
    await db.prepare('UPDATE store_app_pending_purges SET next_attempt_at = 0').run();
    const worker = (await mf.getWorker()) as unknown as {
      scheduled(o: { cron: string }): Promise<unknown>;
    };
    await worker.scheduled({ cron: '* * * * *' });
    expect(await rows('SELECT count(*) AS n FROM store_app_pending_purges')).toBe(0);
    const audit = () =>
      rows('SELECT count(*) AS n FROM store_app_purge_audit WHERE store_id = ?', storeId);
    const audited = await audit();
    await worker.scheduled({ cron: '* * * * *' });
    expect(await audit()).toBe(audited);
    const after = await fetch(`${appUrl}/api/products`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(after.status).toBe(401);
  });
});

describe('red team: the Fetch shell in workerd', () => {
  it('attack: a replayed launch URL starts no second session', async () => {
    const { storeId } = await install();
    const admin = await fetch(`${platform.adminUrl}/stores/${storeId}/apps/${creds.clientId}`);
    const src = /<iframe[^>]* src="([^"]+)"/
      .exec(await admin.text())?.[1]
      ?.replaceAll('&amp;', '&');
    expect(src).toContain('launch=');
    const first = await new Jar().get(src!, FRAMED);
    expect(first.status).toBe(302);
    expect(first.headers.getSetCookie().join(';')).toContain('store_app.sid=');
    const replay = await new Jar().get(src!, FRAMED);
    expect(replay.status).not.toBe(302);
    expect(replay.headers.getSetCookie().join(';')).not.toContain('store_app.sid=s%3A');
  });

  it('attack: a cookie-only write from another site is refused (403)', async () => {
    const { jar } = await install();
    const res = await fetch(`${appUrl}/api/products`, {
      method: 'POST',
      headers: {
        cookie: jar.header(),
        'sec-fetch-site': 'cross-site',
        'sec-fetch-mode': 'cors',
        origin: 'https://evil.example',
      },
    });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ code: 'CROSS_SITE_REQUEST' });
  });

  it('attack: a forged webhook (wrong secret) is refused before any handler or purge', async () => {
    const { storeId } = await install();
    const body = JSON.stringify({ type: 'app.uninstalled', storeId });
    const at = Math.floor(Date.now() / 1000);
    const forged = sign(`whsec_${generateKey()}`, 'msg_forged', at, body);
    const res = await fetch(`${appUrl}/webhooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...forged },
      body,
    });
    expect(res.status).toBe(401);
    expect(
      await rows('SELECT count(*) AS n FROM store_app_installations WHERE store_id = ?', storeId),
    ).toBe(1);
  });
});
