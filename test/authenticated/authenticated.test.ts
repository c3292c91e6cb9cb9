/**
 * `authenticated()` with supertest over the real local platform and SQLite
 * storage: how the store is found (session, app session token, launch token),
 * and what the merchant's browser or the frontend's fetch gets when the app
 * cannot act for the store.
 */
import { randomBytes } from 'node:crypto';
import express, { type Express } from 'express';
import session from 'express-session';
import { SignJWT } from 'jose';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLaunchVerifier, createSessionTokens } from '../../src/authenticated/index.js';
import { resolveAuthenticatedOptions } from '../../src/authenticated/options.js';
import { createClientFactory } from '../../src/client/factory.js';
import { resolveClientOptions } from '../../src/client/options.js';
import { StorageError } from '../../src/errors/index.js';
import type { TokenManager } from '../../src/refresh/manager.js';
import {
  createAuthenticated,
  sessionTokenHandler,
} from '../../src/shells/express/authenticated.js';
import type { Installation } from '../../src/storage/types.js';
import { createFixture, type Fixture } from '../client/setup.js';

const APP_URL = 'http://127.0.0.1:3000';
const SECRET = randomBytes(32).toString('base64url');
let fx: Fixture;
let platformCalls = 0;

function sessionTokensFor(secret = SECRET, ttlSeconds = 300) {
  return createSessionTokens({
    secrets: [secret],
    clientId: fx.clientId,
    issuer: APP_URL,
    ttlSeconds,
    clockToleranceSeconds: 0,
  });
}

function buildApp(
  o: {
    scopes?: string[];
    tokens?: Pick<TokenManager, 'getInstallation' | 'reload'>;
    startSession?: (req: express.Request, storeId: string) => Promise<void>;
  } = {},
): Express {
  const { tokens } = fx.runtime();
  const counting: typeof fetch = (url, init) => {
    platformCalls++;
    return fetch(url, init);
  };
  const clients = createClientFactory({
    options: resolveClientOptions({ baseUrl: fx.platform.apiUrl, fetch: counting }),
    tokens,
  });
  const authenticated = createAuthenticated({
    tokens: o.tokens ?? tokens,
    clients,
    scopes: o.scopes ?? ['read_products'],
    sessionTokens: sessionTokensFor(),
    launch: {
      param: 'launch',
      verifier: createLaunchVerifier({
        clientSecret: fx.clientSecret,
        clientId: fx.clientId,
        issuer: fx.platform.authUrl,
        clockToleranceSeconds: 0,
      }),
    },
    startSession:
      o.startSession ??
      (async (req, storeId) => {
        await new Promise<void>((r, j) => req.session.regenerate((e) => (e ? j(e) : r())));
        req.session.storeId = storeId;
      }),
    beginUrl: `${APP_URL}/auth`,
    options: resolveAuthenticatedOptions(),
  });
  const app = express();
  app.use(session({ secret: SECRET, resave: false, saveUninitialized: false }));
  // Test-only stand-in for the install callback, which binds the session to a store.
  app.get('/test-login', (req, res) => {
    req.session.storeId = String(req.query.store_id);
    res.send('ok');
  });
  app.get('/page', authenticated(), (_req, res) => {
    res.json({ storeId: res.locals.store.storeId, scopes: res.locals.store.scopes });
  });
  app.get('/api/products', authenticated(), async (_req, res) => {
    const page = await res.locals.store.client.products.list({ limit: 1 });
    res.json({ n: page.data.length });
  });
  app.get('/auth/session-token', authenticated(), sessionTokenHandler());
  return app;
}

beforeAll(async () => {
  fx = await createFixture();
});
afterAll(async () => {
  await fx?.close();
});

const navigate = {
  accept: 'text/html',
  'sec-fetch-mode': 'navigate',
  'sec-fetch-dest': 'document',
};
const xhr = { accept: 'application/json', 'sec-fetch-mode': 'cors' };
/** The admin's iframe loading the app: the only place a launch token is honoured. */
const framed = { ...navigate, 'sec-fetch-dest': 'iframe' };

describe('finding the store', () => {
  it('uses the session set by the install callback, with no platform call', async () => {
    const inst = await fx.install();
    const agent = request.agent(buildApp());
    await agent.get(`/test-login?store_id=${inst.storeId}`).expect(200);
    const before = platformCalls;
    const refreshes = fx.refreshCalls();
    const res = await agent.get('/page').set(navigate).expect(200);
    expect(res.body).toEqual({ storeId: inst.storeId, scopes: inst.scopes });
    expect(platformCalls).toBe(before);
    expect(fx.refreshCalls()).toBe(refreshes);
  });

  it('accepts an app session token and gives the route a working client', async () => {
    const inst = await fx.install({ seed: 2 });
    const { token } = await sessionTokensFor().mint(inst.storeId, {
      installedAt: inst.installedAt.getTime(),
    });
    const res = await request(buildApp())
      .get('/api/products')
      .set('authorization', `Bearer ${token}`)
      .expect(200);
    expect(res.body).toEqual({ n: 1 });
  });

  it('mints session tokens for a cookie-authenticated page', async () => {
    const inst = await fx.install();
    const agent = request.agent(buildApp());
    await agent.get(`/test-login?store_id=${inst.storeId}`).expect(200);
    const res = await agent.get('/auth/session-token').set(xhr).expect(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(await sessionTokensFor().verify(res.body.token)).toBe(inst.storeId);
  });

  it('refuses expired, forged and foreign-audience tokens with 401 JSON', async () => {
    const inst = await fx.install();
    const app = buildApp();
    const expired = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(APP_URL)
      .setAudience(fx.clientId)
      .setSubject(inst.storeId)
      .setIssuedAt(Math.floor(Date.now() / 1000) - 600)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 300)
      .sign(new Uint8Array(32));
    // Signed with the right key derivation but expired:
    const realExpired = await sessionTokensFor(SECRET, 10).mint(inst.storeId, {
      installedAt: inst.installedAt.getTime(),
    });
    const forged = (
      await sessionTokensFor(randomBytes(32).toString('base64url')).mint(inst.storeId, {
        installedAt: inst.installedAt.getTime(),
      })
    ).token;
    const cases: Array<[string, string]> = [
      [forged, 'SESSION_TOKEN_INVALID'],
      [expired, 'SESSION_TOKEN_INVALID'],
      ['not.a.jwt', 'SESSION_TOKEN_INVALID'],
    ];
    for (const [token, code] of cases) {
      const res = await request(app)
        .get('/page')
        .set('authorization', `Bearer ${token}`)
        .expect(401);
      expect(res.body.code).toBe(code);
      expect(JSON.stringify(res.body)).not.toContain(token);
    }
    const verifier = sessionTokensFor(SECRET, 10);
    // Verified once (and remembered), then expired: the memory must not outlive exp.
    expect(await verifier.verify(realExpired.token)).toBe(inst.storeId);
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 60_000);
      await expect(verifier.verify(realExpired.token)).rejects.toMatchObject({
        code: 'SESSION_TOKEN_EXPIRED',
      });
    } finally {
      vi.useRealTimers();
    }
    const other = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(APP_URL)
      .setAudience('someone-else')
      .setSubject(inst.storeId)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(new Uint8Array(32));
    await request(app).get('/page').set('authorization', `Bearer ${other}`).expect(401);
  });

  it('starts a session from the admin launch token, once', async () => {
    const inst = await fx.install();
    const launch = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(fx.platform.authUrl)
      .setAudience(fx.clientId)
      .setSubject(inst.storeId)
      .setIssuedAt()
      .setExpirationTime('60s')
      .setJti(randomBytes(8).toString('hex'))
      .sign(new TextEncoder().encode(fx.clientSecret));
    const app = buildApp();
    const agent = request.agent(app);
    const res = await agent
      .get(`/page?store_id=${inst.storeId}&embedded=1&launch=${launch}`)
      .set(framed)
      .expect(200);
    expect(res.body.storeId).toBe(inst.storeId);
    // The session now carries the store: no launch needed.
    await agent.get('/page').set(navigate).expect(200);
    // A replayed launch link starts nothing on a fresh browser.
    const replay = await request(app)
      .get(`/page?store_id=${inst.storeId}&embedded=1&launch=${launch}`)
      .set(xhr);
    expect(replay.status).toBe(401);
  });
});

function launchToken(storeId: string, o: { jti?: string | null } = {}) {
  const jwt = new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(fx.platform.authUrl)
    .setAudience(fx.clientId)
    .setSubject(storeId)
    .setIssuedAt()
    .setExpirationTime('60s');
  if (o.jti !== null) jwt.setJti(o.jti ?? randomBytes(8).toString('hex'));
  return jwt.sign(new TextEncoder().encode(fx.clientSecret));
}

describe('session token configuration', () => {
  it('refuses to build without a secret, with a ConfigError code', () => {
    expect(() =>
      createSessionTokens({
        secrets: [],
        clientId: 'c',
        issuer: APP_URL,
        ttlSeconds: 300,
        clockToleranceSeconds: 0,
      }),
    ).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
  });
});

describe('authorization schemes', () => {
  it('ignores a non-Bearer Authorization header (a proxy Basic auth) and uses the session', async () => {
    const inst = await fx.install();
    const agent = request.agent(buildApp());
    await agent.get(`/test-login?store_id=${inst.storeId}`).expect(200);
    const res = await agent
      .get('/page')
      .set(xhr)
      .set('authorization', `Basic ${Buffer.from('staging:pw').toString('base64')}`)
      .expect(200);
    expect(res.body.storeId).toBe(inst.storeId);
    // An empty Bearer is still refused, never silently replaced by the cookie.
    const bad = await agent.get('/page').set(xhr).set('authorization', 'Bearer ').expect(401);
    expect(bad.body.code).toBe('SESSION_TOKEN_INVALID');
  });
});

describe('launch token edge cases', () => {
  it('refuses a launch token without jti (it could not be refused on replay)', async () => {
    const inst = await fx.install();
    const launch = await launchToken(inst.storeId, { jti: null });
    const app = buildApp();
    for (let i = 0; i < 2; i++) {
      const res = await request(app)
        .get(`/page?store_id=${inst.storeId}&embedded=1&launch=${launch}`)
        .set(xhr);
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('SESSION_REQUIRED');
    }
  });

  it('a session store failure while starting the session is 503, not the old session', async () => {
    const a = await fx.install();
    const b = await fx.install();
    const app = buildApp({
      startSession: async () => {
        throw new Error('session store down');
      },
    });
    const agent = request.agent(app);
    // The browser already has a session for store a; the admin now launches store b.
    await agent.get(`/test-login?store_id=${a.storeId}`).expect(200);
    const res = await agent
      .get(`/page?store_id=${b.storeId}&launch=${await launchToken(b.storeId)}`)
      .set(xhr);
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('STORAGE_UNAVAILABLE');
    expect(JSON.stringify(res.body)).not.toContain('session store down');
  });
});

describe('when the app cannot act for the store', () => {
  it('not installed: a page load is redirected through /auth, fetch gets 401 JSON + header', async () => {
    const { storeId } = fx.platform.createStore();
    const agent = request.agent(buildApp());
    await agent.get(`/test-login?store_id=${storeId}`).expect(200);
    const page = await agent.get('/page').set(navigate).expect(302);
    expect(page.headers.location).toBe(`${APP_URL}/auth?store_id=${storeId}`);
    const api = await agent.get('/page').set(xhr).expect(401);
    expect(api.body.code).toBe('NOT_INSTALLED');
    expect(api.body.message).toBeTypeOf('string');
    expect(api.headers['x-store-app-reauthorize']).toBe(`${APP_URL}/auth?store_id=${storeId}`);
  });

  it('no session at all: 302 for a page, 401 SESSION_REQUIRED for fetch', async () => {
    const app = buildApp();
    const page = await request(app).get('/page').set(navigate).expect(302);
    expect(page.headers.location).toBe(`${APP_URL}/auth`);
    const api = await request(app).get('/page').set({ 'x-requested-with': 'XMLHttpRequest' });
    expect(api.status).toBe(401);
    expect(api.body.code).toBe('SESSION_REQUIRED');
  });

  it('inside the admin iframe, breaks out to the top window', async () => {
    const { storeId } = fx.platform.createStore();
    const res = await request(buildApp())
      .get(`/page?store_id=${storeId}&embedded=1`)
      .set({ ...navigate, 'sec-fetch-dest': 'iframe' })
      .expect(200);
    expect(res.text).toContain('target="_top"');
    expect(res.text).toContain('window.top.location.href');
    const nonce = /nonce="([^"]+)"/.exec(res.text)?.[1];
    expect(res.headers['content-security-policy']).toContain(`'nonce-${nonce}'`);
  });

  it('inside the iframe, the reauthorisation page is styled, says why and leaves in one click', async () => {
    const iframe = { ...navigate, 'sec-fetch-dest': 'iframe' };
    const page = async (agent: ReturnType<typeof request.agent>, storeId?: string) => {
      const res = await agent.get(`/page${storeId ? `?store_id=${storeId}` : ''}`).set(iframe);
      expect(res.status).toBe(200);
      const csp = res.headers['content-security-policy'] as string;
      const nonce = /'nonce-([^']+)'/.exec(csp)?.[1];
      // The kit's stylesheet and its one script, allowed by this response's nonce only.
      expect(csp).toContain(`style-src 'nonce-${nonce}'`);
      expect(res.text).toContain(`<style nonce="${nonce}">`);
      expect(res.text).toContain(`<script nonce="${nonce}">`);
      // One click: a real button-styled link that opens the install at top level.
      const button = /<a class="button" id="go" href="([^"]+)" target="_top">Continue<\/a>/.exec(
        res.text,
      );
      expect(button?.[1]?.replace(/&#38;/g, '&')).toBe(
        `${APP_URL}/auth${storeId ? `?store_id=${storeId}` : ''}`,
      );
      return res.text;
    };
    // Not installed (uninstalled and purged).
    const gone = await fx.install();
    const goneAgent = request.agent(buildApp());
    await goneAgent.get(`/test-login?store_id=${gone.storeId}`).expect(200);
    await fx.storage.purge(gone.storeId, { tables: [] });
    expect(await page(goneAgent, gone.storeId)).toContain('not installed in this store');
    // Scopes grown since the install.
    const narrow = await fx.install({ scopes: ['read_products'] });
    const wideAgent = request.agent(buildApp({ scopes: ['read_products', 'read_orders'] }));
    await wideAgent.get(`/test-login?store_id=${narrow.storeId}`).expect(200);
    expect(await page(wideAgent, narrow.storeId)).toContain('needs access you have not granted');
    // The grant revoked (a refresh refused for good).
    const revoked = await fx.install();
    const revokedAgent = request.agent(buildApp());
    await revokedAgent.get(`/test-login?store_id=${revoked.storeId}`).expect(200);
    await fx.storage.installations.markNeedsReauth(revoked.storeId);
    expect(await page(revokedAgent, revoked.storeId)).toContain('no longer accepts');
    // No session at all.
    expect(await page(request.agent(buildApp()))).toContain('Your session with this app has ended');
  });

  it('uninstalled (purged) and needsReauth send the merchant through the install', async () => {
    const a = await fx.install();
    const b = await fx.install();
    await fx.storage.purge(a.storeId, { tables: [] });
    await fx.storage.installations.markNeedsReauth(b.storeId);
    const app = buildApp();
    for (const [inst, code] of [
      [a, 'NOT_INSTALLED'],
      [b, 'REAUTHORIZATION_REQUIRED'],
    ] as const) {
      const { token } = await sessionTokensFor().mint(inst.storeId, {
        installedAt: inst.installedAt.getTime(),
      });
      const res = await request(app)
        .get('/page')
        .set('authorization', `Bearer ${token}`)
        .expect(401);
      expect(res.body.code).toBe(code);
      expect(res.headers['x-store-app-reauthorize']).toContain(inst.storeId);
    }
  });

  it('scopes grown since install: reinstall', async () => {
    const inst = await fx.install({ scopes: ['read_products'] });
    const agent = request.agent(buildApp({ scopes: ['read_products', 'read_orders'] }));
    await agent.get(`/test-login?store_id=${inst.storeId}`).expect(200);
    const page = await agent.get('/page').set(navigate).expect(302);
    expect(page.headers.location).toContain(`store_id=${inst.storeId}`);
    const api = await agent.get('/page').set(xhr).expect(401);
    expect(api.body.code).toBe('SCOPES_CHANGED');
  });

  it('storage down: 503, not a redirect', async () => {
    const failing = {
      getInstallation: async (): Promise<Installation> => {
        throw new StorageError('database unreachable');
      },
      reload: async (): Promise<Installation> => {
        throw new StorageError('database unreachable');
      },
    };
    const { token } = await sessionTokensFor().mint('store-x', { installedAt: 0 });
    const res = await request(buildApp({ tokens: failing }))
      .get('/page')
      .set('authorization', `Bearer ${token}`)
      .expect(503);
    expect(res.body.code).toBe('STORAGE_UNAVAILABLE');
    expect(res.headers['retry-after']).toBe('5');

    // The merchant opening the page gets the kit's styled page, without detail.
    const agent = request.agent(buildApp({ tokens: failing }));
    await agent.get('/test-login?store_id=store-x').expect(200);
    const page = await agent.get('/page').set(navigate).expect(503);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.headers['x-store-app-error']).toBe('STORAGE_UNAVAILABLE');
    expect(page.text).toContain('<h1>Temporarily unavailable</h1>');
    expect(page.text).not.toContain('database unreachable');
    const nonce = /<style nonce="([^"]+)">/.exec(page.text)?.[1];
    expect(page.headers['content-security-policy']).toContain(`style-src 'nonce-${nonce}'`);
  });
});
