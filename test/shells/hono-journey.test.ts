/**
 * The kit on the Fetch API, mounted in Hono on Node (@hono/node-server) over
 * real sockets against the local platform: install (begin → consent → callback),
 * an API call with a bearer app session token, a forced refresh, the
 * app.uninstalled webhook and its purge. Then the attacks on the new entry
 * points: forged and replayed callbacks, unsigned and oversized deliveries.
 * On a SQLite file and on the real Postgres.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAdaptorServer, type HttpBindings } from '@hono/node-server';
import express from 'express';
import { Hono } from 'hono';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { internalsOf } from '../../src/compose/internals.js';
import { unsignSessionCookie } from '../../src/core/browser-session.js';
import { generateKey } from '../../src/crypto/index.js';
import { INSTALL_ERROR_CODES as E } from '../../src/install/errors.js';
import type { StoreAppKit } from '../../src/kit.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { storeApp } from '../../src/store-app.js';
import { sign } from '../../src/webhooks/verify.js';
import { expressSessionStore } from '../helpers/express-session-store.js';
import { createTempDatabase, type TempDatabase } from '../helpers/postgres.js';
import { Browser } from '../install/harness.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-hono-'));
let pg: TempDatabase;
beforeAll(async () => {
  pg = await createTempDatabase('sak_hono');
});
afterAll(async () => {
  await pg?.drop();
  rmSync(dir, { recursive: true, force: true });
});

interface HonoApp {
  platform: Platform;
  kit: StoreAppKit;
  appUrl: string;
  clientId: string;
  webhookSecret: string;
  server: Server;
  sessionSecret: string;
}

/** The app as a Hono user writes it: kit.fetch first, kit.authenticate on API routes. */
async function startHonoApp(databaseUrl: string): Promise<HonoApp> {
  const platform = await startPlatform({ logger: false });
  let kit: StoreAppKit | undefined;
  const app = new Hono<{ Bindings: HttpBindings }>();
  app.use('*', async (c, next) => {
    const answered = await kit!.fetch(c.req.raw, {
      remoteAddress: c.env.incoming.socket.remoteAddress,
    });
    if (answered) return answered;
    await next();
  });
  app.get('/api/products', async (c) => {
    const store = await kit!.authenticate(c.req.raw);
    if (store instanceof Response) return store;
    const page = await store.client.products.list({ limit: 1 });
    return c.json({ storeId: store.storeId, count: page.data.length });
  });
  const server = createAdaptorServer({ fetch: app.fetch }) as Server;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const appUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const creds = platform.registerApp({
    name: 'Hono app',
    redirectUri: `${appUrl}/auth/callback`,
    webhookUrl: `${appUrl}/webhooks`,
    scopes: ['read_products'],
    appUrl,
  });
  const sessionSecret = randomBytes(32).toString('base64url');
  kit = (await storeApp({
    appUrl,
    environment: 'test',
    oauth: {
      clientId: creds.clientId,
      clientSecret: creds.clientSecret,
      scopes: ['read_products'],
      authUrl: platform.authUrl,
    },
    storage: { databaseUrl, encryptionKeys: [generateKey()] },
    session: { secret: sessionSecret },
    webhooks: { secrets: creds.webhookSecret },
    health: { path: '/healthz' },
    logger: { instance: pino({ level: 'silent' }) },
  })) as StoreAppKit;
  return {
    platform,
    kit,
    appUrl,
    clientId: creds.clientId,
    webhookSecret: creds.webhookSecret,
    server,
    sessionSecret,
  };
}

describe.each([
  ['sqlite', () => join(dir, 'hono.db')],
  ['postgres', () => pg.url],
])('Hono on Node, %s', (_dialect, databaseUrl) => {
  let h: HonoApp;
  let storeId: string;
  /** How far the cases moved the platform's clock: it signs deliveries in it. */
  let platformAheadSeconds = 0;
  beforeAll(async () => {
    h = await startHonoApp(databaseUrl());
    storeId = h.platform.createStore({ name: 'Hono store', seed: 2 }).storeId;
  });
  afterAll(async () => {
    h?.server.closeAllConnections();
    h?.server.close();
    await h?.kit.close();
    await h?.platform.close();
  });

  /** `GET /me` behind `kit.authenticated()` on an Express app of the same kit, with the browser's cookies. */
  async function viaExpress(browser: Browser): Promise<{ status: number; storeId?: string }> {
    const ex = express();
    ex.use(h.kit.middleware());
    ex.get('/me', h.kit.authenticated(), (_req, res) => {
      res.json({ storeId: res.locals.store.storeId });
    });
    const server = ex.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const port = (server.address() as AddressInfo).port;
      const res = await browser.get(`http://127.0.0.1:${port}/me`, { accept: 'application/json' });
      if (res.status !== 200) return { status: res.status };
      return { status: 200, ...((await res.json()) as { storeId: string }) };
    } finally {
      server.closeAllConnections();
      server.close();
    }
  }

  async function install(browser: Browser): Promise<Response> {
    const begun = await browser.get(`${h.appUrl}/auth?store_id=${storeId}`);
    expect(begun.status).toBe(302);
    const authorizeUrl = begun.headers.get('location')!;
    expect(authorizeUrl.startsWith(h.platform.authUrl)).toBe(true);
    return browser.get(h.platform.approveInstall({ authorizeUrl, storeId }));
  }

  it('installs, calls the API with a bearer token, refreshes, and purges on uninstall', async () => {
    const browser = new Browser();
    const done = await install(browser);
    expect(done.status).toBe(302);
    // Embedded (the default): back to the app inside the store admin.
    expect(done.headers.get('location')).toContain(storeId);
    expect(await h.kit.installations.get(storeId)).not.toBeNull();
    // The browser session is express-session's: signed with the session secret, in the kit's store.
    const sid = unsignSessionCookie(
      decodeURIComponent(browser.cookies.get('store_app.sid')!.value),
      [h.sessionSecret],
    );
    expect(sid).toBeTruthy();
    const stored = await new Promise((resolve, reject) =>
      expressSessionStore(internalsOf(h.kit).storage.sessions()).get(sid!, (err, s) =>
        err ? reject(err) : resolve(s),
      ),
    );
    expect(stored).toMatchObject({ storeId });
    // And the Express shell of the same kit reads it: one session for both shells.
    expect(await viaExpress(browser)).toEqual({ status: 200, storeId });

    const { token } = await h.kit.sessionToken(storeId);
    const call = () =>
      fetch(`${h.appUrl}/api/products`, { headers: { authorization: `Bearer ${token}` } });
    const first = await call();
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ storeId, count: 1 });

    // Only the platform's clock moves: it refuses the token ours still thinks valid.
    const refreshes = h.platform.stats().tokenRequests.refresh_token;
    h.platform.advanceClock(86_400 + 60);
    platformAheadSeconds += 86_400 + 60;
    const refreshed = await call();
    expect(refreshed.status).toBe(200);
    expect(h.platform.stats().tokenRequests.refresh_token - refreshes).toBe(1);

    const { deliveryId } = h.platform.uninstall({ storeId, clientId: h.clientId });
    const [delivery] = await h.platform.waitForDeliveries({ clientId: h.clientId, count: 1 });
    expect(delivery?.id).toBe(deliveryId);
    expect(delivery?.attempts.at(-1)?.status).toBe(200);
    expect(await h.kit.installations.get(storeId)).toBeNull();
    expect(await h.kit.pendingPurges()).toEqual([]);
    // The uninstall ended the token's session: 401 naming where to re-authorise.
    const after = await call();
    expect(after.status).toBe(401);
    expect(after.headers.get('x-store-app-reauthorize') ?? '').toContain('/auth');
  });

  it('the health route answers through kit.fetch, uncached, without detail by default', async () => {
    const res = await fetch(`${h.appUrl}/healthz`);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('a request without credentials gets 401 with the bare Bearer challenge, never a 500', async () => {
    const res = await fetch(`${h.appUrl}/api/products`);
    expect(res.status).toBe(401);
    // RFC 6750 §3.1: no credentials presented, no error attribute (DECISIONS.md).
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('attack: a forged callback (no pending-install cookie) is refused before any exchange', async () => {
    const exchanges = h.platform.stats().tokenRequests.authorization_code;
    const res = await fetch(
      `${h.appUrl}/auth/callback?code=forged&state=forged&store_id=${storeId}`,
    );
    expect(res.status).toBe(400);
    expect(res.headers.get('x-store-app-error')).toBe(E.BINDING_MISSING);
    expect(h.platform.stats().tokenRequests.authorization_code).toBe(exchanges);
  });

  it('attack: a replayed callback URL is refused, and the installation it made stays', async () => {
    const browser = new Browser();
    const begun = await browser.get(`${h.appUrl}/auth?store_id=${storeId}`);
    const callbackUrl = h.platform.approveInstall({
      authorizeUrl: begun.headers.get('location')!,
      storeId,
    });
    const pendingCookie = [...browser.cookies.entries()];
    expect((await browser.get(callbackUrl)).status).toBe(302);
    // The same callback again, with the pending-install cookie as it was before.
    const replayer = new Browser();
    for (const [k, v] of pendingCookie) replayer.cookies.set(k, v);
    const replay = await replayer.get(callbackUrl);
    expect(replay.status).toBe(400);
    expect([E.STATE_INVALID, E.CODE_REPLAYED]).toContain(replay.headers.get('x-store-app-error'));
    expect(await h.kit.installations.get(storeId)).not.toBeNull();
  });

  it('attack: unsigned, wrong-method and oversized deliveries are refused with their own status', async () => {
    const url = `${h.appUrl}/webhooks`;
    const body = JSON.stringify({ type: 'app.uninstalled', data: { store_id: storeId } });
    const unsigned = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(unsigned.status).toBe(400);
    const now = Math.floor(Date.now() / 1000);
    const forged = sign(`whsec_${randomBytes(32).toString('base64')}`, 'msg_forged', now, body);
    const badSignature = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...forged },
      body,
    });
    expect(badSignature.status).toBe(401);
    const get = await fetch(url);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const text = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body,
    });
    expect(text.status).toBe(415);
    // Signed correctly but over maxBodyBytes, without a Content-Length (chunked): cut off at the bound.
    const big = `{"pad":"${'x'.repeat(internalsOf(h.kit).config.webhooks.maxBodyBytes)}"}`;
    const id = 'msg_big';
    // Signed as the platform signs: in its clock (moved ahead by the refresh case above).
    const ts = Math.floor(Date.now() / 1000) + platformAheadSeconds;
    const signed = sign(h.webhookSecret, id, ts, big);
    const chunked = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode(big));
        c.close();
      },
    });
    const oversized = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signed },
      body: chunked,
      duplex: 'half',
    } as RequestInit);
    expect(oversized.status).toBe(413);
    // The installation is untouched by any of them.
    expect(await h.kit.installations.get(storeId)).not.toBeNull();
  });
});
