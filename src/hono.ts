/**
 * `store-app-kit/hono`: the kit mounted on Hono in two middlewares.
 *
 * ```ts
 * const hono = storeAppHono(kit);
 * const app = new Hono<StoreAppHonoEnv>();
 * app.use('*', hono.middleware());
 * app.get('/api/products', hono.authenticated(), (c) => c.json({ store: c.get('store').storeId }));
 * ```
 *
 * Or without a middleware, for routes Hono answers synchronously:
 *
 * ```ts
 * app.get('/api/products', hono.authenticated((c) => c.json({ store: c.get('store').storeId })));
 * serve({ fetch: hono.fetch(app) });
 * ```
 *
 * Hono is an optional peer dependency: only this entry names it (its types).
 */
import { internalsOf, isKit } from './compose/internals.js';
import { ConfigError } from './errors/index.js';
import {
  createHonoMount,
  type StoreAppHono,
  type StoreAppHonoOptions,
} from './shells/hono/index.js';

export type {
  FetchHandler,
  StoreAppHono,
  StoreAppHonoEnv,
  StoreAppHonoOptions,
} from './shells/hono/index.js';

/** The Hono mount of a kit built by `storeApp()` (the same kit's routes, sessions and header set). */
export function storeAppHono(kit: object, options?: StoreAppHonoOptions): StoreAppHono {
  if (!isKit(kit)) {
    // A copy ({ ...kit }) or a wrapper has the kit's methods but not what the mount is built on.
    throw new ConfigError(
      'storeAppHono(kit)',
      'is not given a kit built by storeApp(); pass the object storeApp() returned (from store-app-kit or store-app-kit/workers), not a copy or a wrapper of it.',
    );
  }
  return createHonoMount(internalsOf(kit).fetchShell(), options);
}
