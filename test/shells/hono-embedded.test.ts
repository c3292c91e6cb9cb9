/**
 * The embedded app on the Fetch shell (Hono on Node, real sockets, the local
 * platform): the store admin opens the app with a launch token, the kit answers
 * a redirect that sets the session cookie, the page loads with the cookie, swaps
 * it for an app session token at /auth/session-token, and calls the API with it.
 * One session for both shells (Express and Fetch read each other's cookie).
 * Then the attacks on these entry points, each by name (docs/security.md).
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAdaptorServer } from '@hono/node-server';
import express from 'express';
import type { SessionData } from 'express-session';
import { Hono } from 'hono';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { internalsOf } from '../../src/compose/internals.js';
import { unsignSessionCookie } from '../../src/core/browser-session.js';
import { generateKey } from '../../src/crypto/index.js';
import type { StoreAppKit } from '../../src/kit.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { storeApp } from '../../src/store-app.js';
import { expressSessionStore } from '../helpers/express-session-store.js';

/**
 * A browser's cookie jar over node's HTTP client (supertest): unlike fetch, it
 * sends the Fetch Metadata headers given (fetch forces sec-fetch-mode: cors,
 * so a page navigation could not be told from a fetch).
 */
class Browser {
  readonly cookies = new Map<string, { value: string }>();

  async get(url: string, headers: Record<string, string> = {}) {
    const u = new URL(url);
    const cookie = [...this.cookies].map(([k, c]) => `${k}=${c.value}`).join('; ');
    const res = await request(u.origin)
      .get(`${u.pathname}${u.search}`)
      .set(cookie ? { ...headers, cookie } : headers);
    const setCookies = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
    for (const line of setCookies) {
      const pair = line.split(';')[0]!;
      const i = pair.indexOf('=');
      const value = pair.slice(i + 1).trim();
      if (value === '') this.cookies.delete(pair.slice(0, i).trim());
      else this.cookies.set(pair.slice(0, i).trim(), { value });
    }
    return {
      status: res.status,
      text: res.text,
      header: (name: string): string | undefined => res.headers[name.toLowerCase()],
      setCookies,
      json: () => res.body as unknown,
    };
  }
}

const COOKIE = 'store_app.sid';
/** The admin's iframe loading the app: the only place a launch token is honoured. */
const framed = {
  accept: 'text/html',
  'sec-fetch-mode': 'navigate',
  'sec-fetch-dest': 'iframe',
  'sec-fetch-site': 'same-site',
};
const topLevel = { ...framed, 'sec-fetch-dest': 'document' };
const xhr = {
  accept: 'application/json',
  'sec-fetch-mode': 'cors',
  'sec-fetch-site': 'same-origin',
};

const dir = mkdtempSync(join(tmpdir(), 'sak-hono-embedded-'));
let platform: Platform;
let kit: StoreAppKit;
let server: Server;
let expressServer: Server;
let appUrl: string;
let expressUrl: string;
let clientId: string;
let sessionSecret: string;
let storeId: string;
const OTHER_STORE = '0b6f7a11-2c3d-4e5f-8a9b-1c2d3e4f5a6b';

beforeAll(async () => {
  platform = await startPlatform({ logger: false });
  const app = new Hono();
  app.use('*', async (c, next) => (await kit.fetch(c.req.raw)) ?? next());
  // The app's own page, as templates/hono serves it: framed only by the admin.
  app.get('/', async (c) => {
    const store = await kit.authenticate(c.req.raw);
    if (store instanceof Response) return store;
    c.header('Content-Security-Policy', `default-src 'self'; ${kit.frameAncestors()}`);
    return c.html(`<p id="store">${store.storeId}</p>`);
  });
  app.get('/api/products', async (c) => {
    const store = await kit.authenticate(c.req.raw);
    if (store instanceof Response) return store;
    const page = await store.client.products.list({ limit: 1 });
    return c.json({ storeId: store.storeId, count: page.data.length });
  });
  app.post('/api/notes', async (c) => {
    const store = await kit.authenticate(c.req.raw);
    if (store instanceof Response) return store;
    return c.json({ saved: store.storeId });
  });
  server = createAdaptorServer({ fetch: app.fetch }) as Server;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  appUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const creds = platform.registerApp({
    name: 'Hono embedded',
    redirectUri: `${appUrl}/auth/callback`,
    webhookUrl: `${appUrl}/webhooks`,
    scopes: ['read_products'],
    appUrl,
  });
  clientId = creds.clientId;
  sessionSecret = 'h'.repeat(40);
  kit = (await storeApp({
    appUrl,
    environment: 'test',
    oauth: {
      clientId,
      clientSecret: creds.clientSecret,
      scopes: ['read_products'],
      authUrl: platform.authUrl,
    },
    storage: { databaseUrl: join(dir, 'app.db'), encryptionKeys: [generateKey()] },
    session: { secret: sessionSecret },
    webhooks: { secrets: creds.webhookSecret },
    logger: { instance: pino({ level: 'silent' }) },
  })) as StoreAppKit;
  // The Express shell of the same kit, on its own port.
  const ex = express();
  ex.use(kit.middleware());
  ex.get('/me', kit.authenticated(), (_req, res) => {
    res.json({ storeId: res.locals.store.storeId });
  });
  expressServer = ex.listen(0, '127.0.0.1');
  await once(expressServer, 'listening');
  expressUrl = `http://127.0.0.1:${(expressServer.address() as AddressInfo).port}`;

  storeId = platform.createStore({ name: 'Embedded store', seed: 2 }).storeId;
  const installer = new Browser();
  const begun = await installer.get(`${appUrl}/auth?store_id=${storeId}`);
  const done = await installer.get(
    platform.approveInstall({ authorizeUrl: begun.header('location')!, storeId }),
  );
  expect(done.status).toBe(302);
});

afterAll(async () => {
  for (const s of [server, expressServer]) {
    s?.closeAllConnections();
    s?.close();
  }
  await kit?.close();
  await platform?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The URL the store admin frames, launch token included (a fresh token per call). */
async function adminFrameSrc(): Promise<URL> {
  const res = await fetch(`${platform.adminUrl}/stores/${storeId}/apps/${clientId}`);
  expect(res.status).toBe(200);
  const src = /<iframe[^>]* src="([^"]+)"/.exec(await res.text())?.[1];
  expect(src).toBeTruthy();
  return new URL(src!.replaceAll('&amp;', '&'));
}

/** The merchant's browser after the admin opened the app: the session cookie set. */
async function launched(): Promise<Browser> {
  const browser = new Browser();
  const res = await browser.get(String(await adminFrameSrc()), framed);
  expect(res.status).toBe(302);
  expect(browser.cookies.has(COOKIE)).toBe(true);
  return browser;
}

function sessionIdOf(browser: Browser): string {
  const id = unsignSessionCookie(decodeURIComponent(browser.cookies.get(COOKIE)!.value), [
    sessionSecret,
  ]);
  expect(id).toBeTruthy();
  return id!;
}

describe('the admin opens the app on the Fetch shell', () => {
  it('launch → redirect setting the session → page → session token via the cookie → API with Bearer', async () => {
    const browser = new Browser();
    const src = await adminFrameSrc();
    const launch = await browser.get(String(src), framed);
    expect(launch.status).toBe(302);
    expect(launch.header('cache-control')).toBe('no-store');
    // Same page, same query, without the single-use token (out of history and Referer).
    const location = new URL(launch.header('location')!, appUrl);
    expect(location.origin).toBe(appUrl);
    expect(location.searchParams.has('launch')).toBe(false);
    expect(location.searchParams.get('store_id')).toBe(storeId);
    expect(launch.setCookies.join()).toContain(`${COOKIE}=`);

    const page = await browser.get(String(location), framed);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<p id="store">${storeId}</p>`);
    expect(page.header('content-security-policy')).toContain(
      `frame-ancestors ${new URL(platform.authUrl).origin}`,
    );

    const minted = await browser.get(`${appUrl}/auth/session-token`, xhr);
    expect(minted.status).toBe(200);
    expect(minted.header('cache-control')).toBe('no-store');
    const { token, expiresAt } = minted.json() as { token: string; expiresAt: string };
    expect(Date.parse(expiresAt)).toBeGreaterThan(Date.now());

    const api = await fetch(`${appUrl}/api/products`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(api.status).toBe(200);
    expect(await api.json()).toEqual({ storeId, count: 1 });
  });

  it('a session started by the Fetch shell is accepted by Express', async () => {
    const browser = await launched();
    const res = await browser.get(`${expressUrl}/me`, xhr);
    expect(res.status).toBe(200);
    expect(res.json()).toEqual({ storeId });
  });

  it('a session started by Express (its launch) is accepted by the Fetch shell', async () => {
    const browser = new Browser();
    const src = await adminFrameSrc();
    // The same admin launch, answered by kit.authenticated() on Express.
    const started = await browser.get(`${expressUrl}/me${src.search}`, framed);
    expect(started.status).toBe(200);
    expect(browser.cookies.has(COOKIE)).toBe(true);
    const res = await browser.get(`${appUrl}/api/products`, xhr);
    expect(res.status).toBe(200);
    expect(res.json()).toEqual({ storeId, count: 1 });
  });

  it('without a session, the page inside the admin is the styled re-authorise page with frame-ancestors', async () => {
    const res = await new Browser().get(`${appUrl}/?store_id=${storeId}&embedded=1`, framed);
    expect(res.status).toBe(200);
    expect(res.text).toContain('SESSION_REQUIRED');
    expect(res.header('content-security-policy')).toContain(
      `frame-ancestors ${new URL(platform.authUrl).origin}`,
    );
  });
});

describe('attacks on the Fetch shell’s launch and cookie session', () => {
  it('attack: a replayed launch token starts no session', async () => {
    const src = String(await adminFrameSrc());
    expect((await new Browser().get(src, framed)).status).toBe(302);
    const replayer = new Browser();
    const replay = await replayer.get(src, framed);
    expect(replayer.cookies.has(COOKIE)).toBe(false);
    // Inside the frame without a session: the re-authorise page, not the app.
    expect(replay.status).toBe(200);
    const body = replay.text;
    expect(body).toContain('SESSION_REQUIRED');
    expect(body).not.toContain('id="store"');
  });

  it('attack: a launch token outside a frame (sec-fetch-dest: document) signs nobody in', async () => {
    const browser = new Browser();
    const res = await browser.get(String(await adminFrameSrc()), topLevel);
    expect(browser.cookies.has(COOKIE)).toBe(false);
    // No session: the re-authorise page (the URL says embedded=1), never the app's page.
    expect(res.status).toBe(200);
    expect(res.text).toContain('SESSION_REQUIRED');
    expect(res.text).not.toContain('id="store"');
  });

  it('attack: a launch on a path like //evil.example redirects within the app only', async () => {
    const src = await adminFrameSrc();
    const res = await kit.authenticate(
      new Request(`${appUrl}//evil.example/${src.search}`, { headers: framed }),
    );
    expect(res).toBeInstanceOf(Response);
    const location = (res as Response).headers.get('location')!;
    expect(location.startsWith('/evil.example/?')).toBe(true);
    expect(new URL(location, appUrl).origin).toBe(appUrl);
  });

  it('attack: a cross-site write with the session cookie is refused (403 CROSS_SITE_REQUEST)', async () => {
    const browser = await launched();
    const cookie = `${COOKIE}=${browser.cookies.get(COOKIE)!.value}`;
    const post = (site: string) =>
      fetch(`${appUrl}/api/notes`, {
        method: 'POST',
        headers: { cookie, 'sec-fetch-site': site, 'content-type': 'application/json' },
        body: '{}',
      });
    const forged = await post('cross-site');
    expect(forged.status).toBe(403);
    expect(((await forged.json()) as { code: string }).code).toBe('CROSS_SITE_REQUEST');
    // The same write from the app's own page is served.
    const own = await post('same-origin');
    expect(own.status).toBe(200);
    expect(await own.json()).toEqual({ saved: storeId });
  });

  it('attack: a session past its absolute lifetime is refused however active it was', async () => {
    const browser = await launched();
    expect((await browser.get(`${appUrl}/api/products`, xhr)).status).toBe(200);
    const sessions = expressSessionStore(internalsOf(kit).storage.sessions());
    const sid = sessionIdOf(browser);
    const stored = await new Promise<SessionData>((resolve, reject) =>
      sessions.get(sid, (err, s) => (err || !s ? reject(err) : resolve(s))),
    );
    const authAt = Date.now() - (internalsOf(kit).config.session.maxAgeSeconds + 1) * 1000;
    await new Promise<void>((resolve, reject) =>
      sessions.set(sid, { ...stored, authAt }, (err) => (err ? reject(err) : resolve())),
    );
    const res = await browser.get(`${appUrl}/api/products`, xhr);
    expect(res.status).toBe(401);
    expect((res.json() as { code: string }).code).toBe('SESSION_REQUIRED');
    expect(res.header('x-store-app-reauthorize')).toBe(`${appUrl}/auth`);
  });

  it('attack: a page opened for another store than the session’s re-authorises there', async () => {
    const browser = await launched();
    const top = await browser.get(`${appUrl}/?store_id=${OTHER_STORE}`, topLevel);
    expect(top.status).toBe(302);
    expect(top.header('location')).toBe(`${appUrl}/auth?store_id=${OTHER_STORE}`);
    const inFrame = await browser.get(`${appUrl}/?store_id=${OTHER_STORE}&embedded=1`, framed);
    expect(inFrame.status).toBe(200);
    const body = inFrame.text;
    expect(body).toContain('SESSION_REQUIRED');
    expect(body).not.toContain('id="store"');
  });

  it('attack: a second launch in the same browser gets a new session id; the old cookie is dead', async () => {
    const browser = await launched();
    const before = browser.cookies.get(COOKIE)!.value;
    // The admin opens the app again (another tab, a reload): the browser sends its cookie.
    const again = await browser.get(String(await adminFrameSrc()), framed);
    expect(again.status).toBe(302);
    const after = browser.cookies.get(COOKIE)!.value;
    expect(after).not.toBe(before);
    expect((await browser.get(`${appUrl}/api/products`, xhr)).status).toBe(200);
    // A copy of the first cookie (fixed by an attacker, or stolen before) no longer works.
    const stale = await fetch(`${appUrl}/api/products`, {
      headers: { ...xhr, cookie: `${COOKIE}=${before}` },
    });
    expect(stale.status).toBe(401);
  });

  it('attack: a forged, unsigned or foreign-signed session cookie is no session', async () => {
    const browser = await launched();
    const sid = sessionIdOf(browser);
    const forgedCookies = [
      `s:${sid}.${'A'.repeat(43)}`,
      sid,
      `s:${sid}`,
      // A valid signature under another secret.
      decodeURIComponent(browser.cookies.get(COOKIE)!.value).replace(/\.[^.]+$/, '.x'),
    ];
    for (const value of forgedCookies) {
      const res = await fetch(`${appUrl}/api/products`, {
        headers: { ...xhr, cookie: `${COOKIE}=${encodeURIComponent(value)}` },
      });
      expect(res.status, value).toBe(401);
      expect(((await res.json()) as { code: string }).code).toBe('SESSION_REQUIRED');
    }
    // The genuine cookie still works: the refusals are the signature's.
    expect((await browser.get(`${appUrl}/api/products`, xhr)).status).toBe(200);
  });
});
