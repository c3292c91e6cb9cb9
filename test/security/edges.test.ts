/**
 * Issue 11 item 5, the smaller edges: one named test per attack, against the
 * kit and the local platform over real sockets. docs/security.md lists each
 * with where it is stopped.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import express from 'express';
import { SignJWT } from 'jose';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { INSTALL_ERROR_CODES as E } from '../../src/install/errors.js';
import { signLaunchToken } from '../../src/platform/admin/launch.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { storeApp } from '../../src/store-app.js';
import { Browser, type Harness, startHarness } from '../install/harness.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-edges-'));
let platform: Platform;

/** `GET /app` behind `authenticated()`: who the request acts for. */
function appRoute(app: express.Express, kit: Harness['kit']): void {
  app.get('/app', kit.authenticated(), (_req, res) => {
    res.json({ storeId: res.locals.store.storeId, missingScopes: res.locals.store.missingScopes });
  });
}

beforeAll(async () => {
  platform = await startPlatform();
});
afterAll(async () => {
  await platform?.close();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(() => {
  vi.useRealTimers();
});

/** Begins an install in `browser`, approves it on the platform, returns the callback answer. */
async function install(
  h: Harness,
  browser: Browser,
  o: { storeId?: string; path?: string; grantScopes?: string[] } = {},
): Promise<Response> {
  const storeId = o.storeId ?? h.storeId;
  const begun = await browser.get(`${h.appUrl}${o.path ?? `/auth?store_id=${storeId}`}`);
  expect(begun.status).toBe(302);
  const callbackUrl = platform.approveInstall({
    authorizeUrl: begun.headers.get('location')!,
    storeId,
    ...(o.grantScopes ? { grantScopes: o.grantScopes } : {}),
  });
  return browser.get(callbackUrl);
}

async function sessionStore(h: Harness, browser: Browser): Promise<string | null> {
  const res = await browser.get(`${h.appUrl}/`);
  return ((await res.json()) as { storeId: string | null }).storeId;
}

/** A GET over node:http, headers exactly as given (Host and Sec-Fetch-* included). */
function rawGet(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string; location: string | undefined }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = httpRequest(
      { host: u.hostname, port: u.port, path: u.pathname + u.search, method: 'GET', headers },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body, location: res.headers.location }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function count(file: string, table: string): number {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare(`select count(*) as n from ${table}`).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

describe('app session lifetime', () => {
  it('absolute session lifetime: renewing through GET /auth/session-token never outlives session.maxAgeSeconds', async () => {
    const h = await startHarness({
      databaseUrl: join(dir, 'lifetime.db'),
      platform,
      kit: {
        embedded: { enabled: false },
        session: { maxAgeSeconds: 3600 },
        authenticated: { sessionTokenTtlSeconds: 300 },
      },
      routes: appRoute,
    });
    try {
      const browser = new Browser();
      expect((await install(h, browser)).status).toBe(302);
      const first = await browser.get(`${h.appUrl}/auth/session-token`, {
        'sec-fetch-mode': 'cors',
      });
      expect(first.status).toBe(200);
      let { token } = (await first.json()) as { token: string };
      const started = Date.now();
      vi.useFakeTimers({ toFake: ['Date'], now: started });
      // The frontend renews every 4 minutes with its current token, for 31 days if allowed.
      let renewals = 0;
      let last: Response | undefined;
      for (let minute = 4; minute <= 31 * 24 * 60; minute += 4) {
        vi.setSystemTime(started + minute * 60_000);
        last = await fetch(`${h.appUrl}/auth/session-token`, {
          headers: { authorization: `Bearer ${token}` },
        });
        if (last.status !== 200) break;
        const body = (await last.json()) as { token: string; expiresAt: string };
        // No renewed token reaches past the session's end.
        expect(Date.parse(body.expiresAt)).toBeLessThanOrEqual(started + 3600_000 + 1000);
        token = body.token;
        renewals++;
      }
      if (last?.status !== 401)
        console.log(last?.status, await last?.text(), h.logs.slice(-3).join(''));
      expect(last?.status).toBe(401);
      expect(((await last!.json()) as { code: string }).code).toBe('SESSION_LIFETIME_EXCEEDED');
      expect(renewals).toBeLessThanOrEqual(15);
      // The cookie session ends at the same point, however active it was.
      const page = await browser.get(`${h.appUrl}/app`, { 'sec-fetch-mode': 'cors' });
      expect(page.status).toBe(401);
      expect(page.headers.get('x-store-app-reauthorize')).toContain('/auth');
    } finally {
      vi.useRealTimers();
      await h.close();
    }
  });
});

describe('login CSRF', () => {
  let h: Harness;
  let storeB: string;
  beforeAll(async () => {
    h = await startHarness({ databaseUrl: join(dir, 'csrf.db'), platform, routes: appRoute });
    storeB = platform.createStore({ name: 'Attacker store' }).storeId;
  });
  afterAll(async () => {
    await h?.close();
  });

  const launchFor = (storeId: string, o: { secret?: string; audience?: string } = {}) =>
    signLaunchToken({
      issuer: platform.authUrl,
      clientId: o.audience ?? h.clientId,
      clientSecret: o.secret ?? h.clientSecret,
      storeId,
    });
  const framed = { 'sec-fetch-dest': 'iframe', 'sec-fetch-mode': 'navigate', accept: 'text/html' };
  const topLevel = {
    'sec-fetch-dest': 'document',
    'sec-fetch-mode': 'navigate',
    'sec-fetch-site': 'cross-site',
    accept: 'text/html',
  };

  it('login CSRF: crafted requests for store B never switch a browser signed in to store A', async () => {
    // The attacker owns store B, with the app installed, and can mint its callback URLs.
    const attacker = new Browser();
    expect((await install(h, attacker, { storeId: storeB })).status).toBe(302);
    const victim = new Browser();
    expect((await install(h, victim)).status).toBe(302);
    expect(await sessionStore(h, victim)).toBe(h.storeId);

    const expired = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(platform.authUrl)
      .setAudience(h.clientId)
      .setSubject(storeB)
      .setIssuedAt(Math.floor(Date.now() / 1000) - 600)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 540)
      .setJti(randomBytes(8).toString('hex'))
      .sign(new TextEncoder().encode(h.clientSecret));
    const attempts: Array<[string, string, Record<string, string>]> = [
      // A genuine launch token for B, handed out as a top-level link (not the admin's frame).
      ['genuine token, top-level link', await launchFor(storeB), topLevel],
      ['forged signature', await launchFor(storeB, { secret: 'x'.repeat(40) }), framed],
      ['another app', await launchFor(storeB, { audience: 'other-client' }), framed],
      ['expired', expired, framed],
    ];
    for (const [what, token, headers] of attempts) {
      const res = await victim.get(
        `${h.appUrl}/app?store_id=${storeB}&embedded=1&launch=${token}`,
        headers,
      );
      const body = res.status === 200 ? ((await res.json()) as { storeId: string }) : null;
      expect(body?.storeId, what).not.toBe(storeB);
      expect(await sessionStore(h, victim), what).toBe(h.storeId);
    }
    // store_id alone sends the merchant through the install, it switches nothing. (Raw
    // HTTP: fetch would replace Sec-Fetch-Mode with its own `cors`.)
    const sid = victim.cookies.get('store_app.sid')!.value;
    const byParam = await rawGet(`${h.appUrl}/app?store_id=${storeB}`, {
      ...topLevel,
      cookie: `store_app.sid=${sid}`,
    });
    expect(byParam.status).toBe(302);
    expect(byParam.location).toBe(`${h.appUrl}/auth?store_id=${storeB}`);
    expect(await sessionStore(h, victim)).toBe(h.storeId);
    // The attacker's own install callback for B, opened in the victim's browser.
    const begun = await attacker.get(`${h.appUrl}/auth?store_id=${storeB}`);
    const attackerCallback = platform.approveInstall({
      authorizeUrl: begun.headers.get('location')!,
      storeId: storeB,
    });
    const cb = await victim.get(attackerCallback);
    expect(cb.status).toBe(400);
    expect([E.BINDING_MISSING, E.STATE_INVALID]).toContain(cb.headers.get('x-store-app-error'));
    expect(await sessionStore(h, victim)).toBe(h.storeId);

    // Control: a genuine launch in the admin's frame does switch (the merchant owns B).
    const owner = new Browser();
    expect((await install(h, owner)).status).toBe(302);
    const ok = await owner.get(
      `${h.appUrl}/app?store_id=${storeB}&embedded=1&launch=${await launchFor(storeB)}`,
      framed,
    );
    expect(ok.status).toBe(200);
    expect(await sessionStore(h, owner)).toBe(storeB);
  });
});

describe('open redirect through return_to', () => {
  let plain: Harness;
  beforeAll(async () => {
    plain = await startHarness({
      databaseUrl: join(dir, 'redirect.db'),
      platform,
      kit: { embedded: { enabled: false } },
    });
  });
  afterAll(async () => {
    await plain?.close();
  });

  it('return_to is normalised before it is checked: dot segments, double encoding, backslashes, absolute URLs never leave the app', async () => {
    const app = new URL(plain.appUrl);
    for (const target of [
      '/..//evil.example',
      '/.%2e//evil.example',
      '/%2e%2e//evil.example',
      '/%252e%252e//evil.example',
      '/a/../..//evil.example/x',
      '/%2f%2fevil.example',
      '/%5c%5cevil.example',
      '/\\\\evil.example',
      '/.\\/evil.example',
      `${plain.appUrl}//evil.example`,
      'https://evil.example/',
      '/x%0d%0aLocation:%20https://evil.example',
      '/\u0000//evil.example',
    ]) {
      const callback = await install(plain, new Browser(), {
        path: `/auth?store_id=${plain.storeId}&return_to=${encodeURIComponent(target)}`,
      });
      expect(callback.status, target).toBe(302);
      const location = callback.headers.get('location')!;
      const landed = new URL(location);
      expect(landed.origin, target).toBe(app.origin);
      // A landing path of `//evil.example` is what a later relative redirect sends off-site.
      expect(landed.pathname.startsWith('//'), `${target} → ${location}`).toBe(false);
      expect(landed.pathname, target).not.toContain('evil.example');
    }
    // Ordinary targets still land where asked, dot segments resolved.
    const ok = await install(plain, new Browser(), {
      path: `/auth?store_id=${plain.storeId}&return_to=${encodeURIComponent('/orders/../settings?tab=1')}`,
    });
    expect(ok.headers.get('location')).toBe(`${plain.appUrl}/settings?tab=1`);
  });
});

describe('security headers', () => {
  async function kitWith(
    securityHeaders: Record<string, unknown>,
    embedded: boolean,
  ): Promise<{ app: express.Express; logs: string[]; close: () => Promise<void> }> {
    const logs: string[] = [];
    const kit = await storeApp({
      appUrl: 'https://app.example',
      environment: 'test',
      oauth: {
        clientId: 'c',
        clientSecret: 's',
        scopes: ['read_products'],
        authUrl: 'https://admin.example',
      },
      storage: {
        databaseUrl: join(dir, `headers-${randomBytes(4).toString('hex')}.db`),
        encryptionKeys: [generateKey()],
      },
      session: { secret: randomBytes(32).toString('base64url') },
      webhooks: { secrets: `whsec_${randomBytes(32).toString('base64')}` },
      embedded: { enabled: embedded },
      securityHeaders,
      logger: {
        instance: pino(
          { level: 'warn' },
          new Writable({
            write(chunk, _e, cb) {
              logs.push(String(chunk));
              cb();
            },
          }),
        ),
      },
    });
    const app = express();
    app.use(kit.middleware());
    return { app, logs, close: () => kit.close() };
  }

  it('clickjacking: no helmet option removes frame-ancestors; an explicit opt-out warns at start', async () => {
    for (const embedded of [true, false]) {
      const expected = embedded
        ? 'frame-ancestors https://admin.example'
        : "frame-ancestors 'none'";
      for (const helmet of [
        { contentSecurityPolicy: false },
        { contentSecurityPolicy: { reportOnly: true } },
        { contentSecurityPolicy: { directives: { 'frame-ancestors': ['*'] } } },
        { contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'self'"] } } },
        { xFrameOptions: false },
      ]) {
        const k = await kitWith({ helmet }, embedded);
        try {
          const res = await request(k.app).get('/auth');
          const csp = String(res.headers['content-security-policy'] ?? '');
          expect(csp, JSON.stringify(helmet)).toContain(expected);
          expect(csp, JSON.stringify(helmet)).not.toContain('frame-ancestors *');
          if (!embedded) expect(res.headers['x-frame-options']).toBe('DENY');
          expect(k.logs.join('')).not.toContain('clickjacking');
        } finally {
          await k.close();
        }
      }
    }
    // An explicit opt-out is honoured, and said out loud at start.
    for (const opt of [{ framing: 'unprotected' }, { enabled: false }]) {
      const k = await kitWith(opt, true);
      try {
        const res = await request(k.app).get('/auth');
        expect(String(res.headers['content-security-policy'] ?? '')).not.toContain(
          'frame-ancestors',
        );
        expect(k.logs.join('')).toMatch(/"level":40.*clickjacking/);
      } finally {
        await k.close();
      }
    }
  });
});

describe('narrower grants', () => {
  it('granted scopes narrower than requested: refused by default; with narrowerScopes record, stored as granted and surfaced', async () => {
    const strict = await startHarness({
      databaseUrl: join(dir, 'scopes-refuse.db'),
      platform,
      kit: { embedded: { enabled: false } },
    });
    try {
      const res = await install(strict, new Browser(), { grantScopes: ['read_products'] });
      expect(res.status).toBe(403);
      expect(res.headers.get('x-store-app-error')).toBe(E.SCOPES_NOT_GRANTED);
      expect(await strict.kit.installations.get(strict.storeId)).toBeNull();
      expect(strict.logs.join('')).toContain('fewer scopes than requested');
    } finally {
      await strict.close();
    }

    const lenient = await startHarness({
      databaseUrl: join(dir, 'scopes-record.db'),
      platform,
      kit: { embedded: { enabled: false }, auth: { narrowerScopes: 'record' } },
      routes: appRoute,
    });
    try {
      const browser = new Browser();
      const res = await install(lenient, browser, { grantScopes: ['read_products'] });
      expect(res.status).toBe(302);
      const stored = await lenient.kit.installations.get(lenient.storeId);
      expect(stored?.scopes).toEqual(['read_products']);
      expect(lenient.kit.installations.hasRequiredScopes(stored!)).toBe(false);
      const page = await browser.get(`${lenient.appUrl}/app`, { 'sec-fetch-mode': 'cors' });
      expect(page.status).toBe(200);
      expect(await page.json()).toEqual({
        storeId: lenient.storeId,
        missingScopes: ['read_orders'],
      });
      expect(lenient.logs.join('')).toMatch(/fewer scopes than requested.*|missingScopes/);
    } finally {
      await lenient.close();
    }
  });
});

describe('GET /auth flood', () => {
  it('GET /auth flood: 5,000 unauthenticated begins store nothing; installs still complete, begun in two tabs at once, each state once', async () => {
    const file = join(dir, 'flood.db');
    const h = await startHarness({ databaseUrl: file, platform });
    try {
      const tables = ['store_app_claims', 'store_app_sessions'];
      const before = tables.map((t) => count(file, t));
      const sizeBefore = statSync(file).size;
      let next = 0;
      const statuses = new Map<number, number>();
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < 5000) {
            next++;
            const res = await fetch(`${h.appUrl}/auth?store_id=${h.storeId}`, {
              redirect: 'manual',
            });
            await res.arrayBuffer();
            statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          }
        }),
      );
      expect(statuses.get(302)).toBeGreaterThanOrEqual(5000);
      expect(tables.map((t) => count(file, t))).toEqual(before);
      expect(statSync(file).size).toBe(sizeBefore);

      // Two tabs of one browser begin installs before either finishes.
      const browser = new Browser();
      const tab1 = await browser.get(`${h.appUrl}/auth?store_id=${h.storeId}`);
      const tab2 = await browser.get(`${h.appUrl}/auth?store_id=${h.storeId}`);
      const cb1 = platform.approveInstall({
        authorizeUrl: tab1.headers.get('location')!,
        storeId: h.storeId,
      });
      const cb2 = platform.approveInstall({
        authorizeUrl: tab2.headers.get('location')!,
        storeId: h.storeId,
      });
      const pendingCookie = browser.cookies.get('store_app_oauth')!.value;
      expect((await browser.get(cb2)).status).toBe(302);
      expect((await browser.get(cb1)).status).toBe(302);
      expect(await h.kit.installations.get(h.storeId)).not.toBeNull();
      // Replaying a used state with the cookie that still listed it: refused (single use).
      const replay = await fetch(cb1, {
        redirect: 'manual',
        headers: { cookie: `store_app_oauth=${pendingCookie}` },
      });
      expect(replay.status).toBe(400);
      expect(replay.headers.get('x-store-app-error')).toBe(E.STATE_INVALID);
    } finally {
      await h.close();
    }
  }, 120_000);
});

describe('local platform Host check', () => {
  it('DNS rebinding: the local platform answers a foreign Host with 4xx and no secret; loopback names and allowedHosts work', async () => {
    const creds = platform.registerApp({
      name: 'Rebinding target',
      redirectUri: 'http://127.0.0.1:9/auth/callback',
      webhookUrl: 'http://127.0.0.1:9/webhooks',
      scopes: ['read_products'],
    });
    const port = new URL(platform.url).port;
    for (const path of [
      '/dashboard',
      `/dashboard/apps/${creds.clientId}`,
      '/admin',
      '/api/v1/products',
    ]) {
      for (const host of ['evil.example', `evil.example:${port}`, 'localhost.evil.example']) {
        const res = await rawGet(`${platform.url}${path}`, { host });
        expect(res.status, `${host} ${path}`).toBeGreaterThanOrEqual(400);
        expect(res.status, `${host} ${path}`).toBeLessThan(500);
        expect(res.body).not.toContain(creds.clientSecret);
        expect(res.body).not.toContain(creds.webhookSecret);
      }
    }
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
      const res = await rawGet(`${platform.url}/dashboard/apps/${creds.clientId}`, { host });
      expect(res.status, host).toBe(200);
    }
    const named = await startPlatform({ allowedHosts: ['dev.example'] });
    try {
      const res = await rawGet(`${named.url}/dashboard`, {
        host: `dev.example:${new URL(named.url).port}`,
      });
      expect(res.status).toBe(200);
      expect((await rawGet(`${named.url}/dashboard`, { host: 'evil.example' })).status).toBe(421);
    } finally {
      await named.close();
    }
  });

  it('non-loopback bind: the local platform warns loudly at start', async () => {
    const lines: string[] = [];
    const logger = pino(
      { level: 'warn' },
      new Writable({
        write(chunk, _e, cb) {
          lines.push(String(chunk));
          cb();
        },
      }),
    );
    const open = await startPlatform({ host: '0.0.0.0', logger });
    await open.close();
    expect(lines.join('')).toMatch(/"level":40.*not a loopback address/);
    const quiet: string[] = [];
    const local = await startPlatform({
      logger: pino(
        { level: 'warn' },
        new Writable({
          write(chunk, _e, cb) {
            quiet.push(String(chunk));
            cb();
          },
        }),
      ),
    });
    await local.close();
    expect(quiet.join('')).not.toContain('loopback');
  });
});
