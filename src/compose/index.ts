/**
 * The composition: one function builds the kit's services from `storeApp()` options,
 * without a framework: storage, the token and client runtime, session tokens,
 * `authenticate`, the purge lifecycle (its forget and confirm side effects), the
 * outbox, webhook processing, health, install, the kit's route table, the session
 * store and the header set. The shells (src/shells/express, src/shells/fetch) only
 * adapt what it built; `src/kit.ts` turns it into the kit object.
 *
 * Each section builds one module from the resolved config and hands it what it
 * needs; logic lives in the modules.
 */

import type { Logger } from 'pino';
import {
  type AuthDecision,
  type AuthenticatedStore,
  createAuthenticate,
  createMemoryAuthenticate,
} from '../authenticated/index.js';
import { type ApiRuntime, createApiRuntime } from '../authenticated/runtime.js';
import { createPlatformClock, type PlatformClock } from '../client/platform-clock.js';
import { type ResolvedConfig, resolveConfig, type StoreAppOptions } from '../config/index.js';
import { createDrain, type Drain } from '../core/drain.js';
import type { CoreRequest } from '../core/http.js';
import type { KitRoutes } from '../core/routes.js';
import {
  framingWarning,
  type HeaderSet,
  kitHeaderSet,
  pageFrameAncestors,
} from '../core/security-headers.js';
import {
  fromCallbackStore,
  type KitSessionStore,
  memoryStoreWarning,
} from '../core/session-store.js';
import { randomUUID } from '../crypto/primitives.js';
import { createGrantChecker, type GrantChecker } from '../grant/index.js';
import { createHealthCheck, HEALTH_PROBE_NAMESPACE, type HealthCheck } from '../health/index.js';
import { healthDetailWarning } from '../health/options.js';
import { createInstallContext, type InstallContext } from '../install/context.js';
import { ancestorsDirective } from '../install/pages.js';
import { withDiscoveredEndpoints } from '../oauth/discovery.js';
import { createPurge, type PurgeFunction } from '../purge/index.js';
import { createPurgeOutbox, type PurgeOutbox } from '../purge/outbox.js';
import type { Storage } from '../storage/types.js';
import { createWebhooks, type KitWebhooks } from '../webhooks/index.js';
import { kitRoutes } from './routes.js';

/** What the composition built: everything the kit object and the shells use. */
export interface KitServices {
  config: ResolvedConfig;
  logger: Logger;
  storage: Storage;
  api: ApiRuntime;
  /** Purges a store and forgets its in-memory state (installation, client, gate). */
  purge: PurgeFunction;
  grants: GrantChecker;
  outbox: PurgeOutbox;
  webhooks: KitWebhooks;
  health: HealthCheck;
  install: InstallContext;
  /** The core's `authenticate`, built once for both shells. */
  authenticate(req: CoreRequest, frameAncestors?: string): Promise<AuthDecision>;
  /** Its in-memory form (the Express shell's synchronous fast path). */
  fromMemory(authorization: string | undefined): AuthenticatedStore | undefined;
  /** The kit's route table, mounted by both shells. */
  routes: KitRoutes;
  /** Where browser sessions live: the app's `session.store`, else the database. */
  sessions: KitSessionStore;
  /** The kit's security-header set; undefined when `securityHeaders.enabled` is false. */
  headerSet: HeaderSet | undefined;
  /** The `frame-ancestors` directive of the kit's pages (undefined: the app sends its own). */
  pageFraming: string | undefined;
  /** The app URL's path, without a trailing slash (`''` at the root). */
  appPath: string;
  /**
   * The drain state: shutting down or not, requests and acknowledged work in
   * flight (both shells feed it; health reads it).
   */
  drain: Drain;
  /**
   * Starts draining, then stops background work, stores refreshed tokens still
   * waiting and closes the database (reverse order of building). The shutdown
   * (src/shutdown/) calls it once accepted requests finished.
   */
  close(): Promise<void>;
}

/**
 * What differs between the runtimes the composition runs on, handed in by
 * the entry: Node's (`src/kit.ts`: pino, the built-in databases) or a
 * Worker's (`src/workers/`: a console logger, the app's adapter only). The
 * composition itself imports neither, so a Worker's bundle holds no Node module.
 */
export interface KitRuntime {
  /** Where settings not given as options are read (`process.env` on Node, the Worker's `env`). */
  env?: Readonly<Record<string, string | undefined>>;
  /** The kit's root logger. */
  createLogger(options: ResolvedConfig['logger']): Logger;
  /** Opens the kit's storage (migrations applied unless the app opts out). */
  openStorage(config: ResolvedConfig, logger: Logger): Promise<Storage>;
  /**
   * `'timers'` (a long-lived process): the refresh sweep and the purge outbox run
   * on timers from start. `'on-demand'` (Workers): nothing runs between requests;
   * the app drives both (`scheduled()`), and work begun by a request is handed
   * to `waitUntil`.
   * @default 'timers'
   */
  background?: 'timers' | 'on-demand';
}

/** Resolves and validates the options (one pass), with the platform's discovered endpoints. */
async function configure(options: StoreAppOptions, runtime: KitRuntime): Promise<ResolvedConfig> {
  const resolved = runtime.env ? resolveConfig(options, runtime.env) : resolveConfig(options);
  return { ...resolved, oauth: await withDiscoveredEndpoints(resolved.oauth, options.oauth) };
}

/** The start-up warnings for settings that work but leave something open. */
function warnAtStart(config: ResolvedConfig, logger: Logger): void {
  const { securityHeaders } = config;
  const framing = framingWarning(securityHeaders.enabled, securityHeaders.framing);
  if (framing) logger.warn({ setting: 'securityHeaders' }, framing);
  const memoryStore = memoryStoreWarning(config.session.store, config.environment);
  if (memoryStore) logger.warn({ setting: 'session.store' }, memoryStore);
  const healthDetail = healthDetailWarning(config.health);
  if (healthDetail) logger.warn({ setting: 'health.detail' }, healthDetail);
}

/**
 * The purge lifecycle: the purge itself (whoever calls it, the store's in-memory
 * state goes too), the outbox that works pending uninstall purges until done, and
 * the grant checker an install confirms.
 */
function purgeLifecycle(
  config: ResolvedConfig,
  logger: Logger,
  storage: Storage,
  api: ApiRuntime,
): { purge: PurgeFunction; outbox: PurgeOutbox; grants: GrantChecker } {
  const purge = createPurge({
    storage,
    options: config.purge,
    logger: logger.child({ component: 'purge' }),
  });
  const purgeStore: PurgeFunction = async (storeId, o) => {
    try {
      return await purge(storeId, o);
    } finally {
      api.forget(storeId);
    }
  };
  const outbox = createPurgeOutbox({
    pendingPurges: storage.pendingPurges,
    purge: purgeStore,
    now: () => storage.now(),
    logger: logger.child({ component: 'purge' }),
    ...(config.purge.horizonMs === undefined ? {} : { sweepDelayMs: config.purge.horizonMs }),
    // Purge transactions take at most half the pool: a burst's deliveries need the rest to be recorded.
    concurrency: Math.min(4, Math.max(1, Math.floor(config.storage.poolMax / 2))),
  });
  const grants = createGrantChecker({
    client: (storeId) => api.client(storeId),
    storedScopes: async (storeId) => (await storage.installations.get(storeId))?.scopes,
    requiredScopes: config.oauth.scopes,
    sessionCheckUrl: config.client.sessionCheckUrl ?? config.oauth.sessionCheckUrl,
    logger: logger.child({ component: 'grant' }),
  });
  return { purge: purgeStore, outbox, grants };
}

/** Webhook processing: registry, dedupe, handlers, the uninstall purge through the outbox. */
function webhookProcessing(
  config: ResolvedConfig,
  logger: Logger,
  storage: Storage,
  lifecycle: { purge: PurgeFunction; outbox: PurgeOutbox },
  platformClock: PlatformClock,
  drain: Drain,
): KitWebhooks {
  return createWebhooks({
    storage,
    // A delivery answered 202 still runs: a shutdown waits for it before storage closes.
    track: (work) => drain.track(work),
    options: config.webhooks,
    // Delivery timestamps are the platform's: compared in its clock.
    nowSeconds: () => Math.floor(platformClock.now() / 1000),
    resyncClock: () => platformClock.resync(),
    purge: lifecycle.purge,
    outbox: lifecycle.outbox,
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
}

/**
 * The health report. Each probe writes a new short-lived claim row (pruned with the
 * other expired claims): a full disk or a read-only database fails it while reads work.
 */
function healthCheck(
  config: ResolvedConfig,
  storage: Storage,
  api: ApiRuntime,
  drain: Drain,
): HealthCheck {
  const probeId = randomUUID();
  let probes = 0;
  return createHealthCheck({
    pendingPurges: storage.pendingPurges,
    lastRefreshFailure: () => api.tokens.lastRefreshFailure(),
    pendingTokenWrites: () => api.tokens.pendingWrites(),
    draining: () => drain.draining(),
    writeProbe: () =>
      storage.claimOnce(
        HEALTH_PROBE_NAMESPACE,
        `${probeId}.${++probes}`,
        new Date(Date.now() + 60_000),
      ),
    options: config.health,
  });
}

/** `authenticate` (built once for both shells) and its in-memory form. */
function authentication(config: ResolvedConfig, logger: Logger, api: ApiRuntime, framing?: string) {
  const client = (storeId: string) => api.client(storeId);
  const authenticate = createAuthenticate({
    sessionTokens: api.sessionTokens,
    tokens: api.tokens,
    client,
    scopes: config.oauth.scopes,
    narrowerScopes: config.auth.narrowerScopes,
    launch: api.launch,
    launchWatch: api.launchWatch,
    beginUrl: config.auth.beginUrl,
    reauthorizeHeader: config.authenticated.reauthorizeHeader,
    maxSessionAgeSeconds: config.session.maxAgeSeconds,
    frameAncestors: framing,
    logger: logger.child({ component: 'authenticated' }),
  });
  const fromMemory = createMemoryAuthenticate({
    sessionTokens: api.sessionTokens,
    tokens: api.tokens,
    client,
    scopes: config.oauth.scopes,
  });
  return { authenticate, fromMemory };
}

/** Builds the kit's services; a configuration or database mistake throws here, at start. */
export async function composeKit(
  options: StoreAppOptions,
  runtime: KitRuntime,
): Promise<KitServices> {
  const config = await configure(options, runtime);
  const logger = runtime.createLogger(config.logger);
  warnAtStart(config, logger);
  const closers: Array<() => Promise<void> | void> = [];
  const drain = createDrain();
  const storage = await runtime.openStorage(config, logger);
  closers.push(() => storage.close());
  const platformClock = platformClockOf(config);
  const api = createApiRuntime(config, {
    storage,
    logger: logger.child({ component: 'client' }),
    platformClock,
  });
  const timers = (runtime.background ?? 'timers') === 'timers';
  if (timers) api.start();
  closers.push(() => api.close());
  const lifecycle = purgeLifecycle(config, logger, storage, api);
  closers.push(() => lifecycle.grants.close());
  if (timers) lifecycle.outbox.start();
  closers.push(() => lifecycle.outbox.close());
  const webhooks = webhookProcessing(config, logger, storage, lifecycle, platformClock, drain);
  const health = healthCheck(config, storage, api, drain);
  const frameAncestors = pageFrameAncestors(config);
  const install = createInstallContext({
    config,
    storage,
    logger,
    // Both shells: in-memory state of the store goes, and the new grant is confirmed.
    onInstalled: (storeId) => {
      api.forget(storeId);
      lifecycle.grants.confirmInstall(storeId);
    },
    pageFrameAncestors: frameAncestors,
    platformClock,
  });
  const pageFraming = ancestorsDirective(frameAncestors);
  const auth = authentication(config, logger, api, pageFraming);
  const { store } = config.session;
  return {
    ...lifecycle,
    ...auth,
    config,
    logger,
    storage,
    api,
    webhooks,
    health,
    install,
    routes: kitRoutes({ config, install, webhooks, health, authenticate: auth.authenticate }),
    sessions: store ? fromCallbackStore(store) : storage.sessions(),
    headerSet: headerSetOf(config),
    pageFraming,
    appPath: new URL(config.appUrl).pathname.replace(/\/+$/, ''),
    drain,
    async close() {
      drain.begin();
      for (const close of closers.reverse()) await close();
      closers.length = 0;
    },
  };
}

/**
 * The platform's clock as the kit estimates it from the `Date` of its answers
 * (API calls, the token endpoint; a HEAD to the token endpoint when a
 * webhook's timestamp looks out of tolerance and no answer told it yet).
 */
function platformClockOf(config: ResolvedConfig): PlatformClock {
  return createPlatformClock({
    probe: async (signal) => {
      const res = await fetch(config.oauth.tokenUrl, { method: 'HEAD', signal });
      await res.body?.cancel();
      return res.headers;
    },
  });
}

/** The kit's header set under the app's options (undefined: the app sends its own). */
function headerSetOf(config: ResolvedConfig): HeaderSet | undefined {
  if (!config.securityHeaders.enabled) return undefined;
  return kitHeaderSet({
    embedded: config.embedded,
    framing: config.securityHeaders.framing,
    https: config.session.secure,
  });
}
