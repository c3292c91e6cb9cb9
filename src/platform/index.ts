/**
 * The local Merchant Store Platform (`store-app-kit/platform`): authorization
 * server, resource API, admin, developer dashboard and webhooks on one origin,
 * plus programmatic control for tests.
 *
 * @example
 * const platform = await startPlatform();
 * const app = platform.registerApp({ name: 'My app', redirectUri: 'http://127.0.0.1:3000/auth/callback',
 *   webhookUrl: 'http://127.0.0.1:3000/webhooks', scopes: ['read_products'] });
 * const { storeId } = platform.createStore({ seed: true });
 * const callbackUrl = platform.approveInstall({ authorizeUrl, storeId });
 * await platform.close();
 */

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import pino, { type Logger } from 'pino';
import { openApiDocument } from '../openapi/index.js';
import { createAdminRouter } from './admin/index.js';
import { createResourceRouter } from './api/index.js';
import {
  type AppCredentials,
  type AppRegistry,
  createAppRegistry,
  type RegisterAppInput,
} from './apps.js';
import {
  type AuthorizeRequest,
  createPendingRequests,
  queryMap,
  validateAuthorizeRequest,
  withQuery,
} from './auth/authorize.js';
import { createApiGuard } from './auth/guard.js';
import { createAuthRouter, type TokenStats } from './auth/router.js';
import { createTokenService, type TokenService } from './auth/tokens.js';
import { createClock } from './clock.js';
import { openPlatformDb } from './db/open.js';
import {
  AuthorizeRequestError,
  PLATFORM_INVALID_APP,
  PLATFORM_NOT_INSTALLED,
  PLATFORM_UNKNOWN_APP,
  PLATFORM_UNKNOWN_STORE,
  PlatformError,
} from './errors.js';
import { createFaultInjector, type FaultCounts, type FaultOptions } from './faults/index.js';
import { PLATFORM_CSS } from './html.js';
import { type PlatformOptions, resolvePlatformOptions } from './options.js';
import { createRateLimiter } from './ratelimit/index.js';
import { allowedHostNames, allowedHostsOnly, isLoopbackHost } from './security.js';
import { createStoreDirectory, type StoreDirectory } from './stores.js';
import {
  createWebhookDispatcher,
  type Delivery,
  type WaitForDeliveriesOptions,
} from './webhooks/index.js';

export type { AppCredentials, RegisterAppInput } from './apps.js';
export {
  AuthorizeRequestError,
  PLATFORM_APP_EXISTS,
  PLATFORM_INVALID_APP,
  PLATFORM_INVALID_AUTHORIZE,
  PLATFORM_INVALID_OPTIONS,
  PLATFORM_NOT_INSTALLED,
  PLATFORM_TIMEOUT,
  PLATFORM_UNKNOWN_APP,
  PLATFORM_UNKNOWN_STORE,
  PlatformError,
  type PlatformErrorCode,
} from './errors.js';
export type { FaultCounts, FaultOptions, FaultRoute, FaultRule } from './faults/index.js';
export type { PlatformOptions, RateLimit, Tier } from './options.js';
export { TIER_LIMITS } from './options.js';
export { PlatformOptionsError } from './schema.js';
export { SCOPES, type Scope } from './scopes.js';
export type { Delivery, DeliveryAttempt, WaitForDeliveriesOptions } from './webhooks/index.js';
export { signWebhook } from './webhooks/sign.js';

export interface InstallTarget {
  /** The authorize URL the app sent the merchant to (GET /oauth/authorize?…). */
  authorizeUrl: string;
  storeId: string;
  /**
   * The merchant grants only these of the requested scopes (a narrower grant,
   * as RFC 6749 §3.3 allows); each must be one the app asked for.
   * @default every requested scope
   */
  grantScopes?: readonly string[];
}

export interface UninstallResult {
  /** Tokens that were active and are now revoked. */
  revokedTokens: number;
  /** Id of the `app.uninstalled` delivery (also its `webhook-id`). */
  deliveryId: string;
}

/** One store's token pair from `installMany`, shaped like the token endpoint's answer. */
export interface InstalledTokens {
  storeId: string;
  access_token: string;
  refresh_token: string;
  /** Seconds. */
  expires_in: number;
  /** Comma-separated, as the token endpoint sends it. */
  scope: string;
}

export interface Platform {
  /** The origin, e.g. `http://127.0.0.1:4400`. Same as `authUrl`. */
  readonly url: string;
  readonly authUrl: string;
  /** `{url}/api/v1` */
  readonly apiUrl: string;
  readonly adminUrl: string;
  readonly dashboardUrl: string;
  /** The Express app (for supertest). */
  readonly app: Express;
  /** Registers an app as the developer dashboard does; throws PlatformError `PLATFORM_INVALID_APP`. */
  registerApp(input: RegisterAppInput): AppCredentials;
  createStore(input?: { name?: string; currency?: string; seed?: boolean | number }): {
    storeId: string;
    name: string;
  };
  /** Every store, oldest first (a persisted `db` keeps them across restarts). */
  listStores(): Array<{ storeId: string; name: string }>;
  /**
   * The merchant approves the install without HTML: validates `authorizeUrl`
   * exactly as GET /oauth/authorize does and returns the callback URL
   * (`redirect_uri?code&state&store_id`). Throws AuthorizeRequestError.
   */
  approveInstall(target: InstallTarget): string;
  /** The merchant presses Deny: returns `redirect_uri?error=access_denied&state`. */
  denyInstall(target: InstallTarget): string;
  /**
   * Installs the app on many existing stores at once, as if each had gone
   * through consent and the code exchange (no code, no HTTP, one
   * transaction): the token pairs are real, so refreshes and API calls with
   * them go through the real endpoints. For seeding benches and tests with
   * thousands of stores; `scopes` defaults to every scope the app registered.
   * Throws PlatformError `PLATFORM_UNKNOWN_APP` / `PLATFORM_UNKNOWN_STORE` /
   * `PLATFORM_INVALID_APP` (a scope the app did not register).
   */
  installMany(input: {
    clientId: string;
    storeIds: readonly string[];
    scopes?: readonly string[];
  }): InstalledTokens[];
  /** Where the admin's Install button sends the browser: `{appUrl}/auth?store_id=…`. */
  installUrl(input: { clientId: string; storeId: string }): string;
  /** Revokes every token of the app for the store, then delivers `app.uninstalled` in the background. */
  uninstall(input: { storeId: string; clientId: string }): UninstallResult;
  /** Revokes the app's tokens for the store without uninstalling (no webhook). */
  revokeTokens(input: { storeId: string; clientId: string }): number;
  /** Moves the platform clock (token, code and rate-limit windows) forward. */
  advanceClock(seconds: number): void;
  /** The webhook delivery log, oldest first. */
  deliveries(filter?: { clientId?: string }): Delivery[];
  /** Resolves once `count` deliveries exist and are settled; rejects with PLATFORM_TIMEOUT. */
  waitForDeliveries(options?: WaitForDeliveriesOptions): Promise<Delivery[]>;
  /** Counts of token-endpoint calls per grant type (for "exactly one refresh" assertions). */
  stats(): TokenStats;
  /** Counts of faults injected since start (see `faults` in the options). */
  faultStats(): FaultCounts;
  /**
   * Replaces the injected faults at run time (`undefined` or `{}` heals the
   * platform) and reseeds their generator. Throws `PLATFORM_INVALID_OPTIONS`.
   */
  setFaults(faults: FaultOptions | undefined): void;
  close(): Promise<void>;
}

function makeLogger(option: Logger | boolean): Logger | undefined {
  if (option === false) return undefined;
  if (option === true) return pino({ level: 'info', name: 'store-platform' }, pino.destination(2));
  return option;
}

export async function startPlatform(options: PlatformOptions = {}): Promise<Platform> {
  const opts = resolvePlatformOptions(options);
  const logger = makeLogger(opts.logger);
  const database = openPlatformDb(opts.db);
  const { db } = database;
  const clock = createClock();
  const apps: AppRegistry = createAppRegistry(db);
  const tokens: TokenService = createTokenService({ db, clock, apps, options: opts });
  const stores: StoreDirectory = createStoreDirectory({ db, clock });
  const limiter = createRateLimiter(clock, opts.rateLimitWindowSeconds);
  const pending = createPendingRequests();
  const stats: TokenStats = { tokenRequests: { authorization_code: 0, refresh_token: 0 } };
  const faults = createFaultInjector(opts.faults);
  const webhooks = createWebhookDispatcher({
    copies: faults.webhookCopies,
    db,
    apps,
    schedule: opts.webhookRetrySchedule,
    timeoutMs: opts.webhookTimeoutMs,
    logger,
    nowSeconds: () => clock.nowSeconds(),
  });
  let origin = '';
  /** Filled once the server is bound (the bound address is one of the names). */
  let hostNames: ReadonlySet<string> = new Set();

  function approve(request: AuthorizeRequest, storeId: string): string {
    const code = tokens.createCode({
      appId: request.app.appId,
      storeId,
      redirectUri: request.redirectUri,
      scopes: request.scopes,
      codeChallenge: request.codeChallenge,
    });
    return withQuery(request.redirectUri, { code, state: request.state, store_id: storeId });
  }

  function appOf(clientId: string) {
    const app = apps.byClientId(clientId);
    if (!app)
      throw new PlatformError(
        PLATFORM_UNKNOWN_APP,
        `No app is registered with client_id ${clientId}.`,
      );
    return app;
  }

  function requireStore(storeId: string): void {
    if (!stores.exists(storeId)) {
      throw new PlatformError(
        PLATFORM_UNKNOWN_STORE,
        `No store with id ${String(storeId).slice(0, 64)}.`,
      );
    }
  }

  function uninstall({
    storeId,
    clientId,
  }: {
    storeId: string;
    clientId: string;
  }): UninstallResult {
    const app = appOf(clientId);
    requireStore(storeId);
    if (!tokens.isInstalled(app.appId, storeId)) {
      throw new PlatformError(
        PLATFORM_NOT_INSTALLED,
        `${app.name} is not installed in store ${storeId}.`,
      );
    }
    // Revocation first and synchronously: no request may succeed once uninstall returns.
    const revokedTokens = tokens.revokeAppStore(app.appId, storeId);
    tokens.markUninstalled(app.appId, storeId);
    const at = clock.now().toISOString();
    const deliveryId = webhooks.enqueue({
      app,
      storeId,
      topic: 'app.uninstalled',
      payload: {
        type: 'app.uninstalled',
        timestamp: at,
        data: { store_id: storeId, app_id: app.appId, client_id: app.clientId, uninstalled_at: at },
      },
    });
    logger?.info({ clientId, storeId, revokedTokens }, 'app uninstalled');
    return { revokedTokens, deliveryId };
  }

  function checkedRequest(target: InstallTarget): AuthorizeRequest {
    let url: URL;
    try {
      url = new URL(target.authorizeUrl);
    } catch {
      throw new AuthorizeRequestError('invalid_request', 'authorizeUrl is not an absolute URL.');
    }
    const result = validateAuthorizeRequest(queryMap(url.searchParams), {
      apps,
      storeExists: stores.exists,
    });
    if (!result.ok) {
      throw new AuthorizeRequestError(
        result.error,
        `The authorize request is invalid (${result.error}): ${result.description}`,
        result.kind === 'redirect' ? result.redirectUrl : undefined,
      );
    }
    requireStore(target.storeId);
    if (result.request.storeId !== undefined && result.request.storeId !== target.storeId) {
      throw new AuthorizeRequestError(
        'invalid_request',
        'storeId differs from the store_id of the authorize URL.',
      );
    }
    return result.request;
  }

  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  // First of all: no route, not even a fault or a log line, for a foreign Host.
  app.use(allowedHostsOnly(() => hostNames));
  if (logger) {
    const log = logger;
    app.use(function requestLog(req: Request, res: Response, next: NextFunction) {
      const started = performance.now();
      res.once('finish', () => {
        // Path only: queries and Location headers carry codes and state.
        log.info(
          {
            method: req.method,
            path: req.path,
            status: res.statusCode,
            ms: Math.round(performance.now() - started),
          },
          'request',
        );
      });
      next();
    });
  }
  // Every answer's Date is the platform's clock (moved by advanceClock), as a
  // real server's Date is its own clock: apps read install times from it, and
  // X-RateLimit-Reset is read against it instead of against their own clock.
  app.use(function platformDate(_req: Request, res: Response, next: NextFunction) {
    res.setHeader('Date', clock.now().toUTCString());
    next();
  });
  // In front of every route: handlers never know about faults.
  app.use(faults.middleware);
  app.get('/assets/platform.css', function css(_req, res) {
    res
      .set({ 'Content-Type': 'text/css; charset=utf-8', 'Cache-Control': 'public, max-age=300' })
      .send(PLATFORM_CSS);
  });
  app.use(
    createAuthRouter({ apps, tokens, stores, pending, stats, origin: () => origin, approve }),
  );
  // The API description is public (no token), as a real platform's would be.
  let openApi: string | undefined;
  app.get('/api/v1/openapi.json', function openApiJson(_req, res) {
    openApi ??= JSON.stringify(openApiDocument({ authUrl: origin }));
    res.set('Cache-Control', 'public, max-age=300').type('application/json').send(openApi);
  });
  app.use(
    '/api/v1',
    createApiGuard({ tokens, apps, limiter, rateLimit: opts.rateLimit }),
    createResourceRouter({ db, clock }),
  );
  app.use(
    createAdminRouter({
      apps,
      tokens,
      stores,
      webhooks,
      origin: () => origin,
      registerApp: (input) => apps.register(input),
      uninstall,
    }),
  );
  app.get('/', function home(_req, res) {
    res.redirect(302, '/admin');
  });
  app.use(function notFound(_req: Request, res: Response) {
    res.status(404).json({ error: 'Not found', code: 'NOT_FOUND', details: [] });
  });
  app.use(function serverError(err: unknown, _req: Request, res: Response, _next: NextFunction) {
    const status = (err as { status?: number }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      res.status(status).json({ error: 'Bad request', code: 'BAD_REQUEST', details: [] });
      return;
    }
    logger?.error({ err }, 'platform error');
    if (!res.headersSent)
      res.status(500).json({ error: 'Internal error', code: 'INTERNAL_ERROR', details: [] });
  });

  const server: Server = createServer(app);
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  // A wildcard bind is not an address a browser can use: print loopback instead.
  const bound =
    address.address === '0.0.0.0'
      ? '127.0.0.1'
      : address.address === '::'
        ? '::1'
        : address.address;
  hostNames = allowedHostNames(opts.host, address.address, opts.allowedHosts);
  if (!isLoopbackHost(opts.host) || !isLoopbackHost(bound)) {
    // Anyone on the network can now reach client secrets and every store: say so loudly.
    const warning = `store-platform: WARNING: listening on ${address.address}, which is not a loopback address. Anyone who can reach it can read client secrets on the dashboard and act on every store. Bind to 127.0.0.1 unless you need this.`;
    if (logger) logger.warn({ host: opts.host, address: address.address }, warning);
    else process.stderr.write(`${warning}\n`);
  }
  const hostForUrl = bound.includes(':') ? `[${bound}]` : bound;
  origin = `http://${opts.host === 'localhost' ? 'localhost' : hostForUrl}:${address.port}`;
  logger?.info({ url: origin }, 'platform listening');

  let closing: Promise<void> | undefined;

  return {
    url: origin,
    authUrl: origin,
    apiUrl: `${origin}/api/v1`,
    adminUrl: `${origin}/admin`,
    dashboardUrl: `${origin}/dashboard`,
    app,
    registerApp(input) {
      const registered = apps.register(input);
      return {
        appId: registered.appId,
        clientId: registered.clientId,
        clientSecret: registered.clientSecret,
        webhookSecret: registered.webhookSecret,
      };
    },
    createStore: (input = {}) => stores.create(input),
    listStores: () => stores.list().map((s) => ({ storeId: s.id, name: s.name })),
    approveInstall(target) {
      const request = checkedRequest(target);
      if (target.grantScopes === undefined) return approve(request, target.storeId);
      const granted = [...new Set(target.grantScopes)];
      if (granted.length === 0 || granted.some((s) => !request.scopes.includes(s))) {
        throw new AuthorizeRequestError(
          'invalid_scope',
          'grantScopes must be a non-empty subset of the scopes the app requested.',
        );
      }
      return approve({ ...request, scopes: granted }, target.storeId);
    },
    denyInstall(target) {
      const request = checkedRequest(target);
      return withQuery(request.redirectUri, {
        error: 'access_denied',
        error_description: 'The merchant denied the request.',
        state: request.state,
      });
    },
    installMany({ clientId, storeIds, scopes }) {
      const registered = appOf(clientId);
      const granted = scopes === undefined ? [...registered.scopes] : [...new Set(scopes)];
      if (granted.length === 0 || granted.some((s) => !registered.scopes.includes(s as never))) {
        throw new PlatformError(
          PLATFORM_INVALID_APP,
          'installMany: scopes must be a non-empty subset of the scopes the app registered.',
        );
      }
      for (const storeId of storeIds) requireStore(storeId);
      return tokens
        .issueForInstalls({ appId: registered.appId, storeIds, scopes: granted })
        .map((t) => ({
          storeId: t.storeId,
          access_token: t.accessToken,
          refresh_token: t.refreshToken,
          expires_in: t.expiresIn,
          scope: t.scopes.join(','),
        }));
    },
    installUrl({ clientId, storeId }) {
      const registered = appOf(clientId);
      return withQuery(`${registered.appUrl.replace(/\/+$/, '')}/auth`, { store_id: storeId });
    },
    uninstall,
    revokeTokens({ storeId, clientId }) {
      return tokens.revokeAppStore(appOf(clientId).appId, storeId);
    },
    advanceClock(seconds) {
      if (!Number.isFinite(seconds))
        throw new TypeError('advanceClock: seconds must be a finite number');
      clock.advance(seconds);
    },
    deliveries: (filter) => webhooks.list(filter),
    waitForDeliveries: (o) => webhooks.waitFor(o),
    stats: () => ({ tokenRequests: { ...stats.tokenRequests } }),
    faultStats: () => faults.counts(),
    setFaults: (next) => faults.set(next),
    close() {
      closing ??= (async () => {
        await webhooks.close();
        faults.close();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        database.close();
      })();
      return closing;
    },
  };
}
