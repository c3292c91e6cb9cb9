/**
 * The kit as a guest in an Express app that existed before it (issue 32), over real
 * sockets against the local platform, on a SQLite file: the app of
 * test/fixtures/existing-app (its own express-session, CSP, static files, global
 * express.json(), error handler and 404) with the kit mounted as the README says.
 * The journey (install, an authenticated API call, the uninstall webhook and its
 * purge) works, and the host is left as it was: its session counts (before or after
 * the kit, across an install), its requests write no kit session row, its routes keep
 * their own headers, its 404 and error handler answer. Then a body parser mounted
 * before the kit: found on the first request with the fix, and an uninstall it would
 * break is answered so the platform retries (503), not acknowledged.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import type { Express } from 'express';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import type { StoreAppKit } from '../../src/kit.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { storeApp } from '../../src/store-app.js';
import {
  type ExistingAppOptions,
  existingApp,
  HOST_COOKIE,
  HOST_CSP,
} from '../fixtures/existing-app/app.js';
import { Browser } from '../install/harness.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-guest-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

interface Guest {
  platform: Platform;
  kit: StoreAppKit;
  appUrl: string;
  clientId: string;
  storeId: string;
  dbFile: string;
  logs: Record<string, unknown>[];
  close(): Promise<void>;
}

/** The local platform and the host app (with the kit in it) on their own ports. */
async function startGuest(
  o: Omit<ExistingAppOptions, 'sessionSecret'> & { headersScope?: 'kit' | 'app' } = {},
): Promise<Guest> {
  const platform = await startPlatform({ logger: false });
  let app: Express | undefined;
  const server: Server = createServer((req, res) => app!(req, res));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const appUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const creds = platform.registerApp({
    name: 'Existing app',
    redirectUri: `${appUrl}/auth/callback`,
    webhookUrl: `${appUrl}/webhooks`,
    scopes: ['read_products'],
    appUrl,
  });
  const logs: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _e, cb) {
      for (const line of String(chunk).split('\n').filter(Boolean)) logs.push(JSON.parse(line));
      cb();
    },
  });
  const dbFile = join(dir, `guest-${++n}.db`);
  const kit = (await storeApp({
    appUrl,
    environment: 'test',
    oauth: {
      clientId: creds.clientId,
      clientSecret: creds.clientSecret,
      scopes: ['read_products'],
      authUrl: platform.authUrl,
    },
    storage: { databaseUrl: `file:${dbFile}`, encryptionKeys: [generateKey()] },
    session: { secret: randomBytes(32).toString('base64url') },
    webhooks: { secrets: creds.webhookSecret },
    refresh: { sweepIntervalMs: 0 },
    ...(o.headersScope ? { securityHeaders: { scope: o.headersScope } } : {}),
    logger: { instance: pino({ level: 'warn' }, destination) },
  })) as StoreAppKit;
  app = existingApp(kit, { ...o, sessionSecret: randomBytes(32).toString('base64url') });
  const { storeId } = platform.createStore({ name: 'Guest store', seed: 2 });
  return {
    platform,
    kit,
    appUrl,
    clientId: creds.clientId,
    storeId,
    dbFile,
    logs,
    async close() {
      server.closeAllConnections();
      server.close();
      await kit.close();
      await platform.close();
    },
  };
}

/** Install through the platform's consent, as the merchant's browser does. */
async function install(g: Guest, browser: Browser): Promise<void> {
  const begun = await browser.get(`${g.appUrl}/auth?store_id=${g.storeId}`);
  expect(begun.status).toBe(302);
  const callback = g.platform.approveInstall({
    authorizeUrl: begun.headers.get('location')!,
    storeId: g.storeId,
  });
  expect((await browser.get(callback)).status).toBe(302);
  expect(await g.kit.installations.get(g.storeId)).not.toBeNull();
}

/** The rows of the kit's sessions table (read from the SQLite file itself). */
function kitSessionRows(g: Guest): { data: string }[] {
  const db = new Database(g.dbFile, { readonly: true });
  try {
    return db.prepare('SELECT data FROM store_app_sessions').all() as { data: string }[];
  } finally {
    db.close();
  }
}

const json = { accept: 'application/json' };
const visits = async (b: Browser, g: Guest) =>
  ((await (await b.get(`${g.appUrl}/counter`, json)).json()) as { visits: number }).visits;

describe.each([
  ['after', false],
  ['before', true],
])('an existing Express app, its express-session mounted %s the kit', (_o, sessionBeforeKit) => {
  it('the journey works: install, an authenticated API call, the uninstall webhook and its purge', async () => {
    const g = await startGuest({ sessionBeforeKit });
    try {
      const browser = new Browser();
      await install(g, browser);
      // The kit's page, from the kit's own session cookie, with the kit's headers.
      const page = await browser.get(`${g.appUrl}/`, { accept: 'text/html' });
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toContain(
        `frame-ancestors ${g.platform.authUrl}`,
      );
      const { token } = await g.kit.sessionToken(g.storeId);
      const api = await fetch(`${g.appUrl}/api/products`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(api.status).toBe(200);
      expect(await api.json()).toEqual({ storeId: g.storeId, count: 2 });
      expect(api.headers.get('x-content-type-options')).toBe('nosniff');
      expect(api.headers.get('vary')).toMatch(/Authorization/);

      const { deliveryId } = g.platform.uninstall({ storeId: g.storeId, clientId: g.clientId });
      const [delivery] = await g.platform.waitForDeliveries({ clientId: g.clientId, count: 1 });
      expect(delivery?.id).toBe(deliveryId);
      expect(delivery?.attempts.at(-1)?.status).toBe(200);
      expect(await g.kit.installations.get(g.storeId)).toBeNull();
      expect(kitSessionRows(g)).toEqual([]);
    } finally {
      await g.close();
    }
  });

  it("the host's session counts, keeps counting across the merchant's install, and its data stays out of the kit's table", async () => {
    const g = await startGuest({ sessionBeforeKit });
    try {
      const browser = new Browser();
      expect(await visits(browser, g)).toBe(1);
      expect(browser.cookies.has(HOST_COOKIE)).toBe(true);
      expect(await visits(browser, g)).toBe(2);
      // The merchant installs in the same browser: the kit starts its own session (a new
      // id, against fixation) and leaves the host's alone.
      const hostCookie = browser.cookies.get(HOST_COOKIE)!.value;
      await install(g, browser);
      expect(browser.cookies.get(HOST_COOKIE)?.value).toBe(hostCookie);
      expect(browser.cookies.has('store_app.sid')).toBe(true);
      expect(await visits(browser, g)).toBe(3);
      // The kit's table holds the kit's session only: the store id, no host data.
      const rows = kitSessionRows(g);
      expect(rows).toHaveLength(1);
      const sess = JSON.parse(rows[0]!.data) as Record<string, unknown>;
      expect(sess['storeId']).toBe(g.storeId);
      expect(sess['visits']).toBeUndefined();
      // And the kit's page still knows the store from its own cookie.
      const page = await browser.get(`${g.appUrl}/`, { accept: 'text/html' });
      expect(page.status).toBe(200);
    } finally {
      await g.close();
    }
  });

  it("attack: a host session cookie planted in the merchant's browser never carries the store", async () => {
    const g = await startGuest({ sessionBeforeKit });
    try {
      // The attacker starts a host session and plants its cookie in the merchant's browser.
      const attacker = new Browser();
      expect(await visits(attacker, g)).toBe(1);
      const planted = attacker.cookies.get(HOST_COOKIE)!;
      const merchant = new Browser();
      merchant.cookies.set(HOST_COOKIE, planted);
      await install(g, merchant);
      expect((await merchant.get(`${g.appUrl}/`, { accept: 'text/html' })).status).toBe(200);
      // The store is bound to the kit's own new cookie only: the planted host session
      // (still the attacker's) opens nothing of the kit.
      const page = await attacker.get(`${g.appUrl}/`, json);
      expect(page.status).toBe(401);
      expect(((await page.json()) as { code: string }).code).toBe('SESSION_REQUIRED');
      const api = await attacker.get(`${g.appUrl}/api/products`, json);
      expect(api.status).toBe(401);
    } finally {
      await g.close();
    }
  });

  it("requests that never reach the kit's routes or authenticated() write no kit session row", async () => {
    const g = await startGuest({ sessionBeforeKit });
    try {
      for (let i = 0; i < 5; i++) expect(await visits(new Browser(), g)).toBe(1);
      const browser = new Browser();
      for (let i = 1; i <= 3; i++) expect(await visits(browser, g)).toBe(i);
      expect((await browser.get(`${g.appUrl}/index.html`)).status).toBe(200);
      expect(kitSessionRows(g)).toEqual([]);
    } finally {
      await g.close();
    }
  });
});

describe("the host's routes keep their own headers, 404 and error handler", () => {
  it("no kit header on the host's JSON, static page and script; the kit's set on its own routes", async () => {
    const g = await startGuest();
    try {
      const echo = await fetch(`${g.appUrl}/echo`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ a: 1 }),
      });
      expect(await echo.json()).toEqual({ body: { a: 1 } });
      for (const res of [
        echo,
        await fetch(`${g.appUrl}/index.html`),
        await fetch(`${g.appUrl}/app.js`),
        await fetch(`${g.appUrl}/counter`),
      ]) {
        expect(res.status).toBe(200);
        expect(res.headers.get('content-security-policy')).toBe(HOST_CSP);
        expect(res.headers.get('cross-origin-opener-policy')).toBeNull();
        expect(res.headers.get('referrer-policy')).toBeNull();
        expect(res.headers.get('x-frame-options')).toBeNull();
      }
      // The kit's own routes and what authenticated() guards carry the kit's set.
      const begin = await fetch(`${g.appUrl}/auth?store_id=${g.storeId}`, { redirect: 'manual' });
      const refused = await fetch(`${g.appUrl}/`, { headers: json });
      for (const res of [begin, refused]) {
        expect(res.headers.get('content-security-policy')).toContain('frame-ancestors');
        expect(res.headers.get('content-security-policy')).not.toBe(HOST_CSP);
        expect(res.headers.get('x-content-type-options')).toBe('nosniff');
        expect(res.headers.get('referrer-policy')).toBeTruthy();
      }
      // The host's 404 and error handler, unchanged.
      const missing = await fetch(`${g.appUrl}/nope`);
      expect(missing.status).toBe(404);
      expect(await missing.json()).toEqual({ host: 'not found' });
      const boom = await fetch(`${g.appUrl}/boom`);
      expect(boom.status).toBe(500);
      expect(await boom.json()).toEqual({ host: 'error handler' });
    } finally {
      await g.close();
    }
  });

  it("securityHeaders.scope 'app' extends the kit's set to the host's routes", async () => {
    const g = await startGuest({ headersScope: 'app' });
    try {
      const res = await fetch(`${g.appUrl}/index.html`);
      expect(res.headers.get('content-security-policy')).toContain(
        `frame-ancestors ${g.platform.authUrl}`,
      );
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    } finally {
      await g.close();
    }
  });
});

describe('a body parser mounted before the kit', () => {
  const consumedLogs = (g: Guest) =>
    g.logs.filter((l) => l['errorCode'] === 'WEBHOOK_BODY_CONSUMED' && l['level'] === 50);

  it('is found on the first request of any kind, with the fix, and an uninstall is answered 503 so the platform retries', async () => {
    const g = await startGuest({ parser: 'plain' });
    try {
      const browser = new Browser();
      // A host route, before any webhook: the message is logged now.
      expect(await visits(browser, g)).toBe(1);
      await expect.poll(() => consumedLogs(g).length).toBe(1);
      const [found] = consumedLogs(g);
      expect(String(found!['msg'])).toContain('keepRawBody');
      expect(found!['parsers']).toEqual(['jsonParser']);

      await install(g, browser);
      g.platform.uninstall({ storeId: g.storeId, clientId: g.clientId });
      const [pending] = await g.platform.waitForDeliveries({
        clientId: g.clientId,
        count: 1,
        attempts: 1,
      });
      // Not acknowledged: the delivery stays pending for the platform's next attempt.
      expect(pending?.attempts[0]?.status).toBe(503);
      expect(pending?.status).toBe('pending');
      // The same message, once: the check and the receiver share it.
      expect(new Set(consumedLogs(g).map((l) => l['msg'])).size).toBe(1);
    } finally {
      await g.close();
    }
  });

  it('with keepRawBody it is not a mistake: nothing logged, the uninstall purges', async () => {
    const g = await startGuest({ parser: 'keepRawBody' });
    try {
      const browser = new Browser();
      expect(await visits(browser, g)).toBe(1);
      await install(g, browser);
      g.platform.uninstall({ storeId: g.storeId, clientId: g.clientId });
      const [delivery] = await g.platform.waitForDeliveries({ clientId: g.clientId, count: 1 });
      expect(delivery?.attempts.at(-1)?.status).toBe(200);
      expect(await g.kit.installations.get(g.storeId)).toBeNull();
      expect(consumedLogs(g)).toEqual([]);
    } finally {
      await g.close();
    }
  });
});
