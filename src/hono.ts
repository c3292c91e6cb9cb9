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
 * Hono is an optional peer dependency: only this entry names it (its types).
 */
import { internalsOf } from './compose/internals.js';
import {
  createHonoMount,
  type StoreAppHono,
  type StoreAppHonoOptions,
} from './shells/hono/index.js';

export type { StoreAppHono, StoreAppHonoEnv, StoreAppHonoOptions } from './shells/hono/index.js';

/** The Hono mount of a kit built by `storeApp()` (the same kit's routes, sessions and header set). */
export function storeAppHono(kit: object, options?: StoreAppHonoOptions): StoreAppHono {
  return createHonoMount(internalsOf(kit).fetchShell(), options);
}
