// The servers of the peer bench (bench/peers/bench.js) and the soak suite, in a
// process of their own so the load generator does not share their event loop
// and their CPU time per request can be measured apart from it.
//
// Started with fork(); sends { ready, urls, kitToken, kitTokens, shopifyToken,
// shopifyTokens }, then answers { cpu } (process CPU µs so far) and { memory }
// (after a full GC).
//   BENCH_SIDES   comma-separated sides to start (default: all but the Hono ones). The peer bench
//                 starts one side per process, so no two servers share a heap,
//                 a GC or an event loop (issue 24 item 4).
//   BENCH_STORES  stores installed (kit) or sessions stored (Shopify), each
//                 with its own session token (default 1): users have many
//                 merchants, each request of the bench names the next one.
//   BENCH_SQLITE_SYNCHRONOUS  the durable peer's `synchronous` level when the
//                 kit is not in the same process (the bench reads the kit's).
//   BENCH_KIT_DIST the kit build to serve (default: this checkout's dist/).
//   BENCH_VARIANT  one piece of the kit's route added or taken away, to see
//                 what it costs (bench/tools/route-ablation.js): on the kit,
//                 `no-security-headers`, `middleware-only` (no authenticated())
//                 or `authenticated-only` (no kit.middleware()); on bare,
//                 `security-headers` (the kit's own header middleware) or
//                 `nested-router` (a mounted Router with one pass-through layer)
//                 or `async-local-storage` (async hooks on, as the kit's storage has
//                 them), `larger-heap` (~9 MB more live objects, as the kit holds) or
//                 `kit-shaped-router` (a Router with the kit's layers, no kit code),
//                 `request-logger` or `launch-watch` (those kit middlewares alone);
//                 on the kit, `bare-in-kit-process` (bare's route in the kit's process);
//                 on the kit and hono sides, `platform-in-process` (the whole route, the local
//                 platform in this process as before 2026-11-29) or `one-store` (every
//                 request for the same store: kitTokens holds its token only).
//   kit      the kit mounted as the README shows: app.use(kit.middleware()),
//            GET /api/data behind kit.authenticated(), the webhook receiver
//            at /webhooks with a handler for orders.create
//   bare     the same GET /api/data handler on bare Express 5
//   shopify  GET /api/data: Shopify's decodeSessionToken + memory
//            loadSession + isActive, as its docs show for an embedded app
//   webhook  POST /webhooks: Express 5 + express.raw + standardwebhooks +
//            an in-memory dedupe Set
//   webhookDurable  the same with the ids committed to a SQLite file
//            (the kit's synchronous level) instead of the Set
//   hono     the kit on Hono (@hono/node-server) as docs/runtimes.md and the
//            Hono template mount it: kit.fetch first (with the socket's
//            address), GET /api/data behind kit.authenticate, and the kit's
//            header set through kit.secureResponse when the kit has it
//   honoBare the same GET /api/data handler on bare Hono
// NODE_ENV=production and the kit's default logging (info to stdout: nothing
// per request at that level).
process.env.NODE_ENV = 'production';

import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import express from 'express';
import { SignJWT } from 'jose';
import { Webhook } from 'standardwebhooks';
import { listen, saveInstall } from '../lib.js';
import { startBenchPlatform } from './platform.js';

// BENCH_KIT_DIST: another build's dist/ (a copy of main's, with node_modules beside it),
// so `npm run bench:peers` can measure before and after in the same run (BENCH_BASELINE).
const dist = process.env.BENCH_KIT_DIST
  ? pathToFileURL(`${resolve(process.env.BENCH_KIT_DIST)}/`)
  : new URL('../../dist/', import.meta.url);
const { storeApp } = await import(new URL('index.js', dist).href);
// The kit's storage: `internalsOf(kit)` since issue 31, `kit.storage` in older builds.
const internals = await import(new URL('compose/internals.js', dist).href).catch(() => null);
const storageOf = (kit) => (internals ? internals.internalsOf(kit).storage : kit.storage);

const secret = process.env.BENCH_WEBHOOK_SECRET;
if (!secret) throw new Error('BENCH_WEBHOOK_SECRET is required');
const dir = mkdtempSync(join(tmpdir(), 'sak-bench-peers-server-'));
const ALL_SIDES = ['kit', 'bare', 'shopify', 'webhook', 'webhookDurable', 'hono', 'honoBare'];
// Without BENCH_SIDES (the soak suite): the Express sides, as before the Hono ones existed.
const DEFAULT_SIDES = ['kit', 'bare', 'shopify', 'webhook', 'webhookDurable'];
const sides = new Set(process.env.BENCH_SIDES ? process.env.BENCH_SIDES.split(',') : DEFAULT_SIDES);
for (const s of sides) if (!ALL_SIDES.includes(s)) throw new Error(`unknown side ${s}`);
if (process.env.BENCH_WITHOUT_SHOPIFY === '1') sides.delete('shopify');
const STORES = Number(process.env.BENCH_STORES ?? 1);
const VARIANT = process.env.BENCH_VARIANT ?? '';

// --- the kit, installed into the local platform --------------------------------
// The platform runs in a process of its own (./platform.js), as it does for a real app;
// BENCH_PLATFORM_IN_PROCESS=1 starts it in this process instead (the bench before
// 2026-11-29: bare Hono's route in such a process read 0.84 of bare Hono's CPU).
async function startPlatformSide(setup) {
  if (process.env.BENCH_PLATFORM_IN_PROCESS === '1' || VARIANT === 'platform-in-process') {
    const { platform, registered, installs } = await startBenchPlatform(setup);
    return { authUrl: platform.authUrl, registered, installs, close: () => platform.close() };
  }
  const child = fork(new URL('./platform.js', import.meta.url), ['serve'], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready = new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`bench platform exited (${code})`)));
  });
  child.send(setup);
  const { authUrl, registered, installs } = await ready;
  return {
    authUrl,
    registered,
    installs,
    close: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send('close');
      await exited;
    },
  };
}

const APP_URL = 'http://127.0.0.1:3000';
/** The platform's side of the kit side: the app registered, STORES stores installed. */
const PLATFORM_SETUP = {
  app: {
    name: 'bench-peers',
    redirectUri: `${APP_URL}/auth/callback`,
    webhookUrl: `${APP_URL}/webhooks`,
    scopes: ['read_products'],
    rateLimit: { perMinute: null, concurrent: 500 },
  },
  stores: STORES,
  redirectUri: `${APP_URL}/auth/callback`,
};

async function startKit() {
  const appUrl = APP_URL;
  const platform = await startPlatformSide(PLATFORM_SETUP);
  const kit = await storeApp({
    appUrl,
    oauth: {
      clientId: platform.registered.clientId,
      clientSecret: platform.registered.clientSecret,
      scopes: ['read_products'],
      authUrl: platform.authUrl,
    },
    storage: {
      databaseUrl: `file:${join(dir, 'kit.db')}`,
      encryptionKeys: [randomBytes(32).toString('base64url')],
    },
    session: { secret: randomBytes(32).toString('base64url') },
    webhooks: { secrets: [secret] },
    refresh: { sweepIntervalMs: 0 },
    ...(VARIANT === 'no-security-headers' ? { securityHeaders: { enabled: false } } : {}),
  });
  const storeIds = [];
  for (const { storeId, tokens } of platform.installs) {
    await saveInstall(storageOf(kit), storeId, tokens);
    storeIds.push(storeId);
  }
  // Counted, so the bench can check that every 200 was a delivery handled and committed.
  let handled = 0;
  kit.webhooks.on('orders.create', async () => {
    handled++;
  });

  let kitApp;
  if (sides.has('kit')) {
    kitApp = express();
    // bare-in-kit-process: bare Express's route in the kit side's process (the kit built,
    // its stores installed, the local platform running), nothing of the kit on the route.
    if (VARIANT !== 'authenticated-only' && VARIANT !== 'bare-in-kit-process')
      kitApp.use(kit.middleware());
    if (VARIANT === 'middleware-only' || VARIANT === 'bare-in-kit-process')
      kitApp.get('/api/data', handler);
    else kitApp.get('/api/data', kit.authenticated(), handler);
  }
  const kitTokens = [];
  for (const id of storeIds) kitTokens.push((await kit.sessionToken(id)).token);
  const kitSynchronous = kit.db.$client.pragma('synchronous', { simple: true });
  return {
    kit,
    kitApp,
    kitTokens,
    kitSynchronous,
    handled: () => handled,
    dbFile: join(dir, 'kit.db'),
    close: async () => {
      await kit.close();
      await platform.close();
    },
  };
}

// The route's own work, the same on the kit and on bare Express: the same JSON
// (the store's id as the kit's route reads it; bare Express has no store, so
// an id of the same length: the same bytes to serialise and send).
const handler = (_req, res) =>
  res.json({
    storeId: res.locals.store?.storeId ?? '00000000-0000-4000-8000-000000000000',
    ok: true,
  });

/** A JSON answer's head with the kit's bearer header set (HSTS, nosniff, Vary), as bare Hono sends it. */
const BEARER_ANSWER_HEADERS = {
  'content-type': 'application/json',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  vary: 'Authorization',
};

/**
 * What a by-hand route keeps of a session token on first sight: its store and expiry, read
 * from the payload (the signature is checked once per token on the kit's side too).
 */
function rememberedStore(token) {
  const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
  return { storeId: claims.sub, scopes: ['read_products'], until: claims.exp * 1000 };
}

const bareApp = express();
if (VARIANT === 'security-headers') {
  const { resolveConfig } = await import('../../dist/config/index.js');
  const { securityHeaders } = await import('../../dist/shells/express/security-headers.js');
  // The kit's own header middleware, configured as the kit side's storeApp() resolves it.
  const c = resolveConfig({
    appUrl: 'http://127.0.0.1:3000',
    oauth: {
      clientId: 'x',
      clientSecret: 'x'.repeat(32),
      scopes: ['read_products'],
      authUrl: 'http://127.0.0.1:9',
    },
    storage: {
      databaseUrl: 'file::memory:',
      encryptionKeys: [randomBytes(32).toString('base64url')],
    },
    session: { secret: randomBytes(32).toString('base64url') },
    webhooks: { secrets: [secret] },
  });
  bareApp.use(securityHeaders(c.embedded, c.securityHeaders, c.session.secure));
}
if (VARIANT === 'async-local-storage') {
  // What the kit's storage turns on in its process (a transaction context):
  // from the first run(), Node 20 runs async hooks for every async resource and promise.
  const { AsyncLocalStorage } = await import('node:async_hooks');
  new AsyncLocalStorage().run({}, () => {});
}
if (VARIANT === 'larger-heap') {
  // ~9 MB more live objects (what the kit's process holds more than bare's after a full GC),
  // to tell a larger heap's GC cost from the kit's own allocations.
  globalThis.benchBallast = Array.from({ length: 40_000 }, (_, i) => ({
    storeId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    scopes: ['read_products'],
    at: new Date(),
  }));
}
if (VARIANT === 'request-logger') {
  // The kit's request logger on the kit's default logger (info to stdout).
  const { createKitLogger } = await import('../../dist/http/logger.js');
  const { requestLogger } = await import('../../dist/shells/express/request-log.js');
  bareApp.use(requestLogger(createKitLogger({ level: 'info' })));
}
if (VARIANT === 'launch-watch') {
  const { createLaunchWatch } = await import('../../dist/authenticated/launch-watch.js');
  const { expressLaunchWatch } = await import('../../dist/shells/express/launch-watch.js');
  const watch = expressLaunchWatch(createLaunchWatch({ param: 'launch' }));
  bareApp.use((req, res, next) => {
    watch.note(req, res);
    next();
  });
}
if (VARIANT === 'kit-shaped-router') {
  // A mounted Router with the kit's layer shapes (three pass-through layers, five routes the
  // request matches none of, an error handler), no kit code: what the dispatch alone costs.
  const nested = express.Router();
  const pass = (_req, _res, next) => next();
  const never = (_req, res) => res.status(500).end();
  nested.use(pass);
  nested.use(pass);
  nested.all('/webhooks', never);
  nested.get('/healthz', never);
  nested.use(pass);
  nested.get('/auth', never);
  nested.get('/auth/callback', never);
  nested.get('/auth/session-token', never);
  nested.use((err, _req, _res, next) => next(err));
  bareApp.use(nested);
}
if (VARIANT === 'nested-router') {
  const nested = express.Router();
  nested.use((_req, _res, next) => next());
  bareApp.use(nested);
}
if (VARIANT === 'route-passthrough') {
  // The shape of the README mount without its work: one pass-through handler before the
  // route's (Express dispatches two handlers on the route instead of one).
  bareApp.get('/api/data', (_req, _res, next) => next());
}
if (VARIANT === 'express-floor') {
  // The least a remembered-token route can do on Express (no kit), as hono-bare-floor on
  // Hono: a route middleware that looks the bearer value up in a Map (rememberedStore on
  // first sight), checks its expiry, sets the store and the bearer answer's three header
  // lines, then the same handler. The floor under `kit.authenticated()`.
  const seen = new Map();
  bareApp.get('/api/data', (req, res, next) => {
    const authorization = req.headers.authorization;
    let known = authorization === undefined ? undefined : seen.get(authorization);
    if (known === undefined && authorization?.startsWith('Bearer ')) {
      known = rememberedStore(authorization.slice(7));
      seen.set(authorization, known);
    }
    if (known === undefined || Date.now() >= known.until) {
      res.status(401).end();
      return;
    }
    res.setHeader('strict-transport-security', BEARER_ANSWER_HEADERS['strict-transport-security']);
    res.setHeader('x-content-type-options', 'nosniff');
    res.setHeader('vary', 'Authorization');
    res.locals.store = { storeId: known.storeId, scopes: known.scopes };
    next();
  });
}
bareApp.get('/api/data', handler);
const kitSide = sides.has('kit') || sides.has('hono') ? await startKit() : undefined;

// --- Hono on Node: the kit's Fetch shell, and bare Hono ---------------------------
// The same route work as the Express sides: the same JSON, the store's id on the kit.
const HONO_BARE_ID = '00000000-0000-4000-8000-000000000000';

/** A Node server for a Hono app, as @hono/node-server serves it; `.listen` like Express's. */
async function honoListenable(app) {
  const { createAdaptorServer } = await import('@hono/node-server');
  const server = createAdaptorServer({ fetch: typeof app === 'function' ? app : app.fetch });
  return { listen: (port, host, cb) => server.listen(port, host, () => cb()) && server };
}

/**
 * The kit mounted as docs/runtimes.md and templates/hono do: one middleware, kit.fetch
 * first (with the socket's address), then the app's route, whose answer gets the kit's
 * header set in place (kit.secureResponse). GET /api/data behind kit.authenticate.
 * A build with `store-app-kit/hono` is mounted through it (`hono.middleware()`,
 * `hono.authenticated()`), as docs/runtimes.md shows; BENCH_VARIANT on this side:
 *   hono-wrapped            store-app-kit/hono without a middleware: hono.fetch(app) around the
 *                           app, hono.authenticated(handler) around the route's one handler
 *   hono-middleware-only    store-app-kit/hono's middleware() alone (the route without authenticated())
 *   hono-route-passthrough  that, with a pass-through middleware where hono.authenticated() goes
 *   hono-bare-in-kit-process  bare Hono's route (nothing of the kit on it) in this process, which
 *                           holds the kit, its 1,000 stores and the local platform: the process's
 *                           own cost, apart from the route's
 *   hono-fetch-mount        kit.fetch, kit.authenticate and kit.secureResponse in one
 *                           middleware (the mount before store-app-kit/hono)
 *   hono-main-mount         as docs/runtimes.md showed before issue 31's speed work: two
 *                           middlewares, `c.res = kit.secureResponse(…)` (Hono copies a
 *                           Response assigned to c.res, its body through a stream)
 *   hono-no-secure          no kit.secureResponse
 *   hono-fetch-only         kit.fetch and kit.secureResponse, the bare handler (no kit.authenticate)
 *   hono-authenticate-only  no kit.fetch
 * A build without kit.secureResponse (before issue 31) is measured without the header set.
 */
async function startHonoKit(kit) {
  const { Hono } = await import('hono');
  const app = new Hono();
  // store-app-kit/hono (after issue 31's speed work): the mount docs/runtimes.md shows.
  const honoEntry = await import(new URL('hono.js', dist).href).catch(() => null);
  if (honoEntry && !VARIANT.startsWith('hono-fetch-mount') && VARIANT !== 'hono-main-mount') {
    if (VARIANT === 'hono-bare-in-kit-process') {
      // Bare Hono's route in the kit side's process: what the process alone costs.
      app.get('/api/data', (c) => c.json({ storeId: HONO_BARE_ID, ok: true }));
      return { app: await honoListenable(app), secure: false, mount: 'hono' };
    }
    const hono = honoEntry.storeAppHono(kit);
    if (VARIANT.startsWith('hono-wrapped')) {
      // No middleware: the mount around the app (hono.fetch) and around the handler.
      app.get(
        '/api/data',
        hono.authenticated((c) => c.json({ storeId: c.get('store').storeId, ok: true })),
      );
      return { app: await honoListenable(hono.fetch(app)), secure: true, mount: 'hono-wrapped' };
    }
    app.use('*', hono.middleware());
    if (VARIANT === 'hono-middleware-only') {
      app.get('/api/data', (c) => c.json({ storeId: HONO_BARE_ID, ok: true }));
    } else if (VARIANT === 'hono-route-passthrough') {
      // hono.authenticated()'s place taken by a middleware that does nothing: its dispatch alone.
      app.get(
        '/api/data',
        (_c, next) => next(),
        (c) => c.json({ storeId: HONO_BARE_ID, ok: true }),
      );
    } else {
      app.get('/api/data', hono.authenticated(), (c) =>
        c.json({ storeId: c.get('store').storeId, ok: true }),
      );
    }
    return { app: await honoListenable(app), secure: true, mount: 'hono' };
  }
  const secure = typeof kit.secureResponse === 'function' && VARIANT !== 'hono-no-secure';
  const fetchFirst = VARIANT !== 'hono-authenticate-only';
  const remoteAddress = (c) => ({ remoteAddress: c.env.incoming.socket.remoteAddress });
  if (VARIANT === 'hono-main-mount') {
    app.use('*', async (c, next) => {
      const answered = await kit.fetch(c.req.raw, remoteAddress(c));
      if (answered) return answered;
      await next();
    });
    if (secure) {
      app.use('*', async (c, next) => {
        await next();
        c.res = kit.secureResponse(c.req.raw, c.res);
      });
    }
  } else {
    app.use('*', async (c, next) => {
      if (fetchFirst) {
        const answered = await kit.fetch(c.req.raw, remoteAddress(c));
        if (answered) return answered;
      }
      await next();
      if (secure) {
        const secured = kit.secureResponse(c.req.raw, c.res);
        if (secured !== c.res) c.res = secured;
      }
    });
  }
  app.get('/api/data', async (c) => {
    if (VARIANT === 'hono-fetch-only') return c.json({ storeId: HONO_BARE_ID, ok: true });
    const store = await kit.authenticate(c.req.raw);
    if (store instanceof Response) return store;
    return c.json({ storeId: store.storeId, ok: true });
  });
  return { app: await honoListenable(app), secure, mount: 'fetch' };
}

/**
 * Bare Hono. BENCH_VARIANT on this side, to see what the kit's mount costs without the kit:
 *   hono-bare-middleware  one pass-through async middleware (the shape of the kit's mount)
 *   hono-bare-headers     that middleware setting, after next(), the headers the kit's set
 *                         gives a bearer request (HSTS, nosniff, Vary) on c.res.headers
 *   hono-bare-node-headers  those headers set on the Node response before next()
 *   hono-bare-header-bytes  those headers in the handler's own plain header object (no middleware)
 *   hono-bare-floor       the least a remembered-token route does, by hand (see below)
 *   hono-bare-idiomatic   hono/secure-headers + hono/bearer-auth over a Map of tokens seen
 *   hono-bare-two-middlewares  two synchronous pass-through middlewares, one on every path and
 *                         one on the route (the mount's shape: Hono's composition alone)
 */
async function startHonoBare() {
  const { Hono } = await import('hono');
  const app = new Hono();
  if (VARIANT === 'hono-bare-with-platform') {
    // The local platform and the kit side's 1,000 stores in this process, no kit: what the
    // platform in the kit's process used to cost (BENCH_PLATFORM_IN_PROCESS).
    globalThis.benchPlatform = await startBenchPlatform(PLATFORM_SETUP);
  }
  if (VARIANT === 'hono-bare-node-headers') {
    // The same three headers set on the Node response before the route (Node merges them
    // under the route's own): @hono/node-server keeps its plain-object path.
    app.use('*', (c, next) => {
      const out = c.env.outgoing;
      out.setHeader('strict-transport-security', 'max-age=31536000; includeSubDomains');
      out.setHeader('x-content-type-options', 'nosniff');
      out.setHeader('vary', 'Authorization');
      return next();
    });
  }
  if (VARIANT.startsWith('hono-bare-spin-')) {
    // A middleware that only burns N µs of CPU (`hono-bare-spin-N`), allocating nothing
    // (performance.now() returns a double): what a few µs of work costs the route over
    // sockets on this machine, whoever spends them.
    const spinMs = Number(VARIANT.slice('hono-bare-spin-'.length)) / 1000;
    app.use('*', (_c, next) => {
      const end = performance.now() + spinMs;
      while (performance.now() < end);
      return next();
    });
  }
  if (VARIANT === 'hono-bare-two-middlewares') {
    // The shape of the documented mount without its work: a pass-through middleware on
    // every path and one on the route (Hono composes three handlers instead of calling one).
    app.use('*', (_c, next) => next());
    app.get('/api/data', (_c, next) => next());
  }
  if (VARIANT === 'hono-bare-middleware' || VARIANT === 'hono-bare-headers') {
    app.use('*', async (c, next) => {
      await next();
      if (VARIANT === 'hono-bare-headers') {
        const h = c.res.headers;
        h.set('strict-transport-security', 'max-age=31536000; includeSubDomains');
        h.set('x-content-type-options', 'nosniff');
        h.set('vary', 'Authorization');
      }
    });
  }
  if (VARIANT === 'hono-bare-header-bytes') {
    // The bytes of the bearer header set, in the handler's own plain header object (no
    // middleware, no writeHead of the kit's; c.json() would build a Headers for more than
    // one header): what the three header lines alone cost on the wire.
    app.get(
      '/api/data',
      () =>
        new Response(JSON.stringify({ storeId: HONO_BARE_ID, ok: true }), {
          headers: BEARER_ANSWER_HEADERS,
        }),
    );
    return honoListenable(app);
  }
  if (VARIANT === 'hono-bare-floor') {
    // The least a remembered-token route can do (no kit): the bearer value looked up in a
    // Map (rememberedStore on first sight), its expiry
    // checked, a store object set on the context, and the three header lines in the
    // handler's own plain header object. The floor under `hono.authenticated(handler)`.
    const seen = new Map();
    app.get('/api/data', (c) => {
      const raw = c.env.incoming.rawHeaders;
      let authorization;
      for (let i = 0; i + 1 < raw.length; i += 2) {
        if (raw[i].length === 13 && raw[i].toLowerCase() === 'authorization') {
          authorization = raw[i + 1];
        }
      }
      let known = authorization === undefined ? undefined : seen.get(authorization);
      if (known === undefined && authorization?.startsWith('Bearer ')) {
        known = rememberedStore(authorization.slice(7));
        seen.set(authorization, known);
      }
      if (known === undefined || Date.now() >= known.until) return c.text('', 401);
      c.set('store', { storeId: known.storeId, scopes: known.scopes });
      return new Response(JSON.stringify({ storeId: c.get('store').storeId, ok: true }), {
        headers: BEARER_ANSWER_HEADERS,
      });
    });
    return honoListenable(app);
  }
  if (VARIANT === 'hono-bare-idiomatic') {
    // What a Hono developer writes by hand: hono/secure-headers on every route and
    // hono/bearer-auth on this one, its verifyToken a Map of tokens seen before (the
    // payload read on first sight, as in hono-bare-floor), the store set on the context.
    const { secureHeaders } = await import('hono/secure-headers');
    const { bearerAuth } = await import('hono/bearer-auth');
    const seen = new Map();
    app.use('*', secureHeaders());
    app.get(
      '/api/data',
      bearerAuth({
        verifyToken: (token, c) => {
          let known = seen.get(token);
          if (known === undefined) {
            known = rememberedStore(token);
            seen.set(token, known);
          }
          if (Date.now() >= known.until) return false;
          c.set('store', { storeId: known.storeId, scopes: known.scopes });
          return true;
        },
      }),
      (c) => c.json({ storeId: c.get('store').storeId, ok: true }),
    );
    return honoListenable(app);
  }
  app.get('/api/data', (c) => c.json({ storeId: HONO_BARE_ID, ok: true }));
  return honoListenable(app);
}
const honoSide = sides.has('hono') ? await startHonoKit(kitSide.kit) : undefined;
const honoBareApp = sides.has('honoBare') ? await startHonoBare() : undefined;

// --- Shopify, as its docs show for an embedded app --------------------------------
// Its packages live in bench/peers/node_modules (`npm run bench:peers` installs
// them); the soak suite runs this server without them (BENCH_WITHOUT_SHOPIFY=1).
async function startShopify() {
  await import('@shopify/shopify-api/adapters/node');
  const { ApiVersion, Session, shopifyApi } = await import('@shopify/shopify-api');
  const { MemorySessionStorage } = await import('@shopify/shopify-app-session-storage-memory');
  const shopApiKey = 'bench-api-key';
  const shopSecret = randomBytes(32).toString('hex');
  const shops = Array.from({ length: STORES }, (_, i) => `bench-store-${i}.myshopify.com`);
  const shopify = shopifyApi({
    apiKey: shopApiKey,
    apiSecretKey: shopSecret,
    hostName: '127.0.0.1:3000',
    hostScheme: 'http',
    apiVersion: ApiVersion.October25,
    isEmbeddedApp: true,
    scopes: ['read_products'],
    logger: { level: 0 },
  });
  const memory = new MemorySessionStorage();
  for (const shop of shops) {
    await memory.storeSession(
      new Session({
        id: shopify.session.getOfflineId(shop),
        shop,
        state: 'state',
        isOnline: false,
        accessToken: `shpat_${randomBytes(16).toString('hex')}`,
        scope: 'read_products',
      }),
    );
  }
  const shopApp = express();
  shopApp.get('/api/data', async (req, res) => {
    const token = /^Bearer (.+)$/.exec(req.get('authorization') ?? '')?.[1];
    let claims;
    try {
      claims = await shopify.session.decodeSessionToken(token ?? '');
    } catch {
      res.status(401).json({ error: 'invalid session token' });
      return;
    }
    const session = await memory.loadSession(
      shopify.session.getOfflineId(new URL(claims.dest).hostname),
    );
    if (!session?.isActive(shopify.config.scopes)) {
      res.status(401).json({ error: 'not installed' });
      return;
    }
    res.json({ storeId: session.shop, ok: true });
  });
  const now = Math.floor(Date.now() / 1000);
  const shopifyTokens = [];
  for (const shop of shops) {
    shopifyTokens.push(
      await new SignJWT({
        iss: `https://${shop}/admin`,
        dest: `https://${shop}`,
        aud: shopApiKey,
        sub: '1',
        sid: randomBytes(8).toString('hex'),
      })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuedAt(now)
        .setNotBefore(now)
        .setExpirationTime(now + 3600)
        .setJti(randomBytes(8).toString('hex'))
        .sign(new TextEncoder().encode(shopSecret)),
    );
  }
  return { shopApp, shopifyTokens };
}
const shopifySide = sides.has('shopify') ? await startShopify() : undefined;

// --- the receiver a user would otherwise write ------------------------------------
const std = new Webhook(secret);
const seen = new Set();
const webhookApp = express();
webhookApp.post('/webhooks', express.raw({ type: 'application/json' }), (req, res) => {
  try {
    std.verify(req.body, req.headers);
  } catch {
    res.status(401).json({ error: 'invalid signature' });
    return;
  }
  const id = req.get('webhook-id');
  if (seen.has(id)) {
    res.json({ status: 'duplicate' });
    return;
  }
  seen.add(id);
  res.json({ status: 'processed' });
});

// The same receiver with the kit's kind of dedupe: each id committed to a
// SQLite file (WAL) before the 200, so a restart cannot run a delivery twice.
// Equal work for the commit: the same `synchronous` level the kit's own
// connection runs with (read from it, not assumed: better-sqlite3 reopens an
// existing WAL file at NORMAL).
const kitSynchronous = kitSide?.kitSynchronous ?? Number(process.env.BENCH_SQLITE_SYNCHRONOUS ?? 2);
const durable = new Database(join(dir, 'peer-dedupe.db'));
durable.pragma('journal_mode = WAL');
durable.pragma(`synchronous = ${Number(kitSynchronous)}`);
durable.exec('CREATE TABLE IF NOT EXISTS deliveries (id TEXT PRIMARY KEY, received_at INTEGER)');
const recordDelivery = durable.prepare(
  'INSERT INTO deliveries (id, received_at) VALUES (?, ?) ON CONFLICT DO NOTHING',
);
const durableApp = express();
durableApp.post('/webhooks', express.raw({ type: 'application/json' }), (req, res) => {
  try {
    std.verify(req.body, req.headers);
  } catch {
    res.status(401).json({ error: 'invalid signature' });
    return;
  }
  durable.exec('BEGIN IMMEDIATE');
  const fresh = recordDelivery.run(req.get('webhook-id'), Date.now()).changes === 1;
  durable.exec('COMMIT');
  res.json({ status: fresh ? 'processed' : 'duplicate' });
});

const apps = {
  kit: kitSide?.kitApp,
  bare: bareApp,
  shopify: shopifySide?.shopApp,
  webhook: webhookApp,
  webhookDurable: durableApp,
  hono: honoSide?.app,
  honoBare: honoBareApp,
};
const servers = {};
for (const side of ALL_SIDES) if (sides.has(side)) servers[side] = await listen(apps[side]);
// watched-server: the kit's server watched for a shutdown, as the templates start it
// (`kit.shutdownOnSignals({ server })`): the server counts every request in flight.
if (VARIANT === 'watched-server' && servers.kit) {
  kitSide.kit.shutdownOnSignals({ server: servers.kit.server, signals: [], exit: false });
}

const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
// CPU profile of the serving alone (not the installs before it): bench/tools/profile-http.js.
let profiler;
process.on('message', async (m) => {
  if (m === 'cpu') process.send({ cpu: cpu() });
  if (m === 'profileStart') {
    const { Session } = await import('node:inspector/promises');
    profiler = new Session();
    profiler.connect();
    if (process.env.BENCH_PROFILE === 'heap') {
      // Allocation sampling, garbage included: what each request allocates, by site.
      await profiler.post('HeapProfiler.enable');
      await profiler.post('HeapProfiler.startSampling', {
        samplingInterval: 256,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
    } else {
      await profiler.post('Profiler.enable');
      await profiler.post('Profiler.start');
    }
    process.send({ profileStart: true });
  }
  if (m?.profileStop) {
    const { profile } = await profiler.post(
      process.env.BENCH_PROFILE === 'heap' ? 'HeapProfiler.stopSampling' : 'Profiler.stop',
    );
    writeFileSync(m.profileStop, JSON.stringify(profile));
    profiler.disconnect();
    process.send({ profileStop: m.profileStop });
  }
  if (m === 'webhooks') {
    // Read through a connection of its own: only committed rows count.
    const reader = new Database(kitSide.dbFile, { readonly: true });
    const { n } = reader.prepare('SELECT count(*) AS n FROM store_app_webhook_deliveries').get();
    reader.close();
    process.send({ webhooks: { handled: kitSide.handled(), recorded: n } });
  }
  if (m === 'memory') {
    globalThis.gc?.();
    const { rss, heapUsed } = process.memoryUsage();
    process.send({ memory: { rss, heapUsed } });
  }
  if (m === 'close') {
    for (const s of Object.values(servers)) s.server.closeAllConnections?.();
    for (const s of Object.values(servers)) s.server.close();
    await kitSide?.close();
    durable.close();
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  }
});
process.send({
  ready: true,
  kitSynchronous,
  honoSecure: honoSide?.secure,
  honoMount: honoSide?.mount,
  urls: Object.fromEntries(Object.entries(servers).map(([k, v]) => [k, v.url])),
  kitToken: kitSide?.kitTokens[0],
  // `one-store`: every request for the first store (what serving 1,000 stores' state costs).
  kitTokens: VARIANT === 'one-store' ? kitSide?.kitTokens.slice(0, 1) : kitSide?.kitTokens,
  shopifyToken: shopifySide?.shopifyTokens[0],
  shopifyTokens: shopifySide?.shopifyTokens,
});
