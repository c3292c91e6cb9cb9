/**
 * `storeApp()`: composes the modules into the kit object. Composition only:
 * each section below builds one module from the resolved config and hands it
 * what it needs. Logic lives in the modules.
 */
import { randomUUID } from 'node:crypto';
import type {
  MySqlDatabase as DrizzleMySqlDatabase,
  MySqlQueryResultHKT,
  PreparedQueryHKTBase,
} from 'drizzle-orm/mysql-core';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';
import { type Request as ExpressRequest, type RequestHandler, Router } from 'express';
import type { Logger } from 'pino';
import type { AuthenticatedStore } from './authenticated/index.js';
import { createApiRuntime } from './authenticated/runtime.js';
import type { StoreApiClient } from './client/index.js';
import { type ResolvedConfig, resolveConfig, type StoreAppOptions } from './config/index.js';
import { createAuthenticate } from './core/authenticate.js';
import { BROWSER_MODULE_PATH, createBrowserModuleRoute } from './core/browser-module-route.js';
import { createSessionTokenRoute } from './core/session-token-route.js';
import { createWebhookCore } from './core/webhook-receiver.js';
import { createGrantChecker, type GrantCheck } from './grant/index.js';
import { createHealthCheck, HEALTH_PROBE_NAMESPACE, type HealthReport } from './health/index.js';
import { healthDetailWarning } from './health/options.js';
import { kitErrorHandler } from './http/errors.js';
import { assertSupportedExpress } from './http/express-version.js';
import { attachRequestLog, createKitLogger } from './http/logger.js';
import { framingWarning, pageFrameAncestors, securityHeaders } from './http/security-headers.js';
import { hasNoBrowserSession, memoryStoreWarning, sessionMiddleware } from './http/session.js';
import { createInstallBegin } from './install/begin.js';
import { createInstallCallback } from './install/callback.js';
import { createInstallContext } from './install/context.js';
import { ancestorsDirective } from './install/pages.js';
import { createInstallRoutes } from './install/routes.js';
import { withDiscoveredEndpoints } from './oauth/discovery.js';
import { installationHasScopes } from './oauth/scopes.js';
import { createPurge, type PurgeFunction } from './purge/index.js';
import { createPurgeOutbox } from './purge/outbox.js';
import { expressHandler } from './shells/express/handler.js';
import { createFetchShell, type FetchOptions, type FetchShell } from './shells/fetch/index.js';
import type { StorageAdapter } from './storage/contract.js';
import { createStorage } from './storage/index.js';
import type {
  AnyDrizzle,
  Installation,
  PendingPurge,
  PurgeResult,
  Storage,
} from './storage/types.js';
import { createWebhooks, type WebhookRegistry } from './webhooks/index.js';

export interface KitInstallations {
  /** The store's installation (tokens decrypted), or null when not installed. */
  get(storeId: string): Promise<Installation | null>;
  list(): Promise<Installation[]>;
  /** Delete everything held for the store (same as `kit.purge`). */
  delete(storeId: string): Promise<PurgeResult>;
  /** True when the store's installation has every scope the app is configured for. */
  hasRequiredScopes(installation: Installation): boolean;
}

/**
 * The kit's Drizzle handle on SQLite (better-sqlite3). Typed with Drizzle's
 * driver-neutral base class so that the kit's types never need
 * `@types/better-sqlite3` or `@types/pg`.
 */
export type SqliteDatabase = BaseSQLiteDatabase<'sync', unknown>;
/** The kit's Drizzle handle on Postgres (node-postgres). */
export type PostgresDatabase = PgDatabase<PgQueryResultHKT>;
/** The kit's Drizzle handle on MySQL / MariaDB (mysql2). */
export type MysqlDatabase = DrizzleMySqlDatabase<MySqlQueryResultHKT, PreparedQueryHKTBase>;

/** What `kit.authenticated()` guarantees on `res.locals` for the handlers after it. */
export interface AuthenticatedLocals extends Record<string, unknown> {
  store: AuthenticatedStore;
}

/**
 * `kit.authenticated()`: an Express handler whose `res.locals` type carries
 * `store`, so `app.get(path, kit.authenticated(), (req, res) => res.locals.store)`
 * is typed. For `router.use(kit.authenticated())`, opt into the global
 * declaration with `import type {} from 'store-app-kit/locals'`.
 */
export type AuthenticatedHandler = RequestHandler<
  Record<string, string>,
  unknown,
  unknown,
  Record<string, unknown>,
  AuthenticatedLocals
>;

interface StoreAppKitBase {
  /**
   * Express middleware to mount once, before your routes: request logger,
   * security headers, the webhook receiver, the session and the install routes.
   * Mount it before your own body parsers (after them only with
   * `express.json({ verify: keepRawBody })`: docs/webhooks.md); it parses no bodies itself.
   */
  middleware(): Router;
  installations: KitInstallations;
  /** Handlers for platform events: `kit.webhooks.on('app.uninstalled', fn)`. */
  webhooks: WebhookRegistry;
  /** Delete everything held for a store (kit rows and your store-scoped tables). */
  purge: PurgeFunction;
  /**
   * Uninstall purges recorded but not done yet (the outbox; normally empty).
   * Each is retried with backoff until it succeeds, also after a restart.
   * Same list as `npx store-app purges`.
   */
  pendingPurges(): Promise<PendingPurge[]>;
  /**
   * Database reachability, pending purges and the last refresh failure, as
   * the `health.path` route reports them (reused for `health.cacheMs`). For an
   * app that mounts its own route behind its own guard.
   */
  health(): Promise<HealthReport>;
  /**
   * Middleware for app routes: finds the store (session or app session token),
   * sets `res.locals.store = { storeId, scopes, client, sessionToken }`, and sends
   * the merchant through the install when the app cannot act for the store.
   */
  authenticated(): AuthenticatedHandler;
  /**
   * The kit's routes on the Fetch API (Hono, Bun, Deno, Next.js): the install
   * begin and callback and the webhook receiver answer here; null for any other
   * request (your routes). `options.remoteAddress`: the client's address, which
   * a `Request` does not carry (docs/runtimes.md).
   */
  fetch(request: Request, options?: FetchOptions): Promise<Response | null>;
  /**
   * `authenticated()` on the Fetch API: the store of a request (app session
   * token, the admin's launch, or the session cookie shared with Express) as
   * `{ storeId, scopes, client, sessionToken }`, or the `Response` to send
   * instead: a launch's redirect setting the session cookie, re-authorisation
   * (redirect, page in the admin's iframe, or 401 with the re-authorise
   * header), 403 for a cross-site write, 503, 500.
   */
  authenticate(request: Request, options?: FetchOptions): Promise<AuthenticatedStore | Response>;
  /**
   * The `frame-ancestors` CSP directive for pages you serve yourself outside
   * Express (Hono, Bun, Deno, Next.js), e.g. `frame-ancestors https://admin.example`;
   * undefined when the app sends its own framing headers (`securityHeaders`).
   */
  frameAncestors(): string | undefined;
  /** The typed API client of a store, for background jobs and scripts. */
  client(storeId: string): StoreApiClient;
  /**
   * Asks the platform's session check what the store's grant is, beside what the
   * kit stored (scopes, store). Every install is confirmed this way in the
   * background. A revoked grant is reported, never purged.
   */
  checkGrant(storeId: string): Promise<GrantCheck>;
  /**
   * An app session token (HS256 JWT) for the embedded frontend's `Authorization: Bearer`,
   * bound to the store's current installation (an uninstall ends it). Throws
   * `NotInstalledError` for a store that is not installed.
   */
  sessionToken(storeId: string): Promise<{ token: string; expiresAt: Date }>;
  storage: Storage;
  /** The kit's logger (redacting); children per request are at `res.locals.log`. */
  logger: Logger;
  /** The resolved configuration (secrets included: never log or send it). */
  config: ResolvedConfig;
  /** Stops background work and closes the database. */
  close(): Promise<void>;
}

/** The kit on SQLite: `kit.dialect === 'sqlite'` narrows `kit.db`. */
export interface SqliteStoreAppKit extends StoreAppKitBase {
  /** The database chosen by `DATABASE_URL`. */
  dialect: 'sqlite';
  /** Drizzle handle on the kit's database for your own tables. */
  db: SqliteDatabase;
}

/** The kit on Postgres: `kit.dialect === 'postgres'` narrows `kit.db`. */
export interface PostgresStoreAppKit extends StoreAppKitBase {
  /** The database chosen by `DATABASE_URL`. */
  dialect: 'postgres';
  /** Drizzle handle on the kit's database for your own tables. */
  db: PostgresDatabase;
}

/** The kit on MySQL / MariaDB: `kit.dialect === 'mysql'` narrows `kit.db`. */
export interface MysqlStoreAppKit extends StoreAppKitBase {
  /** The database chosen by `DATABASE_URL`. */
  dialect: 'mysql';
  /** Drizzle handle on the kit's database for your own tables. */
  db: MysqlDatabase;
}

/** The kit on the app's own StorageAdapter (`storage.adapter`): no Drizzle handle. */
export interface CustomStorageStoreAppKit extends StoreAppKitBase {
  dialect: 'custom';
  /** undefined: keep the app's tables in the adapter's own database. */
  db: undefined;
}

/**
 * What `storeApp()` returns on the built-in storage. The dialect is only known
 * at run time (from `DATABASE_URL`), so `kit.db` is typed once you check
 * `kit.dialect`. With `storage.adapter`, `storeApp()` returns a
 * CustomStorageStoreAppKit instead.
 */
export type StoreAppKit = SqliteStoreAppKit | PostgresStoreAppKit | MysqlStoreAppKit;

/** `storeApp()` options that name the app's own StorageAdapter. */
export type StoreAppOptionsWithAdapter = StoreAppOptions & {
  storage: { adapter: StorageAdapter };
};

/** `storeApp()` options on the built-in storage (no `storage.adapter`). */
export type StoreAppOptionsWithoutAdapter = StoreAppOptions & {
  storage?: { adapter?: undefined };
};

/** `first`, then `second` unless `first` passed an error: two middlewares as one router layer. */
function inSeries(first: RequestHandler, second: RequestHandler): RequestHandler {
  return function storeAppBrowserLayer(req, res, next) {
    first(req, res, (err?: unknown) => {
      if (err !== undefined && err !== null) next(err);
      else second(req, res, next);
    });
  };
}

/**
 * Builds the kit (the public, typed entry is `storeApp()` in ./store-app.ts,
 * which imports this module on demand).
 */
export async function createKit(
  options: StoreAppOptions = {},
): Promise<StoreAppKit | CustomStorageStoreAppKit> {
  assertSupportedExpress();
  const resolved = resolveConfig(options);
  const config: ResolvedConfig = {
    ...resolved,
    oauth: await withDiscoveredEndpoints(resolved.oauth, options.oauth),
  };
  const logger = createKitLogger(config.logger);
  const framing = framingWarning(config.securityHeaders.enabled, config.securityHeaders);
  if (framing) logger.warn({ setting: 'securityHeaders' }, framing);
  const memoryStore = memoryStoreWarning(config.session.store, config.environment);
  if (memoryStore) logger.warn({ setting: 'session.store' }, memoryStore);
  const healthDetail = healthDetailWarning(config.health);
  if (healthDetail) logger.warn({ setting: 'health.detail' }, healthDetail);
  const closers: Array<() => Promise<void> | void> = [];

  // --- storage -------------------------------------------------------------
  const storage = await createStorage({
    ...(config.storage.adapter
      ? { adapter: config.storage.adapter }
      : { databaseUrl: config.storage.databaseUrl }),
    encryptionKeys: config.storage.encryptionKeys,
    migrate: config.storage.migrate,
    pool: { max: config.storage.poolMax },
    timeoutMs: config.storage.timeoutMs,
    logger: logger.child({ component: 'storage' }),
  });
  closers.push(() => storage.close());

  // --- purge ---------------------------------------------------------------
  const purge = createPurge({
    storage,
    options: config.purge,
    logger: logger.child({ component: 'purge' }),
  });

  // --- client / refresh / authenticated ------------------------------------
  const api = createApiRuntime(config, {
    storage,
    logger: logger.child({ component: 'client' }),
  });
  api.start();
  closers.push(() => api.close());
  // Whoever purges (webhook or the app), in-memory state of the store goes too.
  const purgeStore: PurgeFunction = async (storeId, o) => {
    try {
      return await purge(storeId, o);
    } finally {
      api.forget(storeId);
    }
  };

  // --- grant confirmation: the platform's session check ---------------------
  const grants = createGrantChecker({
    client: (storeId) => api.client(storeId),
    storedScopes: async (storeId) => (await storage.installations.get(storeId))?.scopes,
    requiredScopes: config.oauth.scopes,
    sessionCheckUrl: config.client.sessionCheckUrl ?? config.oauth.sessionCheckUrl,
    logger: logger.child({ component: 'grant' }),
  });
  closers.push(() => grants.close());

  // --- purge outbox: pending uninstall purges, resumed now and retried -----
  const outbox = createPurgeOutbox({
    pendingPurges: storage.pendingPurges,
    purge: purgeStore,
    logger: logger.child({ component: 'purge' }),
    ...(config.purge.horizonMs === undefined ? {} : { sweepDelayMs: config.purge.horizonMs }),
    // Purge transactions take at most half the pool: a burst's deliveries need the rest to be recorded.
    concurrency: Math.min(4, Math.max(1, Math.floor(config.storage.poolMax / 2))),
  });
  outbox.start();
  closers.push(() => outbox.close());

  // --- webhooks ------------------------------------------------------------
  const webhooks = createWebhooks({
    storage,
    options: config.webhooks,
    purge: purgeStore,
    outbox,
    logger: logger.child({ component: 'webhooks' }),
    // Pooled databases only: on SQLite the deliveries share one COMMIT, a gate would shrink it.
    ...(storage.dialect === 'postgres' || storage.dialect === 'mysql'
      ? {
          recordPool: {
            poolMax: config.storage.poolMax,
            storageTimeoutMs: config.storage.timeoutMs,
          },
        }
      : {}),
  });

  // --- health ---------------------------------------------------------------
  // Each probe writes a new short-lived claim row (pruned with the other expired
  // claims): a full disk or a read-only database fails it while reads still work.
  const probeId = randomUUID();
  let probes = 0;
  const health = createHealthCheck({
    pendingPurges: storage.pendingPurges,
    lastRefreshFailure: () => api.tokens.lastRefreshFailure(),
    pendingTokenWrites: () => api.tokens.pendingWrites(),
    writeProbe: () =>
      storage.claimOnce(
        HEALTH_PROBE_NAMESPACE,
        `${probeId}.${++probes}`,
        new Date(Date.now() + 60_000),
      ),
    options: config.health,
  });

  // --- install: one context (pending cookie, callback limits) for both shells --
  const install = createInstallContext({
    config,
    storage,
    logger,
    // Both shells: in-memory state of the store goes, and the new grant is confirmed.
    onInstalled: (storeId) => {
      api.forget(storeId);
      grants.confirmInstall(storeId);
    },
    pageFrameAncestors: pageFrameAncestors(config),
  });

  // --- Fetch shell: the same core handlers on Request/Response, built once ---
  let fetchShell: FetchShell | undefined;
  // The kit's routes under appUrl's path, as the platform and the merchant call them.
  const appPath = new URL(config.appUrl).pathname.replace(/\/+$/, '');
  const pageFraming = ancestorsDirective(pageFrameAncestors(config));
  const buildFetchShell = (): FetchShell => {
    const authenticate = createAuthenticate({
      sessionTokens: api.sessionTokens,
      tokens: api.tokens,
      client: (storeId) => api.client(storeId),
      scopes: config.oauth.scopes,
      narrowerScopes: config.auth.narrowerScopes,
      launch: api.launch,
      launchWatch: api.launchWatch,
      beginUrl: config.auth.beginUrl,
      reauthorizeHeader: config.authenticated.reauthorizeHeader,
      maxSessionAgeSeconds: config.session.maxAgeSeconds,
      frameAncestors: pageFraming,
      logger: logger.child({ component: 'authenticated' }),
    });
    return createFetchShell({
      routes: [
        {
          path: new URL(config.auth.beginUrl).pathname,
          methods: ['GET', 'HEAD'],
          handler: createInstallBegin(install),
        },
        {
          path: new URL(config.auth.redirectUri).pathname,
          methods: ['GET', 'HEAD'],
          handler: createInstallCallback(install),
        },
        {
          // Same path as on Express: the page swaps its cookie session for a bearer token.
          path: `${new URL(config.auth.beginUrl).pathname}/session-token`,
          methods: ['GET'],
          handler: createSessionTokenRoute(authenticate),
        },
        {
          path: new URL(config.auth.beginUrl).pathname + BROWSER_MODULE_PATH,
          methods: ['GET', 'HEAD'],
          handler: createBrowserModuleRoute(),
        },
        {
          path: appPath + webhooks.path,
          methods: 'any',
          handler: createWebhookCore({
            options: config.webhooks,
            process: webhooks.process,
            logger: logger.child({ component: 'webhooks' }),
          }),
        },
        ...(config.health.path === null
          ? []
          : [
              {
                path: appPath + config.health.path,
                methods: ['GET', 'HEAD'],
                handler: health.coreHandler(),
              },
            ]),
      ],
      session: config.session,
      sessionStore: config.session.store ?? storage.sessionStore(),
      authenticate,
      launchParam: api.launch?.param,
      logger,
    });
  };

  // --- HTTP: one router, built once ----------------------------------------
  let router: Router | undefined;
  const buildRouter = (): Router => {
    const r = Router();
    const session: RequestHandler = sessionMiddleware(
      config.session,
      config.session.store ?? storage.sessionStore(),
    );
    const headers = config.securityHeaders.enabled
      ? securityHeaders(config.embedded, config.securityHeaders, config.session.secure)
      : undefined;
    const browser = headers ? inSeries(headers, session) : session;
    // Webhook deliveries and probes come from servers, carry no cookie, and get JSON that
    // no browser renders: no session, no browser headers (helmet's headers cost ~6% of a
    // delivery for nothing). Express matches routes case-insensitively and with a trailing
    // slash too; a spelling this exact check misses still reaches its route, only after a
    // session lookup it did not need.
    const healthPath = config.health.path;
    // The browser module is a public file: no session to read for it either.
    const modulePath = config.auth.path + BROWSER_MODULE_PATH;
    const forMachines = (req: ExpressRequest) => {
      const path = req.path;
      return (
        path === webhooks.path ||
        ((path === healthPath || path === modulePath) &&
          (req.method === 'GET' || req.method === 'HEAD'))
      );
    };
    const attachLog = attachRequestLog(logger);
    const launchWatch = api.launchWatch;
    // Every request of the app passes this one layer before the kit's routes: the request
    // log; the launch watch, before anything can answer the admin's launch of a page
    // (it notices a launch that never reaches kit.authenticated(), a static index.html,
    // to say so in the 401s that follow); the security headers and the session. One layer,
    // and the routes on this router (not a nested one): each layer Express dispatches costs
    // every request of the app a dispatch and its garbage (issues 15 and 24: GC and
    // dispatch were the largest shares of the gap to bare Express on an authenticated route).
    r.use(function storeAppRequestStart(req, res, next) {
      attachLog(req, res);
      launchWatch?.note(req, res);
      if (forMachines(req)) {
        next();
        return;
      }
      if (hasNoBrowserSession(req)) {
        if (headers) headers(req, res, next);
        else next();
        return;
      }
      browser(req, res, next);
    });
    r.all(webhooks.path, webhooks.receiver);
    if (config.health.path !== null) r.get(config.health.path, health.handler());
    createInstallRoutes(install.deps, r, install);
    r.get(`${config.auth.path}/session-token`, api.authenticated(), api.sessionTokenHandler());
    r.get(modulePath, expressHandler(createBrowserModuleRoute(), logger));
    r.use(kitErrorHandler(logger));
    return r;
  };

  const kit: StoreAppKitBase & { dialect: Storage['dialect']; db: AnyDrizzle } = {
    middleware() {
      router ??= buildRouter();
      return router;
    },
    installations: {
      get: (storeId) => storage.installations.get(storeId),
      list: () => storage.installations.list(),
      delete: (storeId) => purgeStore(storeId),
      hasRequiredScopes: (installation) => installationHasScopes(installation, config.oauth.scopes),
    },
    webhooks: webhooks.api,
    purge: purgeStore,
    pendingPurges: () => outbox.list(),
    health: () => health.report(),
    // The handler sets res.locals.store before calling next(); the type says so.
    authenticated: () => api.authenticated() as unknown as AuthenticatedHandler,
    fetch(request, options) {
      fetchShell ??= buildFetchShell();
      return fetchShell.fetch(request, options);
    },
    authenticate(request, options) {
      fetchShell ??= buildFetchShell();
      return fetchShell.authenticate(request, options);
    },
    frameAncestors: () => pageFraming,
    client: (storeId) => api.client(storeId),
    checkGrant: (storeId) => grants.check(storeId),
    sessionToken: (storeId) => api.sessionToken(storeId),
    dialect: storage.dialect,
    db: storage.db,
    storage,
    logger,
    config,
    async close() {
      // Reverse order: what was built last depends on what was built first.
      for (const close of closers.reverse()) await close();
      closers.length = 0;
    },
  };
  return kit as StoreAppKit | CustomStorageStoreAppKit;
}
