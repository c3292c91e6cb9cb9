/**
 * The core `authenticate()` walked outcome by outcome without a server: a
 * `CoreRequest` described by hand (headers, query, a session in memory), the
 * kit's real session tokens, an installation in memory. Each row checks the
 * decision (store, or status, code and headers of the answer). The same flows
 * over real sockets: test/authenticated (Express) and test/shells (Fetch).
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { type AuthDecision, createAuthenticate } from '../../src/authenticated/authenticate.js';
import { createSessionTokens, SessionTokenError } from '../../src/authenticated/index.js';
import { NotInstalledError } from '../../src/client/errors.js';
import type { StoreApiClient } from '../../src/client/index.js';
import type { CoreRequest, CoreResponse, CoreSessionData } from '../../src/core/http.js';
import { StorageError } from '../../src/errors/index.js';
import { RefreshClientRejectedError } from '../../src/refresh/errors.js';

const STORE = '6f1c1a52-7a4e-4d2b-9a43-0c3f2b1e9d10';
const OTHER = '0b6f7a11-2c3d-4e5f-8a9b-1c2d3e4f5a6b';
const BEGIN = 'https://app.example/auth';
const ANCESTORS = 'frame-ancestors https://admin.example';
const INSTALLED_AT = 1_700_000_000_000;
const sessionTokens = createSessionTokens({
  secrets: ['x'.repeat(32)],
  clientId: 'app',
  issuer: 'https://app.example',
  ttlSeconds: 300,
  clockToleranceSeconds: 0,
});

interface Fake {
  headers?: Record<string, string>;
  query?: Record<string, string | string[]>;
  method?: string;
  session?: Partial<CoreSessionData>;
  startFails?: boolean;
}

/** A CoreRequest over plain values; `started`/`touched` record what the core did to the session. */
function request(f: Fake) {
  const seen: { started?: string; touched?: number } = {};
  let data = f.session;
  const q = f.query ?? {};
  const all = (n: string) => {
    const v = q[n];
    return v === undefined ? [] : Array.isArray(v) ? v : [v];
  };
  const req: CoreRequest = {
    method: f.method ?? 'GET',
    path: '/',
    query: (n) => all(n)[0],
    queryAll: all,
    queryKeys: () => Object.keys(q),
    header: (n) => f.headers?.[n.toLowerCase()],
    cookie: () => undefined,
    hasCookies: false,
    body: async () => new Uint8Array(0),
    refuseBody: () => {},
    remoteAddress: undefined,
    log: pino({ level: 'silent' }),
    session: {
      presented: false,
      read: async () =>
        data?.storeId === undefined ? undefined : { storeId: data.storeId, authAt: data.authAt },
      touchAuthAt: async (at) => {
        seen.touched = at;
        if (data) data.authAt = at;
      },
      start: async (storeId) => {
        if (f.startFails) throw new Error('session store down');
        seen.started = storeId;
        data = { storeId, authAt: Date.now() };
      },
      destroy: async () => {},
    },
  };
  return { req, seen };
}

function authenticateWith(
  o: {
    scopes?: string[];
    granted?: string[];
    getInstallation?: () => Promise<unknown>;
    narrowerScopes?: 'refuse' | 'record';
    explain?: string;
  } = {},
) {
  const installation = async () => ({
    installedAt: new Date(INSTALLED_AT),
    scopes: o.granted ?? ['read_products'],
  });
  return createAuthenticate({
    sessionTokens,
    tokens: {
      getInstallation: (o.getInstallation ?? installation) as never,
      reload: installation as never,
    },
    client: () => ({}) as StoreApiClient,
    scopes: o.scopes ?? ['read_products'],
    narrowerScopes: o.narrowerScopes,
    launch: {
      param: 'launch',
      verifier: {
        verify: async (token) => {
          if (token === 'good') return STORE;
          throw new SessionTokenError('LAUNCH_TOKEN_INVALID', 'Launch token refused.');
        },
      },
    },
    launchWatch: { explainCall: () => o.explain },
    beginUrl: BEGIN,
    reauthorizeHeader: 'X-Store-App-Reauthorize',
    maxSessionAgeSeconds: 3600,
    frameAncestors: ANCESTORS,
  });
}

function refused(d: AuthDecision): CoreResponse {
  if (d.ok) throw new Error(`expected a refusal, got the store ${d.store.storeId}`);
  return d.response;
}
const codeOf = (r: CoreResponse) =>
  r.body.kind === 'json' ? (r.body.value as { code: string }).code : undefined;

const navigate = {
  accept: 'text/html',
  'sec-fetch-mode': 'navigate',
  'sec-fetch-dest': 'document',
};
const framed = { ...navigate, 'sec-fetch-dest': 'iframe' };
const xhr = { accept: 'application/json', 'sec-fetch-mode': 'cors' };
const fresh = { storeId: STORE, authAt: Date.now() };
const bearer = async (installedAt = INSTALLED_AT) =>
  `Bearer ${(await sessionTokens.mint(STORE, { installedAt })).token}`;

describe('authenticate(): bearer tokens', () => {
  it('a valid app session token gives the store (no session started)', async () => {
    const { req, seen } = request({ headers: { authorization: await bearer() } });
    const d = await authenticateWith()(req);
    expect(d.ok && d.store.storeId).toBe(STORE);
    expect(d.ok && d.launched).toBe(false);
    expect(seen.started).toBeUndefined();
  });

  it('a malformed or forged token: 401 invalid_token, no re-authorise header', async () => {
    for (const authorization of ['Bearer', 'Bearer a b', 'Bearer forged.token.here']) {
      const r = refused(await authenticateWith()(request({ headers: { authorization } }).req));
      expect(r.status, authorization).toBe(401);
      expect(r.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
      expect(r.headers['x-store-app-reauthorize']).toBeUndefined();
    }
  });

  it('a token of an earlier installation: 401 naming where to re-authorise', async () => {
    const { req } = request({ headers: { authorization: await bearer(INSTALLED_AT - 1) } });
    const r = refused(await authenticateWith()(req));
    expect(r.status).toBe(401);
    expect(codeOf(r)).toBe('SESSION_TOKEN_INVALID');
    expect(r.headers['x-store-app-reauthorize']).toBe(`${BEGIN}?store_id=${STORE}`);
  });
});

describe('authenticate(): the admin launch', () => {
  it('a framed launch starts a session for its store and says so', async () => {
    const { req, seen } = request({ headers: framed, query: { launch: 'good' } });
    const d = await authenticateWith()(req);
    expect(d.ok && d.launched).toBe(true);
    expect(seen.started).toBe(STORE);
  });

  it('outside a frame (sec-fetch-dest: document) it signs nobody in', async () => {
    const { req, seen } = request({ headers: navigate, query: { launch: 'good' } });
    const r = refused(await authenticateWith()(req));
    expect(seen.started).toBeUndefined();
    expect(r.status).toBe(302);
    expect(r.headers['location']).toBe(BEGIN);
  });

  it('a refused (replayed, stale) launch falls back to the session cookie', async () => {
    const { req, seen } = request({
      headers: framed,
      query: { launch: 'replayed' },
      session: fresh,
    });
    const d = await authenticateWith()(req);
    expect(d.ok && d.store.storeId).toBe(STORE);
    expect(d.ok && d.launched).toBe(false);
    expect(seen.started).toBeUndefined();
  });

  it('a repeated launch parameter is no launch', async () => {
    const { req, seen } = request({ headers: framed, query: { launch: ['good', 'good'] } });
    refused(await authenticateWith()(req));
    expect(seen.started).toBeUndefined();
  });

  it('a session store failing to start the session: 503 page with Retry-After', async () => {
    const { req } = request({ headers: framed, query: { launch: 'good' }, startFails: true });
    const r = refused(await authenticateWith()(req));
    expect(r.status).toBe(503);
    expect(r.headers['retry-after']).toBe('5');
    expect(r.headers['content-security-policy']).toContain(ANCESTORS);
  });
});

describe('authenticate(): the cookie session', () => {
  it('a live session gives its store', async () => {
    const d = await authenticateWith()(request({ headers: xhr, session: fresh }).req);
    expect(d.ok && d.store.storeId).toBe(STORE);
  });

  it('a session bound before sessions carried their start gets one now', async () => {
    const { req, seen } = request({ headers: xhr, session: { storeId: STORE } });
    const d = await authenticateWith()(req);
    expect(d.ok).toBe(true);
    expect(seen.touched).toBeGreaterThan(Date.now() - 5000);
  });

  it('past its absolute lifetime: 401 SESSION_REQUIRED with the re-authorise header', async () => {
    const old = { storeId: STORE, authAt: Date.now() - 3601 * 1000 };
    const r = refused(await authenticateWith()(request({ headers: xhr, session: old }).req));
    expect(r.status).toBe(401);
    expect(codeOf(r)).toBe('SESSION_REQUIRED');
    expect(r.headers['x-store-app-reauthorize']).toBe(BEGIN);
  });

  it('opened for another store: re-authorise there (redirect at top level, page in the iframe)', async () => {
    const top = refused(
      await authenticateWith()(
        request({ headers: navigate, query: { store_id: OTHER }, session: fresh }).req,
      ),
    );
    expect(top.status).toBe(302);
    expect(top.headers['location']).toBe(`${BEGIN}?store_id=${OTHER}`);
    const inFrame = refused(
      await authenticateWith()(
        request({ headers: framed, query: { store_id: OTHER }, session: fresh }).req,
      ),
    );
    expect(inFrame.status).toBe(200);
    expect(inFrame.body.kind === 'html' && inFrame.body.value).toContain('SESSION_REQUIRED');
    expect(inFrame.headers['content-security-policy']).toContain(ANCESTORS);
  });

  it('a cross-site write with the cookie: 403 CROSS_SITE_REQUEST (Fetch Metadata or Origin)', async () => {
    const auth = authenticateWith();
    const writes: Array<Record<string, string>> = [
      { 'sec-fetch-site': 'cross-site' },
      { origin: 'https://evil.example' },
      { origin: 'null' },
    ];
    for (const headers of writes) {
      const r = refused(await auth(request({ method: 'POST', headers, session: fresh }).req));
      expect(r.status, JSON.stringify(headers)).toBe(403);
      expect(codeOf(r)).toBe('CROSS_SITE_REQUEST');
    }
    const sameSite = await auth(
      request({ method: 'POST', headers: { 'sec-fetch-site': 'same-site' }, session: fresh }).req,
    );
    expect(sameSite.ok).toBe(true);
  });

  it('no session: the launch watch explains the 401 when it can', async () => {
    const r = refused(
      await authenticateWith({ explain: 'served before' })(request({ headers: xhr }).req),
    );
    expect(r.body.kind === 'json' && r.body.value).toEqual({
      code: 'SESSION_REQUIRED',
      message: 'served before',
    });
  });
});

describe('authenticate(): the installation', () => {
  it('scopes grown: SCOPES_CHANGED, unless narrower grants are recorded', async () => {
    const o = { scopes: ['read_products', 'write_products'] };
    const r = refused(await authenticateWith(o)(request({ headers: xhr, session: fresh }).req));
    expect(codeOf(r)).toBe('SCOPES_CHANGED');
    const d = await authenticateWith({ ...o, narrowerScopes: 'record' })(
      request({ headers: xhr, session: fresh }).req,
    );
    expect(d.ok && d.store.missingScopes).toEqual(['write_products']);
  });

  it('not installed: re-authorise for that store', async () => {
    const auth = authenticateWith({
      getInstallation: () => Promise.reject(new NotInstalledError(STORE)),
    });
    const r = refused(await auth(request({ headers: xhr, session: fresh }).req));
    expect(r.status).toBe(401);
    expect(codeOf(r)).toBe('NOT_INSTALLED');
    expect(r.headers['x-store-app-reauthorize']).toBe(`${BEGIN}?store_id=${STORE}`);
  });

  it('storage down: 503 JSON with Retry-After; credentials refused: 500, no setting named', async () => {
    const down = authenticateWith({
      getInstallation: () => Promise.reject(new StorageError('db down')),
    });
    const r = refused(await down(request({ headers: xhr, session: fresh }).req));
    expect([r.status, r.headers['retry-after']]).toEqual([503, '5']);
    const rejected = authenticateWith({
      getInstallation: () => Promise.reject(new RefreshClientRejectedError()),
    });
    const m = refused(await rejected(request({ headers: xhr, session: fresh }).req));
    expect(m.status).toBe(500);
    expect(JSON.stringify(m.body)).not.toContain('STORE_APP_CLIENT_SECRET');
  });

  it('an error that is not the kit’s to answer is thrown to the shell', async () => {
    const broken = authenticateWith({
      getInstallation: () => Promise.reject(new TypeError('bug')),
    });
    await expect(broken(request({ headers: xhr, session: fresh }).req)).rejects.toThrow('bug');
  });
});
