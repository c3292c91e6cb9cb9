/**
 * store-app-kit/hono (`storeAppHono(kit)`): the kit's routes and its header set on
 * Hono through `middleware()` (or around the app: `fetch(app)`), the store through
 * `authenticated()` (or around one handler: `authenticated(handler)`). On
 * @hono/node-server (real sockets) the set goes in as Node writes the head; every
 * answer must carry exactly what the Fetch mount (`kit.fetch` + `kit.authenticate` +
 * `kit.secureResponse`) gives the same request, and the route's own headers win as
 * they do there. Without a Node response (`app.request`) the mount falls back to
 * `kit.secureResponse`. A real kit on a SQLite file.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAdaptorServer, type HttpBindings } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { type Handler, Hono, type MiddlewareHandler } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { internalsOf } from '../../src/compose/internals.js';
import { type FetchHandler, type StoreAppHonoEnv, storeAppHono } from '../../src/hono.js';
import { ConfigError, type StoreAppKit, storeApp } from '../../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-hono-mount-'));
const APP = 'http://127.0.0.1:3999';

type Env = StoreAppHonoEnv & { Bindings: HttpBindings };

/**
 * The routes every app serves: the route's own headers in some of them. `guard`: how
 * the API routes get their store (the mount's middleware, `kit.authenticate` by hand,
 * or the mount around each handler).
 */
function routes(app: Hono<Env>, guard: 'mount' | 'fetch' | 'handler', kit: StoreAppKit) {
  const hono = storeAppHono(kit);
  const auth: MiddlewareHandler<StoreAppHonoEnv> =
    guard === 'mount'
      ? hono.authenticated()
      : async (c, next) => {
          const store = await kit.authenticate(c.req.raw);
          if (store instanceof Response) return store;
          c.set('store', store);
          await next();
        };
  /** `path` behind the guard: one handler when the mount wraps it, else two. */
  const get = (path: string, handler: Handler<Env>) =>
    guard === 'handler' ? app.get(path, hono.authenticated(handler)) : app.get(path, auth, handler);
  get('/api/data', (c) => c.json({ storeId: c.get('store').storeId }));
  get('/api/vary', (c) => {
    c.header('Vary', 'Origin');
    return c.json({ ok: true });
  });
  get(
    '/api/own',
    () =>
      new Response('{}', {
        headers: {
          'content-type': 'application/json',
          'Strict-Transport-Security': 'max-age=60',
          'X-Powered-By': 'hono',
          Vary: 'Accept-Encoding, Authorization',
        },
      }),
  );
  app.get('/page', (c) => c.html('<!doctype html><title>page</title>'));
  // Raw header lines straight to Node (no Response): they win over the set, the set is there.
  app.get('/raw', (c) => {
    c.env.outgoing.writeHead(200, ['content-type', 'text/plain', 'x-frame-options', 'SAMEORIGIN']);
    c.env.outgoing.end('raw');
    // @hono/node-server's marker: the route wrote the answer itself, nothing more to send.
    return RESPONSE_ALREADY_SENT;
  });
}

function mountApp(kit: StoreAppKit) {
  const app = new Hono<Env>();
  app.use('*', storeAppHono(kit).middleware());
  routes(app, 'mount', kit);
  return app;
}

/** The same without a middleware: the mount around the app and around each guarded handler. */
function wrappedApp(kit: StoreAppKit) {
  const app = new Hono<Env>();
  routes(app, 'handler', kit);
  return { fetch: storeAppHono(kit).fetch(app) };
}

/** The mount docs/runtimes.md showed before store-app-kit/hono. */
function fetchApp(kit: StoreAppKit) {
  const app = new Hono<Env>();
  app.use('*', async (c, next) => {
    const answered = await kit.fetch(c.req.raw, {
      remoteAddress: c.env.incoming.socket.remoteAddress,
    });
    if (answered) return answered;
    await next();
    const secured = kit.secureResponse(c.req.raw, c.res);
    if (secured !== c.res) c.res = secured;
  });
  routes(app, 'fetch', kit);
  return app;
}

async function listen(app: { fetch: FetchHandler }): Promise<{ url: string; server: Server }> {
  const server = createAdaptorServer({ fetch: app.fetch }) as Server;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** A response's headers without those that differ by the moment (date) or the body. */
const headersOf = (res: Response) =>
  Object.fromEntries(
    [...res.headers].filter(([k]) => k !== 'date' && k !== 'content-length' && k !== 'keep-alive'),
  );

describe('store-app-kit/hono', () => {
  let kit: StoreAppKit;
  let mount: { url: string; server: Server };
  let fetchMount: { url: string; server: Server };
  let wrapped: { url: string; server: Server };
  let token: string;

  beforeAll(async () => {
    kit = (await storeApp({
      appUrl: APP,
      oauth: {
        clientId: 'hono-mount',
        clientSecret: randomBytes(24).toString('base64url'),
        scopes: ['read_products'],
        authUrl: 'http://127.0.0.1:9',
      },
      storage: {
        databaseUrl: `file:${join(dir, 'kit.db')}`,
        encryptionKeys: [randomBytes(32).toString('base64url')],
      },
      session: { secret: randomBytes(32).toString('base64url') },
      webhooks: { secrets: [`whsec_${randomBytes(32).toString('base64')}`] },
      health: { path: '/healthz' },
      refresh: { sweepIntervalMs: 0 },
      logger: { level: 'silent' },
    })) as StoreAppKit;
    await internalsOf(kit).storage.installations.upsert('st_hono_mount', {
      scopes: ['read_products'],
      accessToken: `at_${randomBytes(16).toString('hex')}`,
      refreshToken: `rt_${randomBytes(16).toString('hex')}`,
      accessTokenExpiresAt: new Date(Date.now() + 3_600_000),
    });
    token = (await kit.sessionToken('st_hono_mount')).token;
    mount = await listen(mountApp(kit));
    fetchMount = await listen(fetchApp(kit));
    wrapped = await listen(wrappedApp(kit));
  });
  afterAll(async () => {
    mount?.server.close();
    fetchMount?.server.close();
    wrapped?.server.close();
    await kit?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const bearer = () => ({ authorization: `Bearer ${token}`, accept: 'application/json' });

  it('a copy of the kit, or anything else, fails at once naming the fix', () => {
    for (const notAKit of [{ ...kit }, Object.create(kit), null, 'kit']) {
      let thrown: unknown;
      try {
        storeAppHono(notAKit as object);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(ConfigError);
      expect(thrown).toMatchObject({ code: 'CONFIG_INVALID', setting: 'storeAppHono(kit)' });
      expect((thrown as Error).message).toMatch(/pass the object storeApp\(\) returned/);
    }
    expect(() => storeAppHono(kit)).not.toThrow();
  });

  it('a bearer call gets the store (first sight and from memory) and the bearer header set', async () => {
    for (const url of [mount.url, mount.url, wrapped.url, wrapped.url]) {
      const res = await fetch(`${url}/api/data`, { headers: bearer() });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ storeId: 'st_hono_mount' });
      expect(res.headers.get('strict-transport-security')).toBe(
        'max-age=31536000; includeSubDomains',
      );
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('vary')).toBe('Authorization');
      expect(res.headers.get('content-security-policy')).toBeNull();
    }
  });

  it('every answer carries the same headers as the Fetch mount gives the same request', async () => {
    const cases: [string, Record<string, string>][] = [
      ['/api/data', bearer()],
      ['/api/vary', bearer()],
      ['/api/own', bearer()],
      ['/api/data', { accept: 'application/json' }],
      ['/api/data', { authorization: 'Bearer not-a-token', accept: 'application/json' }],
      ['/page', {}],
      ['/page', bearer()],
      ['/healthz', {}],
      ['/auth/session-token', { accept: 'application/json' }],
      ['/nowhere', {}],
    ];
    const answer = async (res: Response) => ({
      status: res.status,
      headers: headersOf(res),
      body: await res.text(),
    });
    for (const [path, headers] of cases) {
      const [a, b, c] = await Promise.all(
        [mount, fetchMount, wrapped].map(({ url }) => fetch(`${url}${path}`, { headers })),
      );
      const expected = { path, ...(await answer(b as Response)) };
      expect({ path, ...(await answer(a as Response)) }).toEqual(expected);
      expect({ path, ...(await answer(c as Response)) }).toEqual(expected);
    }
  });

  it("the route's own headers win; Authorization stays in its Vary; X-Powered-By goes", async () => {
    for (const { url } of [mount, wrapped]) {
      const vary = await fetch(`${url}/api/vary`, { headers: bearer() });
      expect(vary.headers.get('vary')).toBe('Origin, Authorization');
      const own = await fetch(`${url}/api/own`, { headers: bearer() });
      expect(own.headers.get('strict-transport-security')).toBe('max-age=60');
      expect(own.headers.get('vary')).toBe('Accept-Encoding, Authorization');
      expect(own.headers.get('x-powered-by')).toBeNull();
      expect(own.headers.get('x-content-type-options')).toBe('nosniff');
    }
  });

  it('a page gets the document set: the CSP framed by the admin only, no X-Frame-Options', async () => {
    const res = await fetch(`${mount.url}/page`);
    expect(res.headers.get('content-security-policy')).toContain(kit.frameAncestors());
    expect(res.headers.get('x-frame-options')).toBeNull();
    expect(res.headers.get('cross-origin-opener-policy')).toBe('same-origin');
    expect(res.headers.get('vary')).toBeNull();
  });

  it('attack: no token, or a forged one, is refused with the challenge (401) and the header set', async () => {
    const none = await fetch(`${mount.url}/api/data`, { headers: { accept: 'application/json' } });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    const forged = await fetch(`${mount.url}/api/data`, {
      headers: { authorization: `Bearer ${token.slice(0, -4)}AAAA`, accept: 'application/json' },
    });
    expect(forged.status).toBe(401);
    expect(forged.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    expect(forged.headers.get('vary')).toBe('Authorization');
  });

  it("attack: two Authorization lines (a remembered token first) get the Fetch mount's answer", async () => {
    // Node's req.headers keeps only the first Authorization; a Request joins both.
    await fetch(`${mount.url}/api/data`, { headers: bearer() }); // remembered now
    // Raw bytes on a socket: two Authorization lines on the wire.
    const twice = async (url: string) => {
      const u = new URL(url);
      const socket = connect(Number(u.port), u.hostname);
      await once(socket, 'connect');
      socket.end(
        `GET /api/data HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${token}\r\n` +
          'Authorization: Bearer other\r\nAccept: application/json\r\nConnection: close\r\n\r\n',
      );
      let text = '';
      for await (const chunk of socket) text += chunk;
      const status = Number(text.split(' ')[1]);
      return { status, body: text.slice(text.indexOf('\r\n\r\n') + 4) };
    };
    const [a, b] = await Promise.all([twice(mount.url), twice(fetchMount.url)]);
    expect(a).toEqual(b);
    expect(a.status).not.toBe(200);
  });

  it("attack: two stores' requests interleaved each get their own store (a header read once is never another request's)", async () => {
    // The mount reads Authorization once, as the request enters, and the route's
    // authenticated() takes it from there: here B enters while A waits in a middleware of
    // the app's, and A then reaches authenticated() with B's request the last one entered.
    await internalsOf(kit).storage.installations.upsert('st_hono_mount_b', {
      scopes: ['read_products'],
      accessToken: `at_${randomBytes(16).toString('hex')}`,
      refreshToken: `rt_${randomBytes(16).toString('hex')}`,
      accessTokenExpiresAt: new Date(Date.now() + 3_600_000),
    });
    const tokenB = (await kit.sessionToken('st_hono_mount_b')).token;
    const hono = storeAppHono(kit);
    const app = new Hono<Env>();
    app.use('*', hono.middleware());
    let arrived = 0;
    let release = () => {};
    const bothIn = new Promise<void>((resolve) => {
      release = resolve;
    });
    app.get(
      '/api/slow',
      async (c, next) => {
        if (c.req.header('x-wait') === '1' && ++arrived === 2) release();
        if (c.req.header('x-wait') === '1') await bothIn;
        await next();
      },
      hono.authenticated(),
      (c) => c.json({ storeId: c.get('store').storeId }),
    );
    const served = await listen(app);
    try {
      const call = (t: string, wait: boolean) =>
        fetch(`${served.url}/api/slow`, {
          headers: { authorization: `Bearer ${t}`, ...(wait ? { 'x-wait': '1' } : {}) },
        }).then(async (r) => ({ status: r.status, body: await r.json() }));
      // Both tokens remembered first: the interleaved calls are answered from memory.
      expect((await call(token, false)).body).toEqual({ storeId: 'st_hono_mount' });
      expect((await call(tokenB, false)).body).toEqual({ storeId: 'st_hono_mount_b' });
      const [a, b] = await Promise.all([call(token, true), call(tokenB, true)]);
      expect(a).toEqual({ status: 200, body: { storeId: 'st_hono_mount' } });
      expect(b).toEqual({ status: 200, body: { storeId: 'st_hono_mount_b' } });
    } finally {
      served.server.close();
    }
  });

  it('raw header lines written to the Node response keep the set under them', async () => {
    for (const { url } of [mount, wrapped]) {
      const res = await fetch(`${url}/raw`);
      expect(await res.text()).toBe('raw');
      expect(res.headers.get('x-frame-options')).toBe('SAMEORIGIN');
      expect(res.headers.get('content-security-policy')).toContain(kit.frameAncestors());
    }
  });

  it('without a Node response (app.request) the set is added after the route, as kit.secureResponse does', async () => {
    const app = mountApp(kit);
    const res = await app.request(`${APP}/api/vary`, { headers: bearer() });
    expect(res.status).toBe(200);
    expect(res.headers.get('vary')).toBe('Origin, Authorization');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const page = await app.request(`${APP}/page`);
    expect(page.headers.get('content-security-policy')).toContain(kit.frameAncestors());
  });

  it('around the app without a Node response (Bun, Deno, Workers) the set is added to the answer', async () => {
    const { fetch: serve } = wrappedApp(kit);
    const vary = await serve(new Request(`${APP}/api/vary`, { headers: bearer() }));
    expect(vary.status).toBe(200);
    expect(vary.headers.get('vary')).toBe('Origin, Authorization');
    expect(vary.headers.get('x-content-type-options')).toBe('nosniff');
    const page = await serve(new Request(`${APP}/page`));
    expect(page.headers.get('content-security-policy')).toContain(kit.frameAncestors());
    const health = await serve(new Request(`${APP}/healthz`));
    expect(health.status).toBe(200);
    // A request with no token is refused on a guarded handler, with the challenge.
    const none = await serve(
      new Request(`${APP}/api/data`, { headers: { accept: 'application/json' } }),
    );
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('a remembered token on a wrapped handler is answered synchronously (no promise, no compose)', async () => {
    const { fetch: serve } = wrappedApp(kit);
    const request = () => new Request(`${APP}/api/data`, { headers: bearer() });
    await serve(request()); // the token is remembered from now on
    const answer = serve(request());
    expect(answer).toBeInstanceOf(Response);
    expect(await (answer as Response).json()).toEqual({ storeId: 'st_hono_mount' });
    // The middleware form goes through Hono's compose: a promise.
    expect(mountApp(kit).fetch(request())).toBeInstanceOf(Promise);
  });
});
