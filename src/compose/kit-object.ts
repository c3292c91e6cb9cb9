/**
 * The kit object over the composition, the same on every runtime: narrow
 * accessors (never the storage or the config), the Fetch shell built on first
 * use, and the Express entry points the caller supplies (Node's `src/kit.ts`;
 * a Worker's kit has none). Imports no Express and no Node module.
 */

import { NO_ADDRESS_FIX } from '../install/context.js';
import { installationHasScopes } from '../oauth/scopes.js';
import { createFetchShell, type FetchShell } from '../shells/fetch/index.js';
import {
  onSignals,
  type ShutdownCallOptions,
  type ShutdownOnSignalsOptions,
  type ShutdownResult,
  shutdownOptionsOf,
  shutdownSequence,
  watchServer,
} from '../shutdown/index.js';
import type { AnyDrizzle, Storage } from '../storage/types.js';
import type { KitServices } from './index.js';
import { registerInternals } from './internals.js';
import type { StoreAppKitBase } from './kit-types.js';

/** The Fetch shell over the composition (built on first use). */
function fetchShellOf(s: KitServices): FetchShell {
  return createFetchShell({
    routes: s.routes,
    appPath: s.appPath,
    session: s.config.session,
    sessionStore: s.sessions,
    authenticate: (req) => s.authenticate(req),
    fromMemory: s.fromMemory,
    headerSet: s.headerSet,
    launchParam: s.api.launch?.param,
    noAddressWarning: `kit.fetch got a request without remoteAddress: every such caller shares one install-callback budget. ${NO_ADDRESS_FIX}`,
    logger: s.logger,
    drain: s.drain,
  });
}

/** `kit.shutdown()` and `kit.shutdownOnSignals()` over the composition: one shutdown per kit. */
function shutdownOf(s: KitServices) {
  let running: Promise<ShutdownResult> | undefined;
  const shutdown = (o: ShutdownCallOptions = {}): Promise<ShutdownResult> => {
    if (running) return running;
    let options: ReturnType<typeof shutdownOptionsOf>;
    try {
      // Validated before anything starts: a wrong deadline rejects here, not mid-shutdown.
      options = shutdownOptionsOf(s.config.shutdown, o);
    } catch (err) {
      return Promise.reject(err);
    }
    running = shutdownSequence({
      drain: s.drain,
      closeKit: () => s.close(),
      logger: s.logger,
      options,
      server: o.server,
      stop: o.stop,
    });
    return running;
  };
  const shutdownOnSignals = (o: ShutdownOnSignalsOptions = {}): (() => void) => {
    const options = shutdownOptionsOf(s.config.shutdown, o);
    if (o.server) watchServer(o.server, s.drain);
    return onSignals(() => shutdown(o), {
      signals: o.signals ?? ['SIGTERM', 'SIGINT'],
      exit: o.exit ?? true,
      deadlineMs: options.deadlineMs,
    });
  };
  return { shutdown, shutdownOnSignals };
}

/** The kit object over `s`; `express` supplies `middleware()` and `authenticated()`. */
export function kitObject(
  s: KitServices,
  express: Pick<StoreAppKitBase, 'middleware' | 'authenticated'>,
): StoreAppKitBase & {
  dialect: Storage['dialect'];
  db: AnyDrizzle;
  transaction<T>(fn: (tx: AnyDrizzle) => Promise<T>): Promise<T>;
} {
  let fetchShell: FetchShell | undefined;
  const fetchShellNow = () => {
    fetchShell ??= fetchShellOf(s);
    return fetchShell;
  };
  const kit = {
    middleware: express.middleware,
    authenticated: express.authenticated,
    installations: {
      get: (storeId: string) => s.storage.installations.get(storeId),
      list: () => s.storage.installations.list(),
      delete: (storeId: string) => s.purge(storeId),
      hasRequiredScopes: (
        installation: Parameters<StoreAppKitBase['installations']['hasRequiredScopes']>[0],
      ) => installationHasScopes(installation, s.config.oauth.scopes),
    },
    webhooks: s.webhooks.api,
    purge: s.purge,
    pendingPurges: () => s.outbox.list(),
    health: () => s.health.report(),
    fetch: (request: Request, o?: Parameters<StoreAppKitBase['fetch']>[1]) =>
      fetchShellNow().fetch(request, o),
    authenticate: (request: Request, o?: Parameters<StoreAppKitBase['authenticate']>[1]) =>
      fetchShellNow().authenticate(request, o),
    secureResponse: (request: Request, response: Response) =>
      fetchShellNow().secureResponse(request, response),
    frameAncestors: () => s.pageFraming,
    client: (storeId: string) => s.api.client(storeId),
    checkGrant: (storeId: string) => s.grants.check(storeId),
    sessionToken: (storeId: string) => s.api.sessionToken(storeId),
    dialect: s.storage.dialect,
    db: s.storage.db,
    transaction: <T>(fn: (tx: AnyDrizzle) => Promise<T>) => s.storage.transaction(fn),
    logger: s.logger,
    ...shutdownOf(s),
    track: ((handler) => fetchShellNow().track(handler)) as StoreAppKitBase['track'],
    close: () => s.close(),
  };
  registerInternals(kit, { storage: s.storage, config: s.config, fetchShell: fetchShellNow });
  return kit;
}
