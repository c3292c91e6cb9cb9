import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { inspect } from 'node:util';
import express from 'express';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, describe, expect, it } from 'vitest';
import { createBrowserSessions } from '../../src/core/browser-session.js';
import type { KitSessionStore, StoredSession } from '../../src/core/session-store.js';
import { generateKey } from '../../src/crypto/index.js';
import { StorageError } from '../../src/errors/index.js';
import { createKitLogger } from '../../src/http/logger.js';
import { kitSessionOf } from '../../src/shells/express/adapter.js';
import { requestLogger } from '../../src/shells/express/request-log.js';
import { securityHeaders } from '../../src/shells/express/security-headers.js';
import { storeApp } from '../../src/store-app.js';

const admin = 'https://admin.example';

describe('security headers', () => {
  const headers = { enabled: true, helmet: {} };

  it('embedded: frame-ancestors names only the admin origin and X-Frame-Options is absent', async () => {
    const app = express();
    app.use(
      securityHeaders(
        { enabled: true, adminOrigin: admin, adminAppUrl: '', launchParam: 'launch' },
        headers,
      ),
    );
    app.get('/', (_req, res) => res.send('ok'));
    const res = await request(app).get('/');
    expect(res.headers['content-security-policy']).toContain(`frame-ancestors ${admin}`);
    expect(res.headers['x-frame-options']).toBeUndefined();
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['strict-transport-security']).toBeDefined();
  });

  it("not embedded: frame-ancestors 'none' and X-Frame-Options DENY", async () => {
    const app = express();
    app.use(
      securityHeaders(
        { enabled: false, adminOrigin: admin, adminAppUrl: '', launchParam: 'launch' },
        headers,
      ),
    );
    app.get('/', (_req, res) => res.send('ok'));
    const res = await request(app).get('/');
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.headers['x-frame-options']).toBe('DENY');
  });

  it('a CSP directive computed per request (a nonce) is still computed per request', async () => {
    const app = express();
    let n = 0;
    app.use(
      securityHeaders(
        { enabled: true, adminOrigin: admin, adminAppUrl: '', launchParam: 'launch' },
        {
          enabled: true,
          helmet: {
            contentSecurityPolicy: { directives: { scriptSrc: [() => `'nonce-n${++n}'`] } },
          },
        },
      ),
    );
    app.get('/', (_req, res) => res.send('ok'));
    const first = await request(app).get('/');
    const second = await request(app).get('/');
    expect(first.headers['content-security-policy']).toContain("'nonce-n1'");
    expect(second.headers['content-security-policy']).toContain("'nonce-n2'");
    expect(second.headers['content-security-policy']).toContain(`frame-ancestors ${admin}`);
  });

  it('upgrade-insecure-requests only when the app is served over HTTPS', async () => {
    const cspFor = async (https: boolean) => {
      const app = express();
      app.use(
        securityHeaders(
          { enabled: true, adminOrigin: admin, adminAppUrl: '', launchParam: 'launch' },
          headers,
          https,
        ),
      );
      app.get('/', (_req, res) => res.send('ok'));
      return (await request(app).get('/')).headers['content-security-policy'] as string;
    };
    expect(await cspFor(true)).toContain('upgrade-insecure-requests');
    // A plain-HTTP development app would otherwise have its own assets rewritten to https://.
    const dev = await cspFor(false);
    expect(dev).not.toContain('upgrade-insecure-requests');
    expect(dev).toContain(`frame-ancestors ${admin}`);
  });

  it('app-supplied helmet options cannot widen frame-ancestors', async () => {
    const app = express();
    app.use(
      securityHeaders(
        { enabled: true, adminOrigin: admin, adminAppUrl: '', launchParam: 'launch' },
        {
          enabled: true,
          helmet: {
            contentSecurityPolicy: {
              directives: { frameAncestors: ['*'], imgSrc: ["'self'", 'https://cdn.example'] },
            },
          },
        },
      ),
    );
    app.get('/', (_req, res) => res.send('ok'));
    const csp = (await request(app).get('/')).headers['content-security-policy'] as string;
    expect(csp).toContain(`frame-ancestors ${admin}`);
    expect(csp).not.toContain('frame-ancestors *');
    expect(csp).toContain('img-src');
  });
});

describe('security headers on bearer responses (script-read only)', () => {
  const embedded = { enabled: true, adminOrigin: admin, adminAppUrl: '', launchParam: 'launch' };
  const documentOnly = [
    'content-security-policy',
    'cross-origin-opener-policy',
    'cross-origin-resource-policy',
    'origin-agent-cluster',
    'referrer-policy',
    'x-dns-prefetch-control',
    'x-download-options',
    'x-permitted-cross-domain-policies',
    'x-xss-protection',
  ];
  const appWith = (options: Parameters<typeof securityHeaders>[1]) => {
    const app = express();
    app.use(securityHeaders(embedded, options));
    app.get('/api/data', (_req, res) => res.json({ ok: true }));
    return app;
  };

  it('a bearer request gets nosniff, HSTS and Vary: Authorization, and no document headers', async () => {
    const res = await request(appWith({ enabled: true, helmet: {} }))
      .get('/api/data')
      .set('authorization', 'Bearer abc.def.ghi');
    expect(res.status).toBe(200);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['strict-transport-security']).toMatch(/max-age=/);
    expect(res.headers.vary).toMatch(/\bAuthorization\b/);
    expect(res.headers['x-powered-by']).toBeUndefined();
    for (const name of documentOnly) expect(res.headers[name], name).toBeUndefined();
  });

  it('a browser request (no Authorization) keeps every header, framing included', async () => {
    const res = await request(appWith({ enabled: true, helmet: {} })).get('/api/data');
    for (const name of documentOnly) expect(res.headers[name], name).toBeDefined();
    expect(res.headers['content-security-policy']).toContain(`frame-ancestors ${admin}`);
    expect(res.headers.vary ?? '').not.toMatch(/Authorization/);
  });

  it('attack: a navigation with Basic credentials (which browsers do attach) keeps every header', async () => {
    const res = await request(appWith({ enabled: true, helmet: {} }))
      .get('/api/data')
      .set('authorization', `Basic ${Buffer.from('u:p').toString('base64')}`);
    for (const name of documentOnly) expect(res.headers[name], name).toBeDefined();
  });

  it('attack: a scheme that only starts like "Bearer" keeps every header', async () => {
    for (const value of ['Bearerx abc', 'Bearer']) {
      const res = await request(appWith({ enabled: true, helmet: {} }))
        .get('/api/data')
        .set('authorization', value);
      expect(res.headers['content-security-policy'], value).toContain('frame-ancestors');
    }
  });

  it('with a per-request CSP (nonces) too: the nonce path serves browsers, bearer gets the short set', async () => {
    const app = express();
    app.use(
      securityHeaders(embedded, {
        enabled: true,
        helmet: {
          contentSecurityPolicy: { directives: { scriptSrc: ["'self'", () => "'nonce-n1'"] } },
        },
      }),
    );
    app.get('/api/data', (_req, res) => res.json({ ok: true }));
    const bearer = await request(app).get('/api/data').set('authorization', 'Bearer t');
    expect(bearer.headers['content-security-policy']).toBeUndefined();
    expect(bearer.headers['x-content-type-options']).toBe('nosniff');
    expect(bearer.headers['strict-transport-security']).toMatch(/max-age=/);
    expect(bearer.headers.vary).toBe('Authorization');
    const browser = await request(app).get('/api/data');
    expect(browser.headers['content-security-policy']).toContain("'nonce-n1'");
  });

  it("keeps the app's own Vary and follows its helmet choices (HSTS off: not sent)", async () => {
    const app = express();
    app.use((_req, res, next) => {
      res.vary('Origin');
      next();
    });
    app.use(
      securityHeaders(embedded, { enabled: true, helmet: { strictTransportSecurity: false } }),
    );
    app.get('/api/data', (_req, res) => res.json({ ok: true }));
    const res = await request(app).get('/api/data').set('authorization', 'bearer t');
    expect(res.headers.vary).toBe('Origin, Authorization');
    expect(res.headers['strict-transport-security']).toBeUndefined();
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });
});

describe('session cookie', () => {
  /** The kit's browser session on Express (its own cookie) over an in-memory store. */
  function app(opts: { secure: boolean; sameSite: 'none' | 'lax'; partitioned: boolean }) {
    const rows = new Map<string, StoredSession>();
    const store: KitSessionStore = {
      get: async (sid) => rows.get(sid) ?? null,
      set: async (sid, data) => void rows.set(sid, data),
      destroy: async (sid) => void rows.delete(sid),
    };
    const sessionFor = createBrowserSessions(
      { secret: ['x'.repeat(32)], cookieName: 'sid', maxAgeSeconds: 3600, ...opts },
      store,
    );
    const a = express();
    a.get('/login', async (req, res) => {
      await kitSessionOf(req, res, sessionFor, 'sid').start('store-1');
      res.send('ok');
    });
    a.get('/anon', (_req, res) => res.send('ok'));
    a.get('/whoami', async (req, res) => {
      const data = await kitSessionOf(req, res, sessionFor, 'sid').read();
      res.json({ session: data?.storeId ?? null, appSession: 'session' in req });
    });
    return a;
  }

  it('embedded over HTTPS: Secure; HttpOnly; SameSite=None; Partitioned', async () => {
    const res = await request(app({ secure: true, sameSite: 'none', partitioned: true })).get(
      '/login',
    );
    const c = res.headers['set-cookie']![0]!;
    expect(c).toMatch(/^sid=/);
    for (const attr of ['Secure', 'HttpOnly', 'SameSite=None', 'Partitioned'])
      expect(c).toContain(attr);
  });

  it('no cookie for a visitor without a session', async () => {
    const res = await request(app({ secure: false, sameSite: 'lax', partitioned: false })).get(
      '/anon',
    );
    expect(res.headers['set-cookie']).toBeUndefined();
  });

  it("reads the kit's own cookie, and never makes req.session", async () => {
    const a = app({ secure: false, sameSite: 'lax', partitioned: false });
    const login = await request(a).get('/login');
    const cookie = login.headers['set-cookie']![0]!.split(';')[0]!;
    const both = await request(a)
      .get('/whoami')
      .set('Authorization', 'Bearer abc.def.ghi')
      .set('Cookie', cookie);
    expect(both.body).toEqual({ session: 'store-1', appSession: false });
    const anon = await request(a).get('/whoami');
    expect(anon.body).toEqual({ session: null, appSession: false });
    expect(anon.headers['set-cookie']).toBeUndefined();
  });
});

describe('logger', () => {
  function capture() {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _e, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    return { lines, destination };
  }

  it('redacts credentials at the top level and nested', () => {
    const { lines, destination } = capture();
    const log = createKitLogger({ level: 'info', instance: undefined, destination });
    log.info(
      {
        accessToken: 'AT-SECRET',
        req: { headers: { authorization: 'Bearer AT-SECRET2', cookie: 'sid=COOKIE-SECRET' } },
        res: { headers: { 'set-cookie': 'sid=COOKIE-SECRET2' } },
        body: {
          code: 'CODE-SECRET',
          code_verifier: 'VERIFIER-SECRET',
          client_secret: 'CS',
          refresh_token: 'RT-SECRET',
        },
        state: 'STATE-SECRET',
        storeId: 'store-1',
      },
      'hello',
    );
    const out = lines.join('');
    for (const s of [
      'AT-SECRET',
      'COOKIE-SECRET',
      'CODE-SECRET',
      'VERIFIER-SECRET',
      '"CS"',
      'RT-SECRET',
      'STATE-SECRET',
    ]) {
      expect(out).not.toContain(s);
    }
    expect(out).toContain('store-1');
    expect(out).toContain('[redacted]');
  });

  it("keeps an error's stable code readable while redacting `code` fields", () => {
    const { lines, destination } = capture();
    const log = createKitLogger({ level: 'info', instance: undefined, destination });
    log.error({ err: new StorageError('db down'), query: { code: 'CODE-SECRET' } }, 'failed');
    const own = capture();
    createKitLogger({ level: 'info', instance: pino(own.destination), destination: undefined })
      .child({ component: 'x' })
      .warn({ err: new StorageError('db down') }, 'failed');
    for (const out of [lines.join(''), own.lines.join('')]) {
      const entry = JSON.parse(out) as { err: { errorCode?: string; code?: string } };
      expect(entry.err.errorCode).toBe('STORAGE_UNAVAILABLE');
      expect(entry.err.code).toBe('[redacted]');
    }
    expect(lines.join('')).not.toContain('CODE-SECRET');
  });

  it("adds redaction to the app's own pino logger", () => {
    const { lines, destination } = capture();
    const log = createKitLogger({
      level: 'info',
      instance: pino(destination),
      destination: undefined,
    });
    log.info({ refreshToken: 'RT-SECRET' }, 'x');
    expect(lines.join('')).not.toContain('RT-SECRET');
  });

  it('gives each request a child logger with an id and the path but never the query', async () => {
    const { lines, destination } = capture();
    const root = createKitLogger({ level: 'debug', instance: undefined, destination });
    const app = express();
    app.use(requestLogger(root));
    app.get('/cb', (_req, res) => {
      res.locals.log!.info('handled');
      res.send('ok');
    });
    await request(app).get('/cb?code=CODE-IN-QUERY&state=S').set('x-request-id', 'req-42');
    const out = lines.join('');
    expect(out).toContain('"reqId":"req-42"');
    expect(out).toContain('"path":"/cb"');
    expect(out).not.toContain('CODE-IN-QUERY');
  });

  it('keeps each request its own logger when requests overlap, and lets the app replace it', async () => {
    const { lines, destination } = capture();
    const root = createKitLogger({ level: 'info', instance: undefined, destination });
    const app = express();
    app.use(requestLogger(root));
    app.get('/slow', async (_req, res) => {
      // Both requests are in flight here: one accessor for all, the state per request.
      await new Promise((r) => setTimeout(r, 30));
      res.locals.log!.info('slow done');
      res.send('ok');
    });
    app.get('/fast', (_req, res) => {
      res.locals.log!.info('fast done');
      res.send('ok');
    });
    app.get('/own', (_req, res) => {
      res.locals.log = root.child({ custom: 'yes' });
      res.locals.log.info('own logger');
      res.send('ok');
    });
    await Promise.all([
      request(app).get('/slow').set('x-request-id', 'slow-1'),
      request(app).get('/fast').set('x-request-id', 'fast-1'),
    ]);
    await request(app).get('/own');
    const entries = lines
      .join('')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(entries.find((e) => e.msg === 'slow done')).toMatchObject({
      reqId: 'slow-1',
      path: '/slow',
    });
    expect(entries.find((e) => e.msg === 'fast done')).toMatchObject({
      reqId: 'fast-1',
      path: '/fast',
    });
    const own = entries.find((e) => e.msg === 'own logger');
    expect(own).toMatchObject({ custom: 'yes' });
    expect(own).not.toHaveProperty('reqId');
  });

  it('logs the path as the request arrived, even when first used inside a mounted router', async () => {
    const { lines, destination } = capture();
    const root = createKitLogger({ level: 'info', instance: undefined, destination });
    const app = express();
    app.use(requestLogger(root));
    const api = express.Router();
    api.get('/items', (_req, res) => {
      res.locals.log!.info('listed');
      res.send('ok');
    });
    app.use('/api', api);
    app.get('/quiet', (_req, res) => res.send('ok'));
    await request(app).get('/api/items');
    await request(app).get('/quiet');
    const entries = lines
      .join('')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    // One line: the quiet request (info level, nothing logged) made no entry.
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ path: '/api/items', method: 'GET', msg: 'listed' });
    expect(entries[0].reqId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("works as the request's pino logger however it is used: methods taken off it, children, level, own keys", async () => {
    const { lines, destination } = capture();
    const root = createKitLogger({ level: 'info', instance: undefined, destination });
    const app = express();
    app.use(requestLogger(root));
    let seen: Record<string, unknown> = {};
    app.get('/uses', (_req, res) => {
      const log = res.locals.log!;
      const { warn } = log;
      warn('taken off');
      log.child({ job: 'sync' }).info('from a child');
      seen = {
        level: log.level,
        debugOn: log.isLevelEnabled('debug'),
        // biome-ignore lint/suspicious/noSelfCompare: two reads of the method through the stand-in
        sameMethod: log.info === log.info,
        bindings: log.bindings(),
        hasInfo: 'info' in log,
      };
      log.level = 'debug';
      log.debug('after raising the level');
      res.send('ok');
    });
    await request(app).get('/uses').set('x-request-id', 'uses-1');
    const entries = lines
      .join('')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(entries.map((e) => e.msg)).toEqual([
      'taken off',
      'from a child',
      'after raising the level',
    ]);
    for (const e of entries) expect(e).toMatchObject({ reqId: 'uses-1', path: '/uses' });
    expect(entries[1]).toMatchObject({ job: 'sync' });
    expect(seen).toEqual({
      level: 'info',
      debugOn: false,
      sameMethod: true,
      bindings: expect.objectContaining({ reqId: 'uses-1', method: 'GET', path: '/uses' }),
      hasInfo: true,
    });
    // Raising one request's level left the kit's logger as it was.
    expect(root.level).toBe('info');
  });

  it('shows nothing of the request target when an app prints res.locals (util.inspect, JSON)', async () => {
    const { lines, destination } = capture();
    const root = createKitLogger({ level: 'info', instance: undefined, destination });
    const app = express();
    app.use(requestLogger(root));
    let printed = '';
    app.get('/page', (_req, res) => {
      printed = `${inspect(res.locals, { depth: 4 })}\n${JSON.stringify(res.locals)}`;
      res.locals.log!.info('page');
      res.send('ok');
    });
    await request(app).get('/page?id_token=LAUNCH-TOKEN-IN-QUERY&code=CODE-IN-QUERY');
    expect(printed).not.toContain('LAUNCH-TOKEN-IN-QUERY');
    expect(printed).not.toContain('CODE-IN-QUERY');
    expect(lines.join('')).toContain('"path":"/page"');
    expect(lines.join('')).not.toContain('IN-QUERY');
  });
});

describe('kit.middleware() in a host app', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sak-http-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("leaves the host's body parsers working, before or after it", async () => {
    const kit = await storeApp({
      appUrl: 'http://127.0.0.1:3000',
      environment: 'test',
      oauth: {
        clientId: 'app_1',
        clientSecret: 'secret-0123456789',
        scopes: ['read_products'],
        authUrl: 'http://127.0.0.1:4400',
      },
      storage: { databaseUrl: join(dir, 'h.db'), encryptionKeys: [generateKey()] },
      session: { secret: randomBytes(32).toString('base64url') },
      webhooks: { secrets: `whsec_${Buffer.alloc(32, 7).toString('base64')}` },
      // The app's own routes take the kit's headers only when asked to (issue 32).
      securityHeaders: { scope: 'app' },
    });
    try {
      const before = express();
      before.use(express.json());
      before.use(kit.middleware());
      before.post('/echo', (req, res) => res.json(req.body));
      const after = express();
      after.use(kit.middleware());
      after.use(express.json());
      after.post('/echo', (req, res) => res.json(req.body));
      for (const app of [before, after]) {
        const res = await request(app).post('/echo').send({ a: 1 });
        // helmet's headers, set from its captured output: the same set every time.
        expect(res.headers['x-content-type-options']).toBe('nosniff');
        expect(res.headers['strict-transport-security']).toMatch(/max-age=/);
        expect(res.headers['x-powered-by']).toBeUndefined();
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ a: 1 });
        expect(res.headers['content-security-policy']).toContain(
          'frame-ancestors http://127.0.0.1:4400',
        );
      }
      // A script's bearer call through kit.middleware(): the script-read headers only.
      const bearer = await request(after)
        .post('/echo')
        .set('authorization', 'Bearer not-checked-here')
        .send({ a: 2 });
      expect(bearer.body).toEqual({ a: 2 });
      expect(bearer.headers['x-content-type-options']).toBe('nosniff');
      expect(bearer.headers['strict-transport-security']).toMatch(/max-age=/);
      expect(bearer.headers['content-security-policy']).toBeUndefined();
      expect(bearer.headers['x-frame-options']).toBeUndefined();
      expect(bearer.headers.vary).toMatch(/Authorization/);
      expect(kit.middleware()).toBe(kit.middleware());
      // Deliveries are server-to-server JSON: no browser headers on the webhook route.
      const delivery = await request(after)
        .post('/webhooks')
        .set('content-type', 'application/json')
        .send('{}');
      expect(delivery.status).toBe(400);
      expect(delivery.headers['content-security-policy']).toBeUndefined();
    } finally {
      await kit.close();
    }
  });
});
