/**
 * `storeApp()`'s kit object over the composition (src/compose/): the services it
 * built, the Fetch shell and, on the first call of `middleware()` or
 * `authenticated()`, the Express shell (which loads express, express-session and
 * helmet then). The kit hands out narrow accessors, never its storage or config.
 */
import { composeKit, type KitRuntime, type KitServices } from './compose/index.js';
import { kitObject } from './compose/kit-object.js';
import type {
  AuthenticatedHandler,
  CustomStorageStoreAppKit,
  StoreAppKit,
} from './compose/kit-types.js';
import type { StoreAppOptions } from './config/index.js';
import { createKitLogger } from './http/logger.js';
import { createExpressShell, type ExpressShell } from './shells/express/index.js';
import { createStorage } from './storage/index.js';

export type * from './compose/kit-types.js';

/** The Express shell over the composition (built on first use). */
function expressShellOf(s: KitServices): ExpressShell {
  return createExpressShell({
    routes: s.routes,
    logger: s.logger,
    session: s.config.session,
    sessions: s.sessions,
    headers: {
      embedded: s.config.embedded,
      options: s.config.securityHeaders,
      https: s.config.session.secure,
    },
    authenticate: s.authenticate,
    fromMemory: s.fromMemory,
    launchWatch: s.api.launchWatch,
    drain: s.drain,
  });
}

/** The kit on Node (and Bun, Deno): pino, and the built-in databases opened by `DATABASE_URL`. */
const NODE_RUNTIME: KitRuntime = {
  createLogger: createKitLogger,
  openStorage: (config, logger) =>
    createStorage({
      ...(config.storage.adapter
        ? { adapter: config.storage.adapter }
        : { databaseUrl: config.storage.databaseUrl }),
      encryptionKeys: config.storage.encryptionKeys,
      migrate: config.storage.migrate,
      pool: { max: config.storage.poolMax },
      timeoutMs: config.storage.timeoutMs,
      purgeRewrite: config.storage.purgeRewrite,
      logger: logger.child({ component: 'storage' }),
    }),
};

/**
 * Builds the kit (the public, typed entry is `storeApp()` in ./store-app.ts,
 * which imports this module on demand).
 */
export async function createKit(
  options: StoreAppOptions = {},
): Promise<StoreAppKit | CustomStorageStoreAppKit> {
  const s = await composeKit(options, NODE_RUNTIME);
  let express: ExpressShell | undefined;
  const expressNow = () => {
    express ??= expressShellOf(s);
    return express;
  };
  return kitObject(s, {
    middleware: () => expressNow().middleware(),
    // The handler sets res.locals.store before calling next(); the type says so.
    authenticated: () => expressNow().authenticated() as unknown as AuthenticatedHandler,
  }) as StoreAppKit | CustomStorageStoreAppKit;
}
