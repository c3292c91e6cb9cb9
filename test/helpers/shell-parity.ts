/**
 * The two shells side by side, for the shell-parity suite (test/shells/parity.test.ts)
 * and the red-team tests that reuse it (test/security/): one local platform, and
 * for each shell an app of its own, with a kit of its own on a Postgres database
 * of its own (reached through a TCP proxy that can stop forwarding, for the
 * "database unavailable" answers), over real sockets:
 *
 * - express: `app.use(kit.middleware())`, the app's routes behind `kit.authenticated()`;
 * - fetch: Hono on @hono/node-server, `kit.fetch(request, { remoteAddress })` first, the
 *   app's routes behind `kit.authenticate`, the kit's header set on them by
 *   `kit.secureResponse` (as templates/hono does, DECISIONS.md "Request path").
 *
 * Both apps are the same app: the same routes, the same handler work, the same
 * kit options. Each trusts `X-Forwarded-For` from the loopback proxy it sits
 * behind (here: the test), so every case can speak from an address of its own
 * and the install callback's per-source limit never couples two cases.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createAdaptorServer, type HttpBindings } from '@hono/node-server';
import express from 'express';
import { type Context, Hono } from 'hono';
import pg from 'pg';
import { pino } from 'pino';
import type { StoreAppOptions } from '../../src/config/index.js';
import { generateKey } from '../../src/crypto/index.js';
import type { StoreAppKit } from '../../src/kit.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { storeApp } from '../../src/store-app.js';
import { sign } from '../../src/webhooks/verify.js';
import { type HangingProxy, startHangingProxy } from './hanging-proxy.js';
import { createTempDatabase, type TempDatabase } from './postgres.js';

export type ShellName = 'express' | 'fetch';
export const SHELLS: readonly ShellName[] = ['express', 'fetch'];

/** The scopes both apps ask for (two, so a narrower grant can be made). */
export const SCOPES = ['read_products', 'read_orders'];
/** The health route's detail token (`health.token`). */
export const HEALTH_TOKEN = 'parity-health-token-0123456789abcdef';
/** Webhook bounds small enough to reach in a test. */
export const WEBHOOK_LIMITS = {
  maxBodyBytes: 32 * 1024,
  // One oversized reservation leaked (32 KiB) plus a 16 KiB delivery passes it: a leak shows.
  maxUnverifiedBytes: 40 * 1024,
  bodyTimeoutMs: 1000,
};
/** Callbacks a source may make per minute (each case speaks from its own address). */
export const CALLBACKS_PER_SOURCE = 2;
/** The kit's cookies. */
export const SESSION_COOKIE = 'store_app.sid';
export const BINDING_COOKIE = 'store_app_oauth';

/**
 * The kit's rows, counted before and after a case. Claims: the install's own
 * (state and code, ten minutes each); the health probe's and the launch's come
 * and go on their own clock.
 */
const COUNTS = {
  store_app_installations: 'select count(*) as n from store_app_installations',
  install_claims:
    "select count(*) as n from store_app_claims where namespace in ('oauth-state', 'oauth-code')",
  store_app_sessions: 'select count(*) as n from store_app_sessions',
  store_app_webhook_deliveries: 'select count(*) as n from store_app_webhook_deliveries',
  store_app_pending_purges: 'select count(*) as n from store_app_pending_purges',
  store_app_purge_audit: 'select count(*) as n from store_app_purge_audit',
} as const;
export type Table = keyof typeof COUNTS;
export const TABLES = Object.keys(COUNTS) as Table[];
export type Rows = Record<Table, number>;

/** One HTTP answer as the client saw it. */
export interface Answer {
  status: number;
  /** Lower-case names; `set-cookie` as a list. */
  headers: IncomingHttpHeaders;
  setCookies: string[];
  text: string;
  json: unknown;
  /** The error code: the JSON body's `code`, else `X-Store-App-Error`, else null. */
  code: string | null;
}

export interface SendOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** A Content-Length to declare instead of the body's. */
  declaredLength?: number;
  /** Send the body chunked (no Content-Length). */
  chunked?: boolean;
  /** Send only this many bytes of the body and keep the request open (a slow sender). */
  stallAfterBytes?: number;
  /** Send only this many bytes of the body, then reset the connection (no answer is read). */
  abortAfterBytes?: number;
}

/**
 * One request over its own connection (no keep-alive: an answer that closes
 * the connection cannot leak into the next case). Resolves to null only for
 * `abortAfterBytes`.
 */
export function send(url: string, o: SendOptions = {}): Promise<Answer | null> {
  const body = o.body === undefined ? undefined : Buffer.from(o.body);
  const headers: Record<string, string> = { ...o.headers };
  if (o.chunked) headers['transfer-encoding'] = 'chunked';
  else if (o.declaredLength !== undefined) headers['content-length'] = String(o.declaredLength);
  else if (body !== undefined) headers['content-length'] = String(body.length);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: o.method ?? 'GET', headers, agent: false });
    req.on('error', (err) => {
      if (o.abortAfterBytes !== undefined) resolve(null);
      else reject(err);
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        // A server that answered before reading the whole body: stop sending it.
        req.destroy();
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        if (/json/.test(String(res.headers['content-type'] ?? ''))) {
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
        }
        const bodyCode = (json as { code?: unknown } | undefined)?.code;
        const headerCode = res.headers['x-store-app-error'];
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          setCookies: res.headers['set-cookie'] ?? [],
          text,
          json,
          code:
            typeof bodyCode === 'string'
              ? bodyCode
              : typeof headerCode === 'string'
                ? headerCode
                : null,
        });
      });
    });
    if (o.abortAfterBytes !== undefined) {
      req.write(body?.subarray(0, o.abortAfterBytes) ?? Buffer.alloc(0));
      // Let the bytes reach the server (it starts reading), then cut the connection.
      setTimeout(() => {
        req.destroy();
        resolve(null);
      }, 150);
      return;
    }
    if (o.stallAfterBytes !== undefined) {
      req.write(body?.subarray(0, o.stallAfterBytes) ?? Buffer.alloc(0));
      return;
    }
    if (o.declaredLength !== undefined && body === undefined) {
      // A declaration only: the server must answer before any byte arrives.
      req.flushHeaders();
      return;
    }
    req.end(body);
  });
}

/** A browser's cookie jar (honouring Path; never follows redirects itself). */
export class Jar {
  readonly cookies = new Map<string, { value: string; path: string }>();

  constructor(private readonly app: ShellApp) {}

  /** `path` on the app (or an absolute URL), with this jar's cookies. */
  async send(pathOrUrl: string, o: SendOptions = {}): Promise<Answer> {
    const url = new URL(pathOrUrl, this.app.url);
    const cookie = [...this.cookies.entries()]
      .filter(([, c]) => url.pathname.startsWith(c.path))
      .map(([k, c]) => `${k}=${c.value}`)
      .join('; ');
    const headers = { ...o.headers, ...(cookie ? { cookie } : {}) };
    const answer = await this.app.send(url.toString(), { ...o, headers });
    for (const line of answer.setCookies) this.take(line);
    return answer;
  }

  get(pathOrUrl: string, headers: Record<string, string> = {}): Promise<Answer> {
    return this.send(pathOrUrl, { headers });
  }

  private take(line: string): void {
    const [pair, ...attrs] = line.split(';');
    const i = pair!.indexOf('=');
    const name = pair!.slice(0, i).trim();
    const value = pair!.slice(i + 1).trim();
    const path = attrs.map((a) => a.trim()).find((a) => /^path=/i.test(a));
    const expired =
      attrs.some((a) => /^expires=Thu, 01 Jan 1970/i.test(a.trim())) ||
      attrs.some((a) => /^max-age=0$/i.test(a.trim()));
    if (expired || value === '') this.cookies.delete(name);
    else this.cookies.set(name, { value, path: path ? path.slice(5) : '/' });
  }
}

/** Fetch Metadata of the admin's iframe loading the app (where a launch token counts). */
export const FRAMED = {
  accept: 'text/html',
  'sec-fetch-mode': 'navigate',
  'sec-fetch-dest': 'iframe',
  'sec-fetch-site': 'cross-site',
};
/** A top-level page navigation. */
export const TOP_LEVEL = { ...FRAMED, 'sec-fetch-dest': 'document', 'sec-fetch-site': 'none' };
/** The app's own script calling its API. */
export const XHR = {
  accept: 'application/json',
  'sec-fetch-mode': 'cors',
  'sec-fetch-dest': 'empty',
  'sec-fetch-site': 'same-origin',
};

export interface ShellApp {
  shell: ShellName;
  /** The app's origin, e.g. `http://127.0.0.1:41234`. */
  url: string;
  kit: StoreAppKit;
  platform: Platform;
  clientId: string;
  webhookSecret: string;
  /** The address this app sees requests come from (`X-Forwarded-For`); the runner sets one per case. */
  source: string;
  /** One request to `pathOrUrl` (relative to the app) from `source`. */
  send(pathOrUrl: string, o?: SendOptions): Promise<Answer>;
  /** The same, for a request whose client goes away mid-body (no answer). */
  sendAndAbort(pathOrUrl: string, o: SendOptions & { abortAfterBytes: number }): Promise<void>;
  /** A fresh browser on this app. */
  browser(): Jar;
  /** Rows of the kit's tables, read with a connection of the test's own. */
  rows(): Promise<Rows>;
  /** Webhook ids the app's `orders.create` handler ran for. */
  handled: string[];
  /** `METHOD path` of every request that no route answered (the app's own 404). */
  reachedApp: string[];
  /** Make the install hooks throw. */
  hooks: { failBefore: boolean; failAfter: boolean };
  /** What happens to this app's authorization-code exchanges (see `exchangeMode`). */
  exchange: { mode: ExchangeMode };
  /** The database stops answering (connections kept, nothing answered) / answers again. */
  database: { hang(): void; resume(): Promise<void> };
  /** Installs the app on a new store through the real flow (from an address of its own). */
  install(o?: { seed?: number }): Promise<{ storeId: string; jar: Jar; callbackUrl: string }>;
  /** The admin's iframe URL of the app for `storeId` (a fresh launch token). */
  launchUrl(storeId: string): Promise<string>;
  /** A signed delivery of `payload` (a new id unless given). */
  delivery(
    payload: unknown,
    o?: { id?: string; secret?: string; at?: Date },
  ): { id: string; body: string; headers: Record<string, string> };
  /** Log lines of the kit (JSON), for the cases that read its warnings. */
  logs: string[];
}

/**
 * What the local platform's token endpoint does with this app's code exchanges
 * (the kit's outgoing fetch, wrapped): `pass`, `invalid_client` (sent with a
 * wrong client secret: the platform refuses the app's credentials) or
 * `other_store` (the platform's answer names another store).
 */
export type ExchangeMode = 'pass' | 'invalid_client' | 'other_store';

export interface ParityOptions {
  /** Kit options over the defaults (both shells). */
  kit?: Partial<StoreAppOptions>;
  /**
   * How the Fetch app passes the client's address: `forwarded` (the trusted
   * `X-Forwarded-For` entry, else the socket's) or `none` (no `remoteAddress`:
   * the docs' Next.js example by default, a Hono app behind a proxy that forgot it).
   * @default 'forwarded'
   */
  fetchRemoteAddress?: 'forwarded' | 'none';
  /** Only these shells. @default both */
  shells?: readonly ShellName[];
}

export interface Parity {
  platform: Platform;
  apps: Record<ShellName, ShellApp>;
  close(): Promise<void>;
}

let sources = 0;
/** A client address no other request of this process used. */
export function freshSource(): string {
  sources++;
  return `10.${(sources >> 16) & 255}.${(sources >> 8) & 255}.${sources & 255}`;
}

/** The client address the app trusts: the last `X-Forwarded-For` entry from the loopback proxy. */
function forwardedFor(header: string | undefined, socketAddress: string | undefined) {
  const loopback = socketAddress === '127.0.0.1' || socketAddress === '::ffff:127.0.0.1';
  const last = header?.split(',').at(-1)?.trim();
  return loopback && last ? last : socketAddress;
}

/** The same app on both shells: a page and a small notes API behind the kit. */
const NOTE = '<b>a note the merchant wrote</b>';
function pageHtml(storeId: string): string {
  return `<!doctype html><p id="store">${storeId}</p>`;
}

async function startExpress(kitRef: { kit?: StoreAppKit }, reachedApp: string[]) {
  const app = express();
  // Behind the test, a proxy on loopback: req.ip is the address it forwards.
  app.set('trust proxy', 'loopback');
  const server = createServer(app);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  /** The kit and the app's routes, once the kit exists (it needs the app's URL). */
  const mount = () => {
    const kit = kitRef.kit!;
    app.use(kit.middleware());
    app.get('/', kit.authenticated(), (_req, res) => {
      const framing = kit.frameAncestors();
      res.set('cache-control', 'no-store');
      res.set('content-security-policy', `default-src 'self'${framing ? `; ${framing}` : ''}`);
      res.type('html').send(pageHtml(res.locals.store.storeId));
    });
    app.get('/api/notes', kit.authenticated(), (_req, res) => {
      res.json({ storeId: res.locals.store.storeId, notes: [NOTE] });
    });
    app.post('/api/notes', kit.authenticated(), (_req, res) => {
      res.json({ saved: res.locals.store.storeId });
    });
    // What no route answered reaches the app's own fallback (an SPA, a proxy, a 404).
    app.use((req, res) => {
      reachedApp.push(`${req.method} ${req.path}`);
      res.status(404).json({ code: 'NOT_FOUND', message: 'No such route.' });
    });
  };
  return { server, mount };
}

type HonoEnv = { Bindings: HttpBindings };

async function startFetch(
  kitRef: { kit?: StoreAppKit },
  remote: 'forwarded' | 'none',
  reachedApp: string[],
) {
  const app = new Hono<HonoEnv>();
  /** What the app passes as `remoteAddress` (nothing, in `none` mode). */
  const options = (c: Context<HonoEnv>): { remoteAddress?: string } => {
    if (remote === 'none') return {};
    const address = forwardedFor(
      c.req.header('x-forwarded-for'),
      c.env.incoming.socket.remoteAddress,
    );
    return address === undefined ? {} : { remoteAddress: address };
  };
  // The kit's routes first, as docs/runtimes.md and templates/hono mount them.
  app.use('*', async (c, next) => {
    const answered = await kitRef.kit!.fetch(c.req.raw, options(c));
    if (answered) return answered;
    await next();
  });
  // The kit's header set on the app's own routes (DECISIONS.md: kit.secureResponse).
  app.use('*', async (c, next) => {
    await next();
    c.res = kitRef.kit!.secureResponse(c.req.raw, c.res);
  });
  const authenticate = (c: Context<HonoEnv>) => kitRef.kit!.authenticate(c.req.raw, options(c));
  app.get('/', async (c) => {
    const store = await authenticate(c);
    if (store instanceof Response) return store;
    const framing = kitRef.kit!.frameAncestors();
    c.header('cache-control', 'no-store');
    c.header('content-security-policy', `default-src 'self'${framing ? `; ${framing}` : ''}`);
    return c.html(pageHtml(store.storeId));
  });
  app.get('/api/notes', async (c) => {
    const store = await authenticate(c);
    if (store instanceof Response) return store;
    return c.json({ storeId: store.storeId, notes: [NOTE] });
  });
  app.post('/api/notes', async (c) => {
    const store = await authenticate(c);
    if (store instanceof Response) return store;
    return c.json({ saved: store.storeId });
  });
  // What no route answered reaches the app's own fallback (an SPA, a proxy, a 404).
  app.notFound((c) => {
    reachedApp.push(`${c.req.method} ${new URL(c.req.url).pathname}`);
    return c.json({ code: 'NOT_FOUND', message: 'No such route.' }, 404);
  });
  const server = createAdaptorServer({ fetch: app.fetch }) as Server;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, mount: () => {} };
}

/**
 * Starts the platform and both apps. The kits' outgoing token exchanges pass
 * through `exchange.mode` of their app (the platform itself answers them).
 */
export async function startParity(options: ParityOptions = {}): Promise<Parity> {
  const platform = await startPlatform({ logger: false });
  const shells = options.shells ?? SHELLS;
  const apps = {} as Record<ShellName, ShellApp>;
  const cleanups: Array<() => Promise<void> | void> = [];
  const tokenUrl = `${platform.authUrl}/oauth/token`;
  const byClient = new Map<string, ShellApp>();

  // The kits' code exchanges go out through the process's fetch: bend them per app.
  const realFetch = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (url !== tokenUrl || typeof init?.body !== 'string') return realFetch(input, init);
    const body = JSON.parse(init.body) as Record<string, string>;
    const app = byClient.get(body.client_id ?? '');
    if (body.grant_type !== 'authorization_code' || !app || app.exchange.mode === 'pass') {
      return realFetch(input, init);
    }
    if (app.exchange.mode === 'invalid_client') {
      const wrong = { ...body, client_secret: randomBytes(24).toString('base64url') };
      return realFetch(input, { ...init, body: JSON.stringify(wrong) });
    }
    const answered = await realFetch(input, init);
    const token = (await answered.json()) as Record<string, unknown>;
    return new Response(JSON.stringify({ ...token, store_id: randomUUID() }), {
      status: answered.status,
      headers: answered.headers,
    });
  };
  cleanups.push(() => {
    globalThis.fetch = realFetch;
  });

  try {
    for (const shell of shells) {
      const db: TempDatabase = await createTempDatabase(`sak_parity_${shell}`);
      cleanups.push(() => db.drop());
      const proxy: HangingProxy = await startHangingProxy(Number(new URL(db.url).port || 5432));
      cleanups.push(() => proxy.close());
      const reader = new pg.Client({ connectionString: db.url });
      await reader.connect();
      cleanups.push(() => reader.end());

      const kitRef: { kit?: StoreAppKit } = {};
      const reachedApp: string[] = [];
      const { server, mount } =
        shell === 'express'
          ? await startExpress(kitRef, reachedApp)
          : await startFetch(kitRef, options.fetchRemoteAddress ?? 'forwarded', reachedApp);
      cleanups.push(() => {
        server.closeAllConnections();
        server.close();
      });
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const creds = platform.registerApp({
        name: `Parity ${shell}`,
        redirectUri: `${url}/auth/callback`,
        webhookUrl: `${url}/webhooks`,
        scopes: SCOPES,
        appUrl: url,
      });
      const logs: string[] = [];
      const destination = new Writable({
        write(chunk, _enc, cb) {
          logs.push(String(chunk));
          cb();
        },
      });
      const hooks = { failBefore: false, failAfter: false };
      const handled: string[] = [];
      const extra = options.kit ?? {};
      const kit = (await storeApp({
        ...extra,
        appUrl: url,
        environment: 'test',
        oauth: {
          clientId: creds.clientId,
          clientSecret: creds.clientSecret,
          scopes: SCOPES,
          authUrl: platform.authUrl,
          ...extra.oauth,
        },
        storage: {
          databaseUrl: proxy.via(db.url),
          encryptionKeys: [generateKey()],
          ...extra.storage,
        },
        session: { secret: randomBytes(32).toString('base64url'), ...extra.session },
        webhooks: { secrets: creds.webhookSecret, ...WEBHOOK_LIMITS, ...extra.webhooks },
        health: { path: '/healthz', token: HEALTH_TOKEN, cacheMs: 0, ...extra.health },
        // No second sweep a minute after a purge: the outbox's rows settle within the case.
        purgeHorizonMs: extra.purgeHorizonMs ?? 0,
        auth: {
          maxCallbacksPerSourcePerMinute: CALLBACKS_PER_SOURCE,
          beforeInstall: () => {
            if (hooks.failBefore) throw new Error('beforeInstall failed (test)');
          },
          afterInstall: () => {
            if (hooks.failAfter) throw new Error('afterInstall failed (test)');
          },
          ...extra.auth,
        },
        logger: { instance: pino({ level: 'info' }, destination) },
      })) as StoreAppKit;
      kitRef.kit = kit;
      mount();
      cleanups.push(() => kit.close());
      kit.webhooks.on('orders.create', async (event) => {
        handled.push(event.id);
      });

      const app: ShellApp = {
        shell,
        url,
        kit,
        platform,
        clientId: creds.clientId,
        webhookSecret: creds.webhookSecret,
        source: freshSource(),
        async send(pathOrUrl, o = {}) {
          const target = new URL(pathOrUrl, url).toString();
          const headers = { 'x-forwarded-for': app.source, ...o.headers };
          return (await send(target, { ...o, headers }))!;
        },
        async sendAndAbort(pathOrUrl, o) {
          const target = new URL(pathOrUrl, url).toString();
          await send(target, { ...o, headers: { 'x-forwarded-for': app.source, ...o.headers } });
        },
        browser: () => new Jar(app),
        async rows() {
          const out = {} as Rows;
          for (const t of TABLES) {
            const r = await reader.query<{ n: string }>(COUNTS[t]);
            out[t] = Number(r.rows[0]!.n);
          }
          return out;
        },
        handled,
        reachedApp,
        hooks,
        exchange: { mode: 'pass' },
        database: {
          hang: () => proxy.hang(),
          async resume() {
            proxy.resume();
            // Bounded: the pool reconnects and the kit's health check passes again.
            const end = Date.now() + 20_000;
            for (;;) {
              const r = await kit.health();
              if (r.status === 'ok') return;
              if (Date.now() > end) throw new Error(`${shell}: the database did not come back`);
              await new Promise((done) => setTimeout(done, 200));
            }
          },
        },
        async install(o = {}) {
          const { storeId } = platform.createStore({ name: `Parity ${shell}`, seed: o.seed ?? 0 });
          const jar = new Jar(app);
          // An address of its own: a setup install never spends a case's callback budget.
          const source = app.source;
          app.source = freshSource();
          try {
            const begun = await jar.get(`/auth?store_id=${storeId}`, TOP_LEVEL);
            if (begun.status !== 302) throw new Error(`${shell}: begin answered ${begun.status}`);
            const callbackUrl = platform.approveInstall({
              authorizeUrl: String(begun.headers.location),
              storeId,
            });
            const done = await jar.get(callbackUrl, TOP_LEVEL);
            if (done.status !== 302) {
              throw new Error(`${shell}: install answered ${done.status} ${done.code}`);
            }
            return { storeId, jar, callbackUrl };
          } finally {
            app.source = source;
          }
        },
        async launchUrl(storeId) {
          const res = await realFetch(
            `${platform.adminUrl}/stores/${storeId}/apps/${creds.clientId}`,
          );
          const src = /<iframe[^>]* src="([^"]+)"/.exec(await res.text())?.[1];
          if (!src) throw new Error(`${shell}: the admin framed no app for ${storeId}`);
          return src.replaceAll('&amp;', '&');
        },
        delivery(payload, o = {}) {
          const id = o.id ?? `msg_${randomUUID()}`;
          const body = JSON.stringify(payload);
          const at = Math.floor((o.at ?? new Date()).getTime() / 1000);
          const headers = {
            'content-type': 'application/json',
            ...sign(o.secret ?? creds.webhookSecret, id, at, body),
          };
          return { id, body, headers };
        },
        logs,
      };
      byClient.set(creds.clientId, app);
      apps[shell] = app;
    }
  } catch (err) {
    for (const c of cleanups.reverse()) await c();
    await platform.close();
    throw err;
  }

  return {
    platform,
    apps,
    async close() {
      for (const c of cleanups.reverse()) {
        try {
          await c();
        } catch {
          // Closing the rest matters more than one failed close.
        }
      }
      await platform.close();
    },
  };
}
